// SPDX-License-Identifier: Apache-2.0
#include "tenq/errors.h"

#define ROW_(name, val, http, word, msg) {val, http, word, msg, "E" #name},
static const struct {
    int code, http;
    const char *word, *msg, *name;
} rows[] = {TENQ_ERRNO_MAP(ROW_)};
#undef ROW_

#define NROWS (sizeof(rows) / sizeof(rows[0]))

static int find(int err)
{
    for (unsigned i = 0; i < NROWS; i++)
        if (rows[i].code == err) return (int)i;
    return -1;
}

const char *tenq_err_word(int err)
{
    if (err == 0) return "ok";
    int i = find(err);
    return i < 0 ? "internal" : rows[i].word;
}

const char *tenq_err_message(int err)
{
    if (err == 0) return "ok";
    int i = find(err);
    return i < 0 ? "unknown error" : rows[i].msg;
}

int tenq_err_http_status(int err)
{
    if (err == 0) return 200;
    int i = find(err);
    return i < 0 ? 500 : rows[i].http;
}

const char *tenq_err_name(int err)
{
    if (err == 0) return "OK";
    int i = find(err);
    return i < 0 ? "EUNKNOWN" : rows[i].name;
}
