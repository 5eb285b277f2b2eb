// SPDX-License-Identifier: Apache-2.0
/* TZif files and POSIX TZ rules: see tzif.h. */
#include "tzif.h"

#include "xalloc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_FILE (1 << 20) /* the largest zone file is a few KiB */

/* The footer's rule: std offset, and optionally dst with its two dates. */
typedef struct rule_date {
    char kind; /* 'J' (1-365, no Feb 29), 'D' (0-365), 'M' (month.week.day) */
    int n, m, w, d;
    int32_t secs; /* local time of day of the change (may be < 0 or > 24 h) */
} rule_date;

typedef struct tz_rule {
    bool present, has_dst;
    int32_t std_off, dst_off; /* seconds east of UTC */
    rule_date start, end;
} tz_rule;

struct tq_zone {
    char *name;
    size_t ntrans;
    int64_t *trans; /* UTC seconds, increasing */
    uint8_t *idx;   /* the type each transition leads to */
    int32_t *offs;  /* the offset of each type */
    size_t ntypes;
    int32_t initial; /* before the first transition */
    tz_rule rule;
};

/* ---- the calendar ------------------------------------------------------------------ */

int64_t tq_days_from_civil(int64_t y, unsigned m, unsigned d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + (int64_t)doe - 719468;
}

void tq_civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

unsigned tq_weekday(int64_t days)
{
    return (unsigned)(days >= -4 ? (days + 4) % 7 : (days + 5) % 7 + 6);
}

static bool leap(int64_t y)
{
    return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

unsigned tq_month_days(int64_t y, unsigned m)
{
    static const unsigned n[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && leap(y) ? 29 : n[m - 1];
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ---- POSIX TZ rules ------------------------------------------------------------------ */

static const char *rule_name(const char *p)
{
    if (*p == '<') {
        const char *e = strchr(p, '>');
        return e && e - p >= 4 ? e + 1 : NULL;
    }
    const char *s = p;
    while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')) p++;
    return p - s >= 3 ? p : NULL;
}

static const char *rule_num(const char *p, int *out, int max)
{
    if (*p < '0' || *p > '9') return NULL;
    int v = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (*p++ - '0');
        if (v > max) return NULL;
    }
    *out = v;
    return p;
}

/* [+-]hh[:mm[:ss]] into seconds (hours up to 167, as version 3 allows). */
static const char *rule_time(const char *p, int32_t *out)
{
    int sign = 1;
    if (*p == '+' || *p == '-') sign = *p++ == '-' ? -1 : 1;
    int h, m = 0, s = 0;
    if (!(p = rule_num(p, &h, 167))) return NULL;
    if (*p == ':' && !(p = rule_num(p + 1, &m, 59))) return NULL;
    if (*p == ':' && !(p = rule_num(p + 1, &s, 59))) return NULL;
    *out = sign * (h * 3600 + m * 60 + s);
    return p;
}

static const char *rule_date_parse(const char *p, rule_date *d)
{
    memset(d, 0, sizeof(*d));
    d->secs = 7200;
    if (*p == 'M') {
        d->kind = 'M';
        if (!(p = rule_num(p + 1, &d->m, 12)) || d->m < 1 || *p++ != '.') return NULL;
        if (!(p = rule_num(p, &d->w, 5)) || d->w < 1 || *p++ != '.') return NULL;
        if (!(p = rule_num(p, &d->d, 6))) return NULL;
    } else if (*p == 'J') {
        d->kind = 'J';
        if (!(p = rule_num(p + 1, &d->n, 365)) || d->n < 1) return NULL;
    } else {
        d->kind = 'D';
        if (!(p = rule_num(p, &d->n, 365))) return NULL;
    }
    if (*p == '/' && !(p = rule_time(p + 1, &d->secs))) return NULL;
    return p;
}

static bool rule_parse(const char *s, tz_rule *r)
{
    memset(r, 0, sizeof(*r));
    const char *p = rule_name(s);
    int32_t off;
    if (!p || !(p = rule_time(p, &off))) return false;
    r->std_off = -off; /* POSIX offsets are west of UTC */
    r->present = true;
    if (!*p) return true;
    if (!(p = rule_name(p))) return false;
    r->has_dst = true;
    r->dst_off = r->std_off + 3600;
    if (*p && *p != ',') {
        if (!(p = rule_time(p, &off))) return false;
        r->dst_off = -off;
    }
    if (!*p) { /* no dates: the US rule of 2007 (RFC 8536) */
        r->start = (rule_date){'M', 0, 3, 2, 0, 7200};
        r->end = (rule_date){'M', 0, 11, 1, 0, 7200};
        return true;
    }
    if (*p++ != ',' || !(p = rule_date_parse(p, &r->start))) return false;
    if (*p++ != ',' || !(p = rule_date_parse(p, &r->end))) return false;
    return *p == 0;
}

/* The day (since the epoch) a rule date falls on in year y. */
static int64_t rule_day(const rule_date *d, int64_t y)
{
    int64_t jan1 = tq_days_from_civil(y, 1, 1);
    if (d->kind == 'J') return jan1 + d->n - 1 + (leap(y) && d->n >= 60);
    if (d->kind == 'D') return jan1 + d->n;
    int64_t first = tq_days_from_civil(y, (unsigned)d->m, 1);
    int day = 1 + (d->d - (int)tq_weekday(first) + 7) % 7 + (d->w - 1) * 7;
    while (day > (int)tq_month_days(y, (unsigned)d->m)) day -= 7;
    return first + day - 1;
}

static int32_t rule_offset(const tz_rule *r, int64_t t)
{
    if (!r->has_dst) return r->std_off;
    int64_t y;
    unsigned m, d;
    tq_civil_from_days(floor_div(t + r->std_off, 86400), &y, &m, &d);
    /* the changes happen at local times: the start in standard time, the
     * end in daylight time */
    int64_t start = rule_day(&r->start, y) * 86400 + r->start.secs - r->std_off;
    int64_t end = rule_day(&r->end, y) * 86400 + r->end.secs - r->dst_off;
    bool dst = start < end ? (t >= start && t < end) : !(t >= end && t < start);
    return dst ? r->dst_off : r->std_off;
}

/* ---- zones --------------------------------------------------------------------------- */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
}

bool tq_zone_name_valid(const char *name)
{
    size_t n = strlen(name);
    if (n == 0 || n > 128 || name[0] == '/' || name[n - 1] == '/') return false;
    const char *seg = name;
    for (size_t i = 0; i <= n; i++) {
        char c = name[i];
        if (c == '/' || c == 0) {
            if (name + i == seg || *seg == '.') return false; /* empty, ".", "..", hidden */
            seg = name + i + 1;
            continue;
        }
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '_' || c == '+' || c == '-' || c == '.';
        if (!ok) return false;
    }
    return true;
}

static tq_zone *zone_new(const char *name)
{
    tq_zone *z = xcalloc(1, sizeof(*z));
    z->name = xstrdup(name);
    return z;
}

tq_zone *tq_zone_posix(const char *name, const char *rule, char *err, size_t errlen)
{
    tq_zone *z = zone_new(name);
    if (!rule_parse(rule, &z->rule)) {
        set_err(err, errlen, "not a POSIX TZ rule: %.100s", rule);
        tq_zone_free(z);
        return NULL;
    }
    z->initial = z->rule.std_off;
    return z;
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int64_t be64(const unsigned char *p)
{
    return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4));
}

tq_zone *tq_zone_parse(const char *name, const unsigned char *data, size_t n, char *err,
                       size_t errlen)
{
    if (n < 44 || memcmp(data, "TZif", 4) != 0) {
        set_err(err, errlen, "time zone %s: not a TZif file", name);
        return NULL;
    }
    if (data[4] < '2') {
        set_err(err, errlen, "time zone %s: a version 1 TZif file (version 2 or later needed)",
                name);
        return NULL;
    }
    /* skip the version 1 block: its counts, then 32-bit data */
    const unsigned char *h = data + 20;
    size_t isut = be32(h), isstd = be32(h + 4), leapc = be32(h + 8), timec = be32(h + 12),
           typec = be32(h + 16), charc = be32(h + 20);
    size_t v1 = timec * 5 + typec * 6 + charc + leapc * 8 + isstd + isut;
    if (v1 > n || 44 + v1 + 44 > n) goto bad;
    const unsigned char *p = data + 44 + v1;
    if (memcmp(p, "TZif", 4) != 0) goto bad;
    h = p + 20;
    isut = be32(h), isstd = be32(h + 4), leapc = be32(h + 8), timec = be32(h + 12),
    typec = be32(h + 16), charc = be32(h + 20);
    if (typec == 0 || typec > 256 || timec > 100000 || charc > 10000 || leapc > 10000) goto bad;
    size_t body = timec * 9 + typec * 6 + charc + leapc * 12 + isstd + isut;
    p += 44;
    if ((size_t)(p - data) + body > n) goto bad;
    tq_zone *z = zone_new(name);
    z->ntrans = timec;
    z->ntypes = typec;
    z->trans = xcalloc(timec ? timec : 1, sizeof(int64_t));
    z->idx = xcalloc(timec ? timec : 1, 1);
    z->offs = xcalloc(typec, sizeof(int32_t));
    for (size_t i = 0; i < timec; i++) {
        z->trans[i] = be64(p + i * 8);
        if (i && z->trans[i] <= z->trans[i - 1]) goto bad_z;
    }
    p += timec * 8;
    for (size_t i = 0; i < timec; i++) {
        if (p[i] >= typec) goto bad_z;
        z->idx[i] = p[i];
    }
    p += timec;
    for (size_t i = 0; i < typec; i++) {
        int32_t off = (int32_t)be32(p + i * 6);
        if (off < -25 * 3600 || off > 26 * 3600) goto bad_z;
        z->offs[i] = off;
    }
    p += typec * 6 + charc + leapc * 12 + isstd + isut;
    z->initial = z->offs[0];
    /* the footer: "\n" rule "\n" (empty: no rule) */
    size_t left = n - (size_t)(p - data);
    if (left >= 2 && p[0] == '\n') {
        const unsigned char *e = memchr(p + 1, '\n', left - 1);
        if (!e) goto bad_z;
        size_t len = (size_t)(e - p - 1);
        if (len > 0) {
            char rule[256];
            if (len >= sizeof rule) goto bad_z;
            memcpy(rule, p + 1, len);
            rule[len] = 0;
            if (!rule_parse(rule, &z->rule)) goto bad_z;
        }
    }
    if (timec == 0 && !z->rule.present) z->rule = (tz_rule){true, false, z->offs[0], 0, {0}, {0}};
    return z;
bad_z:
    tq_zone_free(z);
bad:
    set_err(err, errlen, "time zone %s: a damaged TZif file", name);
    return NULL;
}

tq_zone *tq_zone_load(const char *name, const char *dir, char *err, size_t errlen)
{
    if (!tq_zone_name_valid(name)) {
        set_err(err, errlen, "not a time zone name: \"%.100s\" (an IANA name like Europe/Berlin)",
                name);
        return NULL;
    }
    if (strcmp(name, "UTC") == 0) return tq_zone_posix("UTC", "UTC0", err, errlen);
    if (!dir) dir = getenv("TZDIR");
    if (!dir || !*dir) dir = TQ_ZONEINFO_DIR;
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (errno == ENOENT || errno == ENOTDIR)
            set_err(err, errlen, "unknown time zone: %.100s", name);
        else
            set_err(err, errlen, "time zone %.100s: cannot read its file", name);
        return NULL;
    }
    unsigned char *buf = xmalloc(MAX_FILE);
    size_t n = fread(buf, 1, MAX_FILE, f);
    bool err_read = ferror(f);
    fclose(f);
    tq_zone *z = NULL;
    if (err_read) /* a directory (e.g. "Europe") reads as an error */
        set_err(err, errlen, "unknown time zone: %.100s", name);
    else
        z = tq_zone_parse(name, buf, n, err, errlen);
    free(buf);
    return z;
}

void tq_zone_free(tq_zone *z)
{
    if (!z) return;
    free(z->name);
    free(z->trans);
    free(z->idx);
    free(z->offs);
    free(z);
}

const char *tq_zone_name(const tq_zone *z)
{
    return z->name;
}

int32_t tq_zone_offset(const tq_zone *z, int64_t t)
{
    if (z->ntrans == 0) return z->rule.present ? rule_offset(&z->rule, t) : z->initial;
    if (t < z->trans[0]) return z->initial;
    if (t >= z->trans[z->ntrans - 1] && z->rule.present) return rule_offset(&z->rule, t);
    size_t lo = 0, hi = z->ntrans; /* the last transition at or before t */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (z->trans[mid] <= t)
            lo = mid;
        else
            hi = mid;
    }
    return z->offs[z->idx[lo]];
}

int64_t tq_zone_to_utc(const tq_zone *z, int64_t local, bool *in_gap)
{
    if (in_gap) *in_gap = false;
    /* the offsets a day either side: transitions are further apart */
    int32_t a = tq_zone_offset(z, local - 86400 - 26 * 3600);
    int32_t b = tq_zone_offset(z, local + 86400 + 26 * 3600);
    int64_t ua = local - a, ub = local - b;
    bool va = ua + tq_zone_offset(z, ua) == local, vb = ub + tq_zone_offset(z, ub) == local;
    /* also the offset at the naive instant (a zone with two changes near) */
    int32_t c = tq_zone_offset(z, local - a);
    int64_t uc = local - c;
    bool vc = uc + tq_zone_offset(z, uc) == local;
    int64_t best = INT64_MAX;
    if (va && ua < best) best = ua;
    if (vb && ub < best) best = ub;
    if (vc && uc < best) best = uc;
    if (best != INT64_MAX) return best;
    /* a gap: the first instant whose local time is at or past `local` */
    if (in_gap) *in_gap = true;
    int64_t lo = local - 26 * 3600, hi = local + 26 * 3600; /* lo before, hi after */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (mid + tq_zone_offset(z, mid) >= local)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}
