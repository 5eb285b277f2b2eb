// SPDX-License-Identifier: Apache-2.0
/* Allocation that cannot fail: on out-of-memory the process prints a line and
 * aborts.  Used where a half-done change would be worse than a restart (the
 * engine: the store holds the truth and recovery rebuilds it). */
#ifndef TENQ_BASE_XALLOC_H
#define TENQ_BASE_XALLOC_H

#include <stddef.h>

_Noreturn void xalloc_die(void);
/* A thread the process cannot go on without did not start (err: what
 * pthread_create returned): prints a line naming it and aborts, as above. */
_Noreturn void xthread_die(const char *what, int err);
void *xmalloc(size_t n);
void *xcalloc(size_t count, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

#endif
