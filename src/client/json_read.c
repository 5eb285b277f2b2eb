// SPDX-License-Identifier: Apache-2.0
/* Answers read in place: members of an answer object, lists of items,
 * error objects.  Nothing is copied; a span points into the answer. */
#include "internal.h"

#include <stdio.h>

long long tq_aint(tq_span a, const char *name)
{
    tq_span v;
    return tq_obj_get(a, name, &v) ? tq_span_int(v) : 0;
}

tenq_state tq_span_state(tq_span v)
{
    char word[16];
    tq_span_str_to(v, word, sizeof word);
    return tenq_state_parse(word);
}

tenq_state tq_astate(tq_span a, const char *name)
{
    tq_span v;
    return tq_obj_get(a, name, &v) ? tq_span_state(v) : TENQ_STATE_UNKNOWN;
}

bool tq_atrue(tq_span a, const char *name)
{
    tq_span v;
    return tq_obj_get(a, name, &v) && tq_span_true(v);
}

int tq_walk_list(tq_iter *top, const char *name, tq_each_fn each, void *ctx, size_t *count)
{
    tq_span k;
    tq_iter list;
    bool listed = false;
    int r;
    *count = 0;
    while ((r = tq_obj_key(top, &k)) > 0) {
        if (!tq_key_is(k, name)) { /* passed over, and so checked */
            if (tq_iter_value(top, &k) < 0) return TENQ_EPROTOCOL;
            continue;
        }
        if (listed || !tq_iter_enter(top, &list, '[')) return TENQ_EPROTOCOL; /* one list */
        listed = true;
        while ((r = tq_arr_step(&list)) > 0)
            if (each(&list, (*count)++, ctx) != 0) return TENQ_EPROTOCOL;
        if (r < 0) return TENQ_EPROTOCOL;
        tq_iter_leave(top, &list);
    }
    return r == 0 && listed ? 0 : TENQ_EPROTOCOL;
}

/* The item object at `at`: its members by the names in `names` (the last
 * of duplicates) into v, and whether it holds an error object (*e). */
int tq_item_read(tq_iter *at, const char *const *names, size_t n, tq_span *v, tq_span *e)
{
    tq_iter it;
    tq_span k, x;
    int r;
    *e = (tq_span){0};
    for (size_t i = 0; i < n; i++) v[i] = (tq_span){0};
    if (!tq_iter_enter(at, &it, '{')) return -1;
    while ((r = tq_obj_next(&it, &k, &x)) > 0) {
        if (tq_key_is(k, "error")) {
            *e = x;
            continue;
        }
        for (size_t i = 0; i < n; i++)
            if (tq_key_is(k, names[i])) v[i] = x;
    }
    if (r < 0) return -1;
    tq_iter_leave(at, &it);
    return 0;
}

int tq_error_read(tq_span e, int status, char *message, size_t mlen, char *field, size_t flen)
{
    char word[64];
    tq_obj_str_to(e, "code", word, sizeof word);
    tq_obj_str_to(e, "message", message, mlen);
    tq_obj_str_to(e, "field", field, flen);
    return tq_err_from_answer(word[0] ? word : NULL, status);
}

void tq_item_error(tq_span e, int *err, char *message, size_t mlen, char *field, size_t flen)
{
    *err = tq_error_read(e, 0, message, mlen, field, flen);
    if (*err == TENQ_EPROTOCOL) *err = TENQ_EINVALID; /* an item error without a known word */
    if (!message[0]) snprintf(message, mlen, "%s", tenq_err_message(*err));
}
