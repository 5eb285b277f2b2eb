// SPDX-License-Identifier: Apache-2.0
/* A list of items in an answer from a table of their fields (json_fields.c):
 * as objects, or as columns (one list a field). */
#ifndef TENQ_API_JSON_FIELDS_H
#define TENQ_API_JSON_FIELDS_H

#include "jbuf.h"

#include <stdbool.h>
#include <stddef.h>

/* An answer's field of an item: whether the item has it (NULL: every item
 * has it), and its value written. */
typedef struct api_field {
    const char *name;
    bool (*has)(const void *item);
    void (*put)(jbuf *b, const void *item);
} api_field;
/* One item as an object of the fields it has. */
void api_json_object(jbuf *b, const void *item, const api_field *fields, size_t nfields);
/* n items, each `size` bytes after the last, as the member "jobs" (a list
 * of objects) or, columns, "columns": a list per field some item has, null
 * for the items without it. */
void api_json_items(jbuf *b, const void *items, size_t n, size_t size, const api_field *fields,
                    size_t nfields, bool columns);

#endif
