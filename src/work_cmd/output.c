// SPDX-License-Identifier: Apache-2.0
/* A handler's stdout as the job's result: JSON when it is JSON, else a
 * string; bounded either way, because the server refuses results over its
 * limit (1 MiB by default) and a runaway handler must not take the
 * worker's memory. */
#include "base/utf8.h"
#include "work_cmd/work_cmd.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define DUMP (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))

void work_output_init(work_output *o, size_t max)
{
    memset(o, 0, sizeof(*o));
    o->max = max;
}

bool work_output_add(work_output *o, const char *data, size_t n)
{
    o->total += n;
    size_t keep = o->len < o->max ? o->max - o->len : 0;
    if (n > keep) n = keep;
    if (!n) return true;
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n) cap *= 2;
        if (cap > o->max) cap = o->max;
        char *d = realloc(o->data, cap);
        if (!d) return false;
        o->data = d;
        o->cap = cap;
    }
    memcpy(o->data + o->len, data, n);
    o->len += n;
    return true;
}

/* The output as a JSON string no longer than max once encoded. */
static char *as_string(const char *data, size_t len, size_t max, bool *cut, bool *oom)
{
    /* one newline at the end is how lines end, not part of the value */
    if (len && data[len - 1] == '\n') len--;
    char *text = tq_utf8_fix(data, len);
    if (!text) {
        *oom = true;
        return NULL;
    }
    size_t n = strlen(text);
    for (;;) {
        json_t *s = json_stringn(text, n);
        char *out = s ? json_dumps(s, DUMP) : NULL;
        json_decref(s);
        if (!out) {
            *oom = true;
            break;
        }
        size_t ol = strlen(out);
        if (ol <= max) {
            free(text);
            return out;
        }
        free(out);
        if (n == 0) break; /* a bound too small for even "" */
        /* escapes made it longer: cut by the excess, on a character boundary */
        size_t over = ol - max;
        n = n > over ? n - over : 0;
        while (n && ((unsigned char)text[n] & 0xc0) == 0x80) n--;
        *cut = true;
    }
    free(text);
    return NULL;
}

char *work_output_result(const work_output *o, bool *truncated, bool *oom)
{
    *truncated = o->total > o->len;
    *oom = false;
    if (!o->total) return NULL;
    if (!*truncated) {
        json_t *j = json_loadb(o->data, o->len, JSON_DECODE_ANY, NULL);
        if (j) {
            char *out = json_dumps(j, DUMP);
            json_decref(j);
            if (out && strlen(out) <= o->max) return out;
            free(out);
        }
    }
    bool cut = false;
    char *s = as_string(o->data, o->len, o->max, &cut, oom);
    if (cut) *truncated = true;
    return s;
}

void work_output_free(work_output *o)
{
    free(o->data);
    memset(o, 0, sizeof(*o));
}
