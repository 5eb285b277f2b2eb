// SPDX-License-Identifier: Apache-2.0
/* The store's last error, and what it says of itself (its backend, where
 * it is): every file below the front sets the message here. */
#include "internal.h"

#include <stdarg.h>

void store_set_err(store_t *s, const char *fmt, ...)
{
    pthread_mutex_lock(&s->err_lock);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof(s->err), fmt, ap);
    va_end(ap);
    pthread_mutex_unlock(&s->err_lock);
}

const char *store_errmsg(const store_t *s)
{
    return s->err;
}

const char *store_backend(const store_t *s)
{
    return s->be->name;
}

const char *store_where(const store_t *s)
{
    return s->where;
}
