// SPDX-License-Identifier: Apache-2.0
/* Cron expressions and their ticks: see cron.h. */
#include "cron.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

typedef struct field_def {
    const char *name;
    int min, max;
    const char *const *names; /* names for min.. (NULL: numbers only) */
} field_def;

static const char *const month_names[] = {"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL",
                                          "AUG", "SEP", "OCT", "NOV", "DEC", NULL};
static const char *const wday_names[] = {"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT", NULL};

static const field_def fields[5] = {
    {"minute", 0, 59, NULL},           {"hour", 0, 23, NULL},
    {"day of month", 1, 31, NULL},     {"month", 1, 12, month_names},
    {"day of week", 0, 7, wday_names},
};

static int errf(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* One value (a number or a name) at *p of length up to end; -1 if none. */
static int value(const field_def *f, const char **p, const char *end)
{
    const char *s = *p;
    if (s < end && *s >= '0' && *s <= '9') {
        int v = 0;
        while (s < end && *s >= '0' && *s <= '9') {
            v = v * 10 + (*s++ - '0');
            if (v > 1000) return -1;
        }
        *p = s;
        return v;
    }
    if (f->names && end - s >= 3) {
        for (int i = 0; f->names[i]; i++) {
            if (strncasecmp(s, f->names[i], 3) == 0) {
                *p = s + 3;
                return f->min + i;
            }
        }
    }
    return -1;
}

/* One field's text [s, end) into bits; -1 with err set. */
static int parse_field(const field_def *f, const char *s, const char *end, uint64_t *bits,
                       bool *star, char *err, size_t errlen)
{
    char text[64];
    snprintf(text, sizeof text, "%.*s", (int)(end - s < 60 ? end - s : 60), s);
    *bits = 0;
    *star = *s == '*' || *s == '?';
    while (s < end) {
        const char *item_end = memchr(s, ',', (size_t)(end - s));
        if (!item_end) item_end = end;
        int lo, hi, step = 1;
        const char *p = s;
        bool range = false;
        if (p < item_end && (*p == '*' || *p == '?')) {
            lo = f->min;
            hi = f->max == 7 ? 6 : f->max;
            p++;
            range = true;
        } else {
            if ((lo = value(f, &p, item_end)) < 0)
                return errf(err, errlen, "%s field \"%s\": not a value", f->name, text);
            hi = lo;
            if (p < item_end && *p == '-') {
                p++;
                if ((hi = value(f, &p, item_end)) < 0)
                    return errf(err, errlen, "%s field \"%s\": a range needs an end", f->name,
                                text);
                range = true;
            }
        }
        if (p < item_end && *p == '/') {
            p++;
            const char *q = p;
            step = 0;
            while (q < item_end && *q >= '0' && *q <= '9' && step <= 1000)
                step = step * 10 + (*q++ - '0');
            if (q == p || q != item_end || step < 1 || step > f->max)
                return errf(err, errlen,
                            "%s field \"%s\": a step must be from 1 to the field's "
                            "size",
                            f->name, text);
            p = q;
            if (!range) hi = f->max == 7 ? 6 : f->max; /* a/n: from a to the end */
        }
        if (p != item_end)
            return errf(err, errlen, "%s field \"%s\": unexpected characters", f->name, text);
        if (lo < f->min || hi > f->max || lo > f->max) {
            char range_msg[128];
            snprintf(range_msg, sizeof range_msg, "%s field \"%s\": values are %d-%d", f->name,
                     text, f->min, f->max == 7 ? 7 : f->max);
            return errf(err, errlen, "%s", range_msg);
        }
        if (lo > hi)
            return errf(err, errlen, "%s field \"%s\": a range must not run backwards", f->name,
                        text);
        for (int v = lo; v <= hi; v += step) *bits |= 1ULL << (f->max == 7 && v == 7 ? 0 : v);
        s = item_end < end ? item_end + 1 : end;
        if (item_end < end && s == end)
            return errf(err, errlen, "%s field \"%s\": an empty list item", f->name, text);
    }
    return 0;
}

/* @every's duration: <n><unit>... with units d, h, m, s. */
static int parse_every(const char *s, tq_cron *out, char *err, size_t errlen)
{
    while (*s == ' ' || *s == '\t') s++;
    if (!*s) return errf(err, errlen, "@every needs a duration, like @every 30s%s%s", "", "");
    int64_t total = 0;
    const char *p = s;
    while (*p && *p != ' ' && *p != '\t') {
        if (*p < '0' || *p > '9') goto bad;
        int64_t n = 0;
        while (*p >= '0' && *p <= '9') {
            n = n * 10 + (*p++ - '0');
            if (n > TQ_CRON_EVERY_MAX_MS) goto bad;
        }
        int64_t unit;
        switch (*p++) {
        case 'd': unit = 86400000; break;
        case 'h': unit = 3600000; break;
        case 'm': unit = 60000; break;
        case 's': unit = 1000; break;
        default: goto bad;
        }
        total += n * unit;
        if (total > TQ_CRON_EVERY_MAX_MS) goto bad;
    }
    while (*p == ' ' || *p == '\t') p++;
    if (*p) goto bad;
    if (total < 1000)
        return errf(err, errlen, "@every %s: the period must be at least 1s%s", s, "");
    out->every_ms = total;
    return 0;
bad:
    return errf(err, errlen,
                "@every \"%.60s\": a duration is numbers with units d, h, m, s (like 1h30m), "
                "from 1s to 366d%s",
                s, "");
}

static const struct {
    const char *name, *expr;
} macros[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
};

/* Does some day of some chosen month match (an expression that would
 * never tick is refused)? */
static bool can_tick(const tq_cron *c)
{
    if (!c->wday_star && !c->mday_star) return true; /* either day rule; every weekday occurs */
    if (!c->mday_star) {
        for (unsigned m = 1; m <= 12; m++) {
            if (!(c->months >> m & 1)) continue;
            unsigned maxd = m == 2 ? 29 : tq_month_days(2001, m);
            for (unsigned d = 1; d <= maxd; d++)
                if (c->mdays >> d & 1) return true;
        }
        return false;
    }
    return true;
}

int tq_cron_parse(const char *text, tq_cron *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof(*out));
    for (const char *q = text; *q; q++)
        if ((unsigned char)*q < 0x20 && *q != '\t')
            return errf(err, errlen, "a cron expression holds no control characters%s%s", "", "");
    const char *p = text;
    while (*p == ' ' || *p == '\t') p++;
    if (*p == '@') {
        if (strncmp(p, "@every", 6) == 0 && (p[6] == ' ' || p[6] == '\t' || !p[6]))
            return parse_every(p + 6, out, err, errlen);
        size_t n = strcspn(p, " \t");
        const char *rest = p + n;
        while (*rest == ' ' || *rest == '\t') rest++;
        for (size_t i = 0; i < sizeof macros / sizeof macros[0]; i++)
            if (strlen(macros[i].name) == n && strncmp(p, macros[i].name, n) == 0 && !*rest)
                return tq_cron_parse(macros[i].expr, out, err, errlen);
        return errf(err, errlen,
                    "unknown \"%.40s\": use @yearly, @annually, @monthly, @weekly, @daily, "
                    "@midnight, @hourly or @every <duration>%s",
                    p, "");
    }
    const char *starts[5], *ends[5];
    int nf = 0;
    while (*p) {
        if (nf == 5)
            return errf(err, errlen,
                        "a cron expression has five fields (minute hour day-of-month month "
                        "day-of-week)%s%s",
                        "", "");
        starts[nf] = p;
        while (*p && *p != ' ' && *p != '\t') p++;
        ends[nf++] = p;
        while (*p == ' ' || *p == '\t') p++;
    }
    if (nf != 5)
        return errf(err, errlen,
                    "a cron expression has five fields (minute hour day-of-month month "
                    "day-of-week)%s%s",
                    "", "");
    uint64_t bits[5];
    bool star[5];
    for (int i = 0; i < 5; i++)
        if (parse_field(&fields[i], starts[i], ends[i], &bits[i], &star[i], err, errlen)) return -1;
    out->minutes = bits[0];
    out->hours = (uint32_t)bits[1];
    out->mdays = (uint32_t)bits[2];
    out->months = (uint16_t)bits[3];
    out->wdays = (uint8_t)bits[4];
    out->mday_star = star[2];
    out->wday_star = star[4];
    if (!can_tick(out))
        return errf(err, errlen, "\"%.100s\" never happens (no such day in its months)%s", text,
                    "");
    return 0;
}

/* ---- ticks ---------------------------------------------------------------------------- */

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static bool day_matches(const tq_cron *c, int64_t days, unsigned d)
{
    bool md = c->mdays >> d & 1, wd = c->wdays >> tq_weekday(days) & 1;
    if (c->mday_star || c->wday_star) return md && wd;
    return md || wd;
}

/* The first matching wall-clock minute (local seconds) after `local`. */
static int64_t next_wall(const tq_cron *c, int64_t local)
{
    int64_t t = floor_div(local, 60) * 60 + 60;
    int64_t y0;
    unsigned m, d;
    tq_civil_from_days(floor_div(t, 86400), &y0, &m, &d);
    for (;;) {
        int64_t days = floor_div(t, 86400), sod = t - days * 86400, y;
        tq_civil_from_days(days, &y, &m, &d);
        if (y > y0 + TQ_CRON_HORIZON_YEARS) return INT64_MIN;
        if (!(c->months >> m & 1)) {
            t = tq_days_from_civil(m == 12 ? y + 1 : y, m == 12 ? 1 : m + 1, 1) * 86400;
            continue;
        }
        if (!day_matches(c, days, d)) {
            t = (days + 1) * 86400;
            continue;
        }
        unsigned h = (unsigned)(sod / 3600), mi = (unsigned)(sod % 3600 / 60);
        if (!(c->hours >> h & 1)) {
            t = days * 86400 + (int64_t)(h + 1) * 3600;
            continue;
        }
        uint64_t rest = c->minutes >> mi;
        if (!rest) { /* no minute left in this hour */
            t = days * 86400 + (int64_t)(h + 1) * 3600;
            continue;
        }
        return t + (int64_t)__builtin_ctzll(rest) * 60;
    }
}

int64_t tq_cron_next(const tq_cron *c, const tq_zone *z, int64_t after)
{
    if (after < 0) after = 0;
    if (c->every_ms) return (after / c->every_ms + 1) * c->every_ms;
    int64_t u = floor_div(after, 1000);
    int64_t local = u + tq_zone_offset(z, u);
    /* walls in order; a wall whose first occurrence is not after `after`
     * (the second pass through a repeated hour) ticked already */
    for (int i = 0; i < 100000; i++) {
        int64_t w = next_wall(c, local);
        if (w == INT64_MIN) return -1;
        int64_t at = tq_zone_to_utc(z, w, NULL);
        if (at * 1000 > after) return at * 1000;
        local = w;
    }
    return -1;
}
