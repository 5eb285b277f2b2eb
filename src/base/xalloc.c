// SPDX-License-Identifier: Apache-2.0
#include "xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void xalloc_die(void)
{
    fputs("tenq: out of memory\n", stderr);
    abort();
}

void xthread_die(const char *what, int err)
{
    fprintf(stderr, "tenq: cannot start %s: %s\n", what, strerror(err));
    abort();
}

void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) xalloc_die();
    return p;
}

void *xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) xalloc_die();
    return p;
}

void *xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) xalloc_die();
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s);
    char *p = xmalloc(n + 1);
    memcpy(p, s, n + 1);
    return p;
}

char *xstrndup(const char *s, size_t n)
{
    char *p = xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}
