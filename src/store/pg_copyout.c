// SPDX-License-Identifier: Apache-2.0
/* The jobs of a load, read from PostgreSQL by binary COPY.
 *
 * A load reads every live job, a million rows and more.  Read as a query's
 * rows (libpq's single-row mode), each row was a result of its own: its
 * column names copied, its values as text parsed back into numbers.  That
 * was most of the loading thread's time.  COPY (query) TO STDOUT in binary
 * sends each row as its fields, length-prefixed, numbers as big-endian
 * integers: a row is read where it lies, each text copied once with its
 * NUL (docs/decisions/0020-loads-by-binary-copy.md).
 *
 * The binary format: an 11-byte signature, a 32-bit flags word and a 32-bit
 * header-extension length (then that many bytes); then each row: a 16-bit
 * field count (-1 ends the data), and each field a 32-bit length (-1:
 * NULL) and its bytes. */
#include "pg.h"
#include "schema.h"

#include "base/xalloc.h"

#include <string.h>

#define MAX_COLS 64

typedef struct binrow {
    int n;
    const unsigned char *v[MAX_COLS];
    int len[MAX_COLS];
    char *text; /* the row's texts, each with its NUL */
    size_t text_cap;
    const char *texts[MAX_COLS];
} binrow;

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static bool b_null(void *r, int c)
{
    binrow *x = r;
    return c >= x->n || x->len[c] < 0;
}

static long long b_i64(void *r, int c)
{
    binrow *x = r;
    if (b_null(r, c)) return 0;
    const unsigned char *p = x->v[c];
    switch (x->len[c]) {
    case 1: return p[0];                        /* boolean */
    case 2: return (int16_t)(p[0] << 8 | p[1]); /* smallint */
    case 4: return (int32_t)be32(p);
    case 8: return (long long)((uint64_t)be32(p) << 32 | be32(p + 4));
    default: return 0;
    }
}

static const char *b_text(void *r, int c)
{
    binrow *x = r;
    return b_null(r, c) ? NULL : x->texts[c];
}

static const store_rowacc bin_acc = {b_null, b_i64, b_text};

/* The row at p[0..n) into r (its texts copied with NULs); the row's size,
 * 0 for the end of the data, or -1 when the bytes are not a row. */
static long read_row(binrow *r, const unsigned char *p, size_t n)
{
    if (n < 2) return -1;
    int16_t fields = (int16_t)(p[0] << 8 | p[1]);
    if (fields == -1) return 0;
    if (fields < 0 || fields > MAX_COLS) return -1;
    size_t at = 2, texts = 0;
    r->n = fields;
    for (int i = 0; i < fields; i++) {
        if (at + 4 > n) return -1;
        int32_t len = (int32_t)be32(p + at);
        at += 4;
        r->len[i] = len;
        r->v[i] = p + at;
        if (len < 0) continue;
        if ((size_t)len > n - at) return -1;
        at += (size_t)len;
        texts += (size_t)len + 1;
    }
    if (texts > r->text_cap) {
        r->text_cap = texts * 2;
        r->text = xrealloc(r->text, r->text_cap);
    }
    char *t = r->text;
    for (int i = 0; i < fields; i++) {
        if (r->len[i] < 0) continue;
        memcpy(t, r->v[i], (size_t)r->len[i]);
        t[r->len[i]] = 0;
        r->texts[i] = t;
        t += r->len[i] + 1;
    }
    return (long)at;
}

static int load_row(store_t *s, engine_t *e, int64_t now, binrow *r)
{
    engine_job_info in;
    store_row_mem m;
    char msg[256];
    int rc = store_row_to_job(&bin_acc, r, &in, &m, msg, sizeof msg);
    engine_err err;
    if (rc == 0 && engine_load_job(e, now, &in, &err) != 0) {
        snprintf(msg, sizeof msg, "job %llu: %s", (unsigned long long)in.id, err.message);
        rc = TENQ_ECORRUPT;
    }
    store_row_mem_free(&m);
    if (rc) store_set_err(s, "loading: %s", msg);
    return rc;
}

int pg_copy_jobs(store_t *s, PGconn *c, engine_t *e, int64_t now, size_t *count)
{
    char *query = store_sql(STORE_SQL_LOAD_JOBS, true);
    char *sql = xmalloc(strlen(query) + 64);
    sprintf(sql, "COPY (%s) TO STDOUT (FORMAT binary)", query);
    free(query);
    PGresult *res = PQexec(c, sql);
    free(sql);
    if (PQresultStatus(res) != PGRES_COPY_OUT) {
        int rc = pg_fail(s, c, res, "loading jobs");
        PQclear(res);
        return rc;
    }
    PQclear(res);
    binrow r = {0};
    int rc = 0;
    bool header = true, ended = false;
    char *buf;
    int n;
    /* each message holds whole rows (the first one the header as well) */
    while ((n = PQgetCopyData(c, &buf, 0)) > 0) {
        const unsigned char *p = (const unsigned char *)buf;
        size_t left = (size_t)n;
        if (header) {
            static const char sig[] = "PGCOPY\n\377\r\n";
            if (left < 19 || memcmp(p, sig, 11) != 0 || 19 + be32(p + 15) > left) {
                rc = TENQ_EPROTOCOL;
            } else {
                size_t skip = 19 + be32(p + 15);
                p += skip;
                left -= skip;
            }
            header = false;
        }
        while (!rc && left > 0 && !ended) {
            long used = read_row(&r, p, left);
            if (used < 0) {
                rc = TENQ_EPROTOCOL;
            } else if (used == 0) {
                ended = true;
            } else {
                rc = load_row(s, e, now, &r);
                (*count) += rc == 0;
                p += used;
                left -= (size_t)used;
            }
        }
        PQfreemem(buf);
    }
    if (rc == TENQ_EPROTOCOL) store_set_err(s, "loading jobs: a row of the COPY is malformed");
    if (n == -2 && !rc) rc = pg_fail(s, c, NULL, "loading jobs");
    while ((res = PQgetResult(c)) != NULL) {
        if (!rc && PQresultStatus(res) != PGRES_COMMAND_OK) rc = pg_fail(s, c, res, "loading jobs");
        PQclear(res);
    }
    free(r.text);
    return rc;
}
