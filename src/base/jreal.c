// SPDX-License-Identifier: Apache-2.0
/* JSON reals, fast paths (base/jreal.h). */
#include "base/jreal.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

static const double exact_pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

#define TWO53 9007199254740992ULL

bool tq_real_read(const char *p, size_t n, double *out)
{
    const char *e = p + n;
    bool neg = p < e && *p == '-';
    p += neg;
    uint64_t w = 0;
    int digits = 0, frac = 0;
    for (; p < e && *p >= '0' && *p <= '9'; p++)
        if (w || *p != '0') {
            if (++digits > 19) return false;
            w = w * 10 + (uint64_t)(*p - '0');
        }
    if (p < e && *p == '.')
        for (p++; p < e && *p >= '0' && *p <= '9'; p++, frac++)
            if (w || *p != '0') {
                if (++digits > 19) return false;
                w = w * 10 + (uint64_t)(*p - '0');
            }
    int exp = 0;
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        bool eneg = p < e && *p == '-';
        p += p < e && (*p == '-' || *p == '+');
        int ed = 0;
        for (; p < e && *p >= '0' && *p <= '9'; p++)
            if (exp || *p != '0') {
                if (++ed > 4) return false;
                exp = exp * 10 + (*p - '0');
            }
        if (eneg) exp = -exp;
    }
    int q = exp - frac;
    /* zero keeps its sign through strtod; and both operands must be exact,
     * the one operation rounded once (not in x87's wider registers) */
    if (p != e || w == 0 || w > TWO53 || q < -22 || q > 22 || FLT_EVAL_METHOD != 0) return false;
    double d = q >= 0 ? (double)w * exact_pow10[q] : (double)w / exact_pow10[-q];
    *out = neg ? -d : d;
    return true;
}

typedef unsigned __int128 u128;

static u128 pow10u(int k) /* k <= 20: 10^20 needs more than 64 bits */
{
    u128 x = 1;
    while (k-- > 0) x *= 10;
    return x;
}

/* Whether m * 2^-s >= 10^x (exactly), for -4 <= x <= 16 and s <= 66. */
static bool at_least(uint64_t m, int s, int x)
{
    if (x >= 0) return (u128)m >= pow10u(x) << s;
    return (u128)m * pow10u(-x) >= ((u128)1 << s);
}

size_t tq_real_write(double v, char *out)
{
    double a = fabs(v);
    if (!(a >= 1e-4 && a < (double)TWO53)) return 0; /* also NaN */
    int e2;
    uint64_t m = (uint64_t)ldexp(frexp(a, &e2), 53); /* a = m * 2^(e2 - 53), exactly */
    int s = 53 - e2;                                 /* a = m / 2^s, 0 <= s <= 66 */
    /* x: the decimal exponent, floor(log10(a)), found exactly */
    int x = (int)floor(log10(a));
    while (!at_least(m, s, x)) x--;
    while (at_least(m, s, x + 1)) x++;
    /* 17 significant digits: round(a * 10^(16 - x)), ties to even, as printf */
    u128 num = m * pow10u(16 - x); /* below 2^53 * 10^20 < 2^120 */
    uint64_t d = (uint64_t)(num >> s);
    if (s > 0) {
        u128 rem = num & (((u128)1 << s) - 1), half = (u128)1 << (s - 1);
        if (rem > half || (rem == half && (d & 1))) d++;
    }
    if (d == pow10u(17)) { /* rounded up to the next power of ten */
        d = pow10u(16);
        x++;
    }
    char dig[17];
    for (int i = 16; i >= 0; i--, d /= 10) dig[i] = (char)('0' + d % 10);
    int nd = 17;
    while (nd > 1 && dig[nd - 1] == '0') nd--; /* %g drops trailing zeros */
    char *o = out;
    if (v < 0) *o++ = '-';
    if (x >= 0) { /* x <= 15 here: %g writes it without an exponent */
        int ip = x + 1;
        memcpy(o, dig, (size_t)(ip < nd ? ip : nd));
        o += ip < nd ? ip : nd;
        for (int i = nd; i < ip; i++) *o++ = '0';
        *o++ = '.';
        if (nd > ip) {
            memcpy(o, dig + ip, (size_t)(nd - ip));
            o += nd - ip;
        } else {
            *o++ = '0'; /* jansson's ".0" */
        }
    } else { /* -4 <= x < 0: 0.000ddd */
        *o++ = '0';
        *o++ = '.';
        for (int i = -1; i > x; i--) *o++ = '0';
        memcpy(o, dig, (size_t)nd);
        o += nd;
    }
    *o = 0;
    return (size_t)(o - out);
}
