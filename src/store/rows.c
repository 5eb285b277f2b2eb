// SPDX-License-Identifier: Apache-2.0
/* Rows for reads: the jobs a read returns and every string they point to,
 * copied, freed together (rows_free). */
#include "internal.h"

#include "base/xalloc.h"

#include <string.h>

engine_job_info *rows_add(rows_builder *rb)
{
    if (rb->n == rb->cap) {
        rb->cap = rb->cap ? rb->cap * 2 : 16;
        rb->v = xrealloc(rb->v, rb->cap * sizeof(*rb->v));
    }
    engine_job_info *j = &rb->v[rb->n++];
    memset(j, 0, sizeof(*j));
    return j;
}

void rows_keep(rows_builder *rb, void *p)
{
    if (rb->nmem == rb->capmem) {
        rb->capmem = rb->capmem ? rb->capmem * 2 : 64;
        rb->mem = xrealloc(rb->mem, rb->capmem * sizeof(void *));
    }
    rb->mem[rb->nmem++] = p;
}

const char *rows_str(rows_builder *rb, const char *s)
{
    if (!s) return NULL;
    char *c = xstrdup(s);
    rows_keep(rb, c);
    return c;
}

/* The strings of a row the rows keep (columns.h: text and args; the
 * payloads are kept whole, below). */
#define KEEP_TEXT(f) o->f = rows_str(rb, in.f);
#define KEEP_ARGS(f) o->f = rows_str(rb, in.f);
#define KEEP_ID(f)
#define KEEP_NUM(f)
#define KEEP_TIME(f)
#define KEEP_BOOL(f)
#define KEEP_STATE(f)
#define KEEP_PAYLOADS(f)
#define KEEP_OPTIONS(f)
#define KEEP_LIVE(f)
#define KEEP(column, type, kind, when, hot, field, flag) KEEP_##kind(field)

int rows_add_row(store_t *s, rows_builder *rb, const store_rowacc *acc, void *row)
{
    engine_job_info in;
    store_row_mem m;
    char msg[256];
    int rc = store_row_to_job(acc, row, &in, &m, msg, sizeof msg);
    if (rc) {
        store_row_mem_free(&m);
        store_set_err(s, "%s", msg);
        return rc;
    }
    engine_job_info *o = rows_add(rb);
    *o = in;
    STORE_JOB_COLUMNS_TABLE(KEEP)
    if (m.payloads) {
        rows_keep(rb, m.payloads);
        for (uint32_t k = 0; k < in.n_payloads; k++) rows_keep(rb, (void *)m.payloads[k].data);
    }
    if (m.options) rows_keep(rb, m.options); /* the keys point into it */
    return 0;
}

void rows_free(rows_builder *rb)
{
    for (size_t i = 0; i < rb->nmem; i++) free(rb->mem[i]);
    free(rb->mem);
    free(rb->v);
    memset(rb, 0, sizeof(*rb));
}
