// SPDX-License-Identifier: Apache-2.0
/* A list of items in an answer, from a table of their fields: as objects,
 * or as columns (one list a field), which a client in a language whose
 * JSON objects are dear to make (Ruby, Python) reads in a fraction of the
 * time.  The lease (lease_json.c) and the submit (submit_json.c) answer
 * this way, so both forms follow one set of rules. */
#include "json_fields.h"

static bool has(const api_field *f, const void *item)
{
    return !f->has || f->has(item);
}

void api_json_object(jbuf *b, const void *item, const api_field *fields, size_t nfields)
{
    jb_obj(b);
    for (size_t f = 0; f < nfields; f++) {
        if (!has(&fields[f], item)) continue;
        jb_key(b, fields[f].name);
        fields[f].put(b, item);
    }
    jb_obj_end(b);
}

void api_json_items(jbuf *b, const void *items, size_t n, size_t size, const api_field *fields,
                    size_t nfields, bool columns)
{
    const char *at = items;
    if (!columns) {
        jb_key(b, "jobs");
        jb_arr(b);
        for (size_t i = 0; i < n; i++) api_json_object(b, at + i * size, fields, nfields);
        jb_arr_end(b);
        return;
    }
    /* a field some item has: its column, null for the items without it */
    jb_key(b, "columns");
    jb_obj(b);
    for (size_t f = 0; f < nfields; f++) {
        size_t any = 0;
        while (any < n && !has(&fields[f], at + any * size)) any++;
        if (any == n) continue;
        jb_key(b, fields[f].name);
        jb_arr(b);
        for (size_t i = 0; i < n; i++) {
            if (has(&fields[f], at + i * size))
                fields[f].put(b, at + i * size);
            else
                jb_null(b);
        }
        jb_arr_end(b);
    }
    jb_obj_end(b);
}
