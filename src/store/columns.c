// SPDX-License-Identifier: Apache-2.0
/* The columns of jobs (columns.h): what the table says of each, and a row
 * read back into a job, whichever store and however it was read (a query's
 * rows, PostgreSQL's binary COPY); the payloads as a row keeps them. */
#include "columns.h"
#include "internal.h"

#include "base/xalloc.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#define ROW(column, type, kind, when, hot, field, flag)                                            \
    {#column,                                                                                      \
     type,                                                                                         \
     STORE_JK_PGTYPE(kind),                                                                        \
     STORE_JK_READ(kind),                                                                          \
     STORE_JW_UPDATED(when),                                                                       \
     STORE_JW_KEPT(when),                                                                          \
     hot,                                                                                          \
     STORE_JK_NUMBER(kind)},
const store_job_column store_job_columns[STORE_JOB_NINS] = {STORE_JOB_COLUMNS_TABLE(ROW)};
#undef ROW

/* ---- a row read back ---------------------------------------------------------------------
 * Each kind's reading of column c into the job's field (a number NULL
 * reads as 0); the payloads' text is parsed once the row is read, the
 * state's word as it comes. */
#define I64(c)          (a->is_null(row, (c)) ? 0 : a->i64(row, (c)))
#define TXT(c)          (a->is_null(row, (c)) ? NULL : a->text(row, (c)))
#define READ_ID(f, c)   j->f = (__typeof__(j->f))I64(c);
#define READ_NUM(f, c)  j->f = (__typeof__(j->f))I64(c);
#define READ_TIME(f, c) j->f = (__typeof__(j->f))I64(c);
#define READ_BOOL(f, c) j->f = I64(c) != 0;
#define READ_TEXT(f, c) j->f = TXT(c);
#define READ_ARGS(f, c)                                                                            \
    j->f = TXT(c);                                                                                 \
    j->args_len = j->f ? (uint32_t)strlen(j->f) : 0;
#define READ_PAYLOADS(f, c) pl = TXT(c);
#define READ_OPTIONS(f, c)  opts = TXT(c);
#define READ_STATE(f, c)                                                                           \
    if (read_state(j, TXT(c), err, errlen)) return TENQ_ECORRUPT;
#define READ_LIVE(f, c)
#define READ(column, type, kind, when, hot, field, flag) READ_##kind(field, STORE_JC_SEL_##column)

static int read_state(engine_job_info *j, const char *word, char *err, size_t errlen)
{
    int state = word ? engine_state_parse(word) : -1;
    if (state < 0) {
        snprintf(err, errlen, "job %llu has an unknown state \"%s\"", (unsigned long long)j->id,
                 word ? word : "(null)");
        return TENQ_ECORRUPT;
    }
    j->state = (engine_state)state;
    return 0;
}

void store_row_mem_free(store_row_mem *m)
{
    store_payloads_free(m->payloads, m->n_payloads);
    free(m->options);
    memset(m, 0, sizeof(*m));
}

int store_row_to_job(const store_rowacc *a, void *row, engine_job_info *j, store_row_mem *m,
                     char *err, size_t errlen)
{
    memset(j, 0, sizeof(*j));
    memset(m, 0, sizeof(*m));
    const char *pl = NULL, *opts = NULL;
    STORE_JOB_COLUMNS_TABLE(READ)
    if (!j->lane_seq) j->lane_seq = j->id;
    if (pl) {
        if (store_payloads_parse(pl, &m->payloads, &j->n_payloads) != 0) {
            snprintf(err, errlen, "job %llu has unreadable payloads", (unsigned long long)j->id);
            return TENQ_ECORRUPT;
        }
        m->n_payloads = j->n_payloads;
        j->payloads = m->payloads; /* never NULL, even for [] */
    }
    if (opts && store_options_parse(opts, j, &m->options) != 0) {
        snprintf(err, errlen, "job %llu has unreadable options", (unsigned long long)j->id);
        return TENQ_ECORRUPT;
    }
    if (!j->tenant || !j->queue || !j->type) {
        snprintf(err, errlen, "job %llu lacks tenant, queue or type", (unsigned long long)j->id);
        return TENQ_ECORRUPT;
    }
    return 0;
}
#undef I64
#undef TXT

/* ---- payloads as stored --------------------------------------------------------------- */

int store_payloads_parse(const char *text, engine_payload **out, uint32_t *n)
{
    *out = NULL;
    *n = 0;
    json_error_t jerr;
    json_t *arr = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!arr || !json_is_array(arr)) {
        json_decref(arr);
        return TENQ_ECORRUPT;
    }
    size_t cnt = json_array_size(arr);
    engine_payload *v = xcalloc(cnt ? cnt : 1, sizeof(*v));
    for (size_t i = 0; i < cnt; i++) {
        json_t *el = json_array_get(arr, i);
        json_t *p = json_object_get(el, "payload");
        json_t *sc = json_object_get(el, "score");
        if (!p || !json_is_number(sc)) {
            store_payloads_free(v, (uint32_t)i);
            json_decref(arr);
            return TENQ_ECORRUPT;
        }
        char *d = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        v[i].data = d;
        v[i].len = (uint32_t)strlen(d);
        v[i].score = json_number_value(sc);
    }
    json_decref(arr);
    *out = v;
    *n = (uint32_t)cnt;
    return 0;
}

void store_payloads_free(engine_payload *p, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) free((char *)p[i].data);
    free(p);
}
