// SPDX-License-Identifier: Apache-2.0
/* A chunked request body (http_chunked_read) read as a connection reads it:
 * the bytes arrive in pieces, what a call does not take stays in the buffer
 * for the next.  Each input is read whole, a byte at a time, and in pieces
 * of sizes drawn from its own bytes, under the default body limit and a
 * small one.  Checked: every way gives the same verdict, the same body and
 * takes the same bytes; a call never takes more than it is given; a body
 * never passes its limit; a verdict is one the contract names. */
#include "fuzz.h"

#include "api/http.h"
#include "api/http_parse.h"

#include <string.h>

typedef struct body {
    char *p;
    size_t n;
} body;

static void append(void *ctx, const char *p, size_t n)
{
    body *b = ctx;
    b->p = realloc(b->p, b->n + n + 1);
    memcpy(b->p + b->n, p, n);
    b->n += n;
}

typedef struct verdict {
    int rc;
    size_t taken; /* bytes of the input the reader took */
    body b;
} verdict;

/* step(i): how many more bytes arrive at the i-th read (0: all the rest) */
static verdict read_in_pieces(const char *in, size_t len, size_t max_body, size_t max_trailer,
                              size_t (*step)(const char *, size_t, size_t))
{
    verdict v = {0, 0, {NULL, 0}};
    http_chunked k;
    memset(&k, 0, sizeof k);
    size_t arrived = 0;
    for (size_t i = 0; arrived < len; i++) {
        size_t more = step(in, len, i);
        if (more == 0 || more > len - arrived) more = len - arrived;
        arrived += more;
        /* the buffer holds in[taken, arrived): a copy of its own size */
        size_t have = arrived - v.taken;
        char *buf = malloc(have ? have : 1);
        memcpy(buf, in + v.taken, have);
        size_t used = (size_t)-1;
        const char *msg = NULL;
        v.rc = http_chunked_read(&k, buf, have, &used, v.b.n, max_body, max_trailer, append, &v.b,
                                 &msg);
        free(buf);
        FUZZ_CHECK(used <= have, "took %zu of %zu", used, have);
        FUZZ_CHECK(v.rc == 0 || v.rc == 1 || v.rc == 400 || v.rc == 413 || v.rc == 431, "rc %d",
                   v.rc);
        FUZZ_CHECK(v.rc < 400 || (msg && *msg), "status %d without a reason", v.rc);
        FUZZ_CHECK(v.b.n <= max_body, "a body of %zu over %zu", v.b.n, max_body);
        v.taken += used;
        if (v.rc != 0) break;
    }
    return v;
}

static size_t whole(const char *in, size_t len, size_t i)
{
    (void)in;
    (void)len;
    (void)i;
    return 0;
}

static size_t bytewise(const char *in, size_t len, size_t i)
{
    (void)in;
    (void)len;
    (void)i;
    return 1;
}

static size_t drawn(const char *in, size_t len, size_t i)
{
    return 1 + (unsigned char)in[(i * 7919) % len] % 23;
}

static void same(const verdict *a, const verdict *b, const char *how)
{
    FUZZ_CHECK(a->rc == b->rc, "%s: verdict %d, whole: %d", how, b->rc, a->rc);
    if (a->rc != 1) return; /* where an error is seen may depend on the pieces */
    FUZZ_CHECK(a->taken == b->taken, "%s: took %zu, whole: %zu", how, b->taken, a->taken);
    FUZZ_CHECK(a->b.n == b->b.n && (a->b.n == 0 || memcmp(a->b.p, b->b.p, a->b.n) == 0),
               "%s: another body", how);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data;
    if (size == 0) return 0;
    http_limits lim;
    http_limits_defaults(&lim);
    size_t limits[2][2] = {{lim.max_body_bytes, lim.max_header_bytes}, {64, 40}};
    for (int l = 0; l < 2; l++) {
        verdict a = read_in_pieces(in, size, limits[l][0], limits[l][1], whole);
        verdict b = read_in_pieces(in, size, limits[l][0], limits[l][1], bytewise);
        verdict c = read_in_pieces(in, size, limits[l][0], limits[l][1], drawn);
        same(&a, &b, "a byte at a time");
        same(&a, &c, "in pieces");
        free(a.b.p);
        free(b.b.p);
        free(c.b.p);
    }
    return 0;
}
