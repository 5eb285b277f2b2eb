// SPDX-License-Identifier: Apache-2.0
/* A handle's last error: its message, the field it names, the answer's
 * status (tenq_errmsg, tenq_errfield, tenq_errstatus), set by every file
 * above. */
#include "internal.h"

#include <stdio.h>

const char *tenq_errmsg(const tenq_client *c)
{
    return c ? c->err : "no client handle";
}

const char *tenq_errfield(const tenq_client *c)
{
    return c && c->field[0] ? c->field : NULL;
}

int tenq_errstatus(const tenq_client *c)
{
    return c ? c->status : 0;
}

int tq_seterr(tenq_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->field[0] = 0;
    return code;
}

int tq_refuse(tenq_client *c, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    snprintf(c->field, sizeof c->field, "%s", field);
    return TENQ_EINVALID;
}

void tq_clearerr(tenq_client *c)
{
    c->err[0] = 0;
    c->field[0] = 0;
    c->status = 0;
}
