// SPDX-License-Identifier: Apache-2.0
/* Values of flags: durations, times, sizes, numbers, JSON. */
#include "cli/cli.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool cli_duration(cli *c, const char *flag, const char *v, int64_t *ms)
{
    static const struct {
        const char *unit;
        double ms;
    } units[] = {{"ms", 1}, {"s", 1e3}, {"m", 60e3}, {"h", 3600e3}, {"d", 86400e3}};
    double total = 0;
    const char *p = v;
    bool any = false;
    while (*p) {
        char *end;
        errno = 0;
        if (!isdigit((unsigned char)*p) && *p != '.') goto bad;
        double n = strtod(p, &end);
        if (errno || end == p || !isfinite(n)) goto bad;
        p = end;
        size_t ul = 0;
        while (isalpha((unsigned char)p[ul])) ul++;
        if (ul == 0) {
            /* a bare number is seconds, and only on its own */
            if (*p || any) goto bad;
            total += n * 1e3;
            any = true;
            break;
        }
        double f = -1;
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (strlen(units[i].unit) == ul && !strncmp(units[i].unit, p, ul)) f = units[i].ms;
        if (f < 0) goto bad;
        total += n * f;
        p += ul;
        any = true;
    }
    if (!any || total > 9e15) goto bad;
    *ms = (int64_t)llround(total);
    return true;
bad:
    cli_usage(c, "--%s: \"%s\" is not a duration (500ms, 10s, 5m, 2h, 1d, 1h30m)", flag, v);
    return false;
}

bool cli_int(cli *c, const char *flag, const char *v, long long lo, long long hi, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || end == v || *end || n < lo || n > hi) {
        cli_usage(c, "--%s: expected an integer from %lld to %lld, not \"%s\"", flag, lo, hi, v);
        return false;
    }
    *out = n;
    return true;
}

bool cli_number(cli *c, const char *flag, const char *v, double *out)
{
    char *end;
    errno = 0;
    double n = strtod(v, &end);
    if (errno || end == v || *end || !isfinite(n)) {
        cli_usage(c, "--%s: expected a number, not \"%s\"", flag, v);
        return false;
    }
    *out = n;
    return true;
}

bool cli_bytes(cli *c, const char *flag, const char *v, long long *out)
{
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    long long mul = 1;
    if (!strcmp(end, "") || !strcasecmp(end, "b"))
        mul = 1;
    else if (!strcasecmp(end, "k") || !strcasecmp(end, "kib") || !strcasecmp(end, "kb"))
        mul = 1024;
    else if (!strcasecmp(end, "m") || !strcasecmp(end, "mib") || !strcasecmp(end, "mb"))
        mul = 1024 * 1024;
    else if (!strcasecmp(end, "g") || !strcasecmp(end, "gib") || !strcasecmp(end, "gb"))
        mul = 1024LL * 1024 * 1024;
    else
        mul = 0;
    if (errno || end == v || mul == 0 || n < 0 || n > (1LL << 50) / mul) {
        cli_usage(c, "--%s: \"%s\" is not a size (1048576, 64KiB, 1MiB)", flag, v);
        return false;
    }
    *out = n * mul;
    return true;
}

bool cli_bool(cli *c, const char *flag, const char *v, bool *out)
{
    if (!strcmp(v, "true") || !strcmp(v, "yes") || !strcmp(v, "on") || !strcmp(v, "1")) {
        *out = true;
        return true;
    }
    if (!strcmp(v, "false") || !strcmp(v, "no") || !strcmp(v, "off") || !strcmp(v, "0")) {
        *out = false;
        return true;
    }
    cli_usage(c, "--%s: expected true or false, not \"%s\"", flag, v);
    return false;
}

bool cli_time(cli *c, const char *flag, const char *v, int64_t *ms)
{
    size_t n = strlen(v);
    if (n && strspn(v, "0123456789") == n) {
        long long t;
        if (!cli_int(c, flag, v, 0, 1LL << 53, &t)) return false;
        *ms = t;
        return true;
    }
    /* RFC 3339: 2026-01-01T09:00:00[.123](Z|+02:00); the seconds may be left out */
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    int used = 0;
    if (sscanf(v, "%4d-%2d-%2d%*1[Tt ]%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour,
               &tm.tm_min, &used) != 5 ||
        used < 16)
        goto bad;
    const char *p = v + used;
    double frac = 0;
    if (*p == ':') {
        if (!isdigit((unsigned char)p[1]) || !isdigit((unsigned char)p[2])) goto bad;
        tm.tm_sec = (p[1] - '0') * 10 + (p[2] - '0');
        p += 3;
        if (*p == '.') {
            char *end;
            frac = strtod(p, &end);
            if (end == p + 1) goto bad;
            p = end;
        }
    }
    long off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
               isdigit((unsigned char)p[2]) && p[3] == ':' && isdigit((unsigned char)p[4]) &&
               isdigit((unsigned char)p[5])) {
        off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600L + ((p[4] - '0') * 10 + (p[5] - '0')) * 60L;
        if (*p == '-') off = -off;
        p += 6;
    } else {
        goto bad; /* a time without its zone would depend on the machine */
    }
    if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
        tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
        goto bad;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    time_t t = timegm(&tm);
    if (t == (time_t)-1) goto bad;
    *ms = ((int64_t)t - off) * 1000 + (int64_t)llround(frac * 1000);
    if (*ms < 0) goto bad;
    return true;
bad:
    cli_usage(c,
              "--%s: \"%s\" is not a time (milliseconds since the epoch, or "
              "2026-01-01T09:00:00Z)",
              flag, v);
    return false;
}

bool cli_id(cli *c, const char *v, uint64_t *id)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (errno || end == v || *end || n == 0 || !isdigit((unsigned char)v[0])) {
        cli_usage(c, "\"%s\" is not an id", v);
        return false;
    }
    *id = n;
    return true;
}

bool cli_json(cli *c, const char *flag, const char *v, json_t **out)
{
    json_error_t jerr;
    *out = json_loads(v, JSON_DECODE_ANY, &jerr);
    if (!*out) {
        cli_usage(c, "--%s: not valid JSON: %s (column %d)", flag, jerr.text, jerr.column);
        return false;
    }
    return true;
}
