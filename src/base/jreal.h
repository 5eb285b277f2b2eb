// SPDX-License-Identifier: Apache-2.0
/* base/jreal — JSON reals read and written quickly, as jansson does.
 *
 * A job's args are kept in canonical form (keys sorted, reals as jansson
 * writes them: 17 significant digits, "%.17g", with ".0" added when neither
 * a point nor an exponent shows).  Asking jansson for each real cost a
 * submit more than everything else it does (strtod, then a jansson value
 * dumped through printf: 7,000 instructions of a one-real job's 12,000,
 * most of its time on cold caches).  These are the exact fast paths for
 * the usual reals; anything else answers false or 0 and goes the long way.
 * A test holds both to strtod and jansson (tests/unit/test_api_text.c). */
#ifndef TENQ_BASE_JREAL_H
#define TENQ_BASE_JREAL_H

#include <stdbool.h>
#include <stddef.h>

/* The JSON number p[0..n) (already checked) as the nearest double, when
 * that can be had exactly with one multiplication or division (at most 19
 * significant digits whose value is below 2^53, a power of ten up to
 * 10^22); false otherwise (strtod must read it). */
bool tq_real_read(const char *p, size_t n, double *out);

/* v as jansson writes a real at 17 digits, into out (room for 32 bytes);
 * its length, or 0 when v is outside 1e-4 <= |v| < 2^53 (jansson must
 * write it). */
size_t tq_real_write(double v, char *out);

#endif
