// SPDX-License-Identifier: Apache-2.0
/* base/utf8 — bytes into valid UTF-8, for text that must cross the
 * protocol as a JSON string (a handler's error, its output). */
#ifndef TENQ_BASE_UTF8_H
#define TENQ_BASE_UTF8_H

#include <stddef.h>

/* A malloc'd copy of s[0..n) that is valid UTF-8 (each bad byte becomes
 * U+FFFD) and holds no NUL; NULL when out of memory.  The caller frees it. */
char *tq_utf8_fix(const char *s, size_t n);

/* Whether s[0..n) is valid UTF-8 without NUL. */
int tq_utf8_valid(const char *s, size_t n);

#endif
