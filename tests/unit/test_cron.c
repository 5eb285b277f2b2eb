// SPDX-License-Identifier: Apache-2.0
/* Cron expressions (base/cron.c) and time zones read from TZif files
 * (base/tzif.c), against known transitions of the system's zoneinfo. */
#include "runner.h"

#include "base/cron.h"
#include "base/hash.h"
#include "base/tzif.h"

/* UTC ms of a civil UTC time. */
static int64_t utc(int64_t y, unsigned mo, unsigned d, unsigned h, unsigned mi)
{
    return (tq_days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60) * 1000;
}

static tq_zone *zone(const char *name)
{
    char err[256];
    tq_zone *z = tq_zone_load(name, NULL, err, sizeof err);
    ASSERT_MSG(z, "loading %s: %s", name, err);
    return z;
}

static tq_cron cron(const char *text)
{
    tq_cron c;
    char err[256];
    ASSERT_MSG(tq_cron_parse(text, &c, err, sizeof err) == 0, "parsing \"%s\": %s", text, err);
    return c;
}

static void refused(const char *text, const char *words)
{
    tq_cron c;
    char err[256] = "";
    ASSERT_MSG(tq_cron_parse(text, &c, err, sizeof err) == -1, "\"%s\" was taken", text);
    ASSERT_MSG(strstr(err, words), "\"%s\": \"%s\" does not say \"%s\"", text, err, words);
}

/* ---- the calendar -------------------------------------------------------------------- */

TEST(civil_days_round_trip_and_weekdays)
{
    ASSERT_EQ(tq_days_from_civil(1970, 1, 1), 0);
    ASSERT_EQ(tq_weekday(0), 4); /* a Thursday */
    ASSERT_EQ(tq_weekday(tq_days_from_civil(2026, 11, 25)), 3);
    ASSERT_EQ(tq_weekday(-1), 3);
    ASSERT_EQ(tq_month_days(2028, 2), 29);
    ASSERT_EQ(tq_month_days(2100, 2), 28);
    ASSERT_EQ(tq_month_days(2000, 2), 29);
    for (int64_t d = -800000; d < 800000; d += 37) {
        int64_t y;
        unsigned m, dd;
        tq_civil_from_days(d, &y, &m, &dd);
        ASSERT_EQ(tq_days_from_civil(y, m, dd), d);
    }
}

/* ---- parsing --------------------------------------------------------------------------- */

TEST(cron_parses_fields_ranges_steps_lists_and_names)
{
    tq_cron c = cron("*/15 9-17 * JAN-mar,dec mon-FRI");
    ASSERT_EQ(c.minutes, 1ULL << 0 | 1ULL << 15 | 1ULL << 30 | 1ULL << 45);
    ASSERT_EQ(c.hours, 0x3fe00);
    ASSERT_EQ(c.months, 1 << 1 | 1 << 2 | 1 << 3 | 1 << 12);
    ASSERT_EQ(c.wdays, 0x3e);
    ASSERT(c.mday_star && !c.wday_star);
    c = cron("0 0 * * 7");
    ASSERT_EQ(c.wdays, 1); /* 7 is Sunday */
    c = cron("0 0 * * 5-7");
    ASSERT_EQ(c.wdays, 1 | 1 << 5 | 1 << 6);
    c = cron("5/20 0 1,15 * *");
    ASSERT_EQ(c.minutes, 1ULL << 5 | 1ULL << 25 | 1ULL << 45);
    ASSERT_EQ(c.mdays, 1 << 1 | 1 << 15);
    ASSERT(!c.mday_star && c.wday_star);
    c = cron("  1-10/3   2 ? * ?  ");
    ASSERT_EQ(c.minutes, 1ULL << 1 | 1ULL << 4 | 1ULL << 7 | 1ULL << 10);
    ASSERT(c.mday_star && c.wday_star);
    c = cron("@hourly");
    ASSERT_EQ(c.minutes, 1);
    ASSERT_EQ(c.hours, 0xffffff);
    c = cron("@daily");
    ASSERT_EQ(c.hours, 1);
    tq_cron m = cron("@midnight");
    ASSERT(memcmp(&c, &m, sizeof c) == 0);
    c = cron("@weekly");
    ASSERT_EQ(c.wdays, 1);
    c = cron("@monthly");
    ASSERT_EQ(c.mdays, 2);
    c = cron("@yearly");
    ASSERT_EQ(c.months, 2);
    m = cron("@annually");
    ASSERT(memcmp(&c, &m, sizeof c) == 0);
    ASSERT_EQ(cron("@every 30s").every_ms, 30000);
    ASSERT_EQ(cron("@every 1h30m").every_ms, 5400000);
    ASSERT_EQ(cron("@every 2d").every_ms, 2 * 86400000LL);
    ASSERT_EQ(cron("@every 1s").every_ms, 1000);
}

TEST(cron_refuses_bad_expressions_naming_what_is_wrong)
{
    refused("", "five fields");
    refused("* * * *", "five fields");
    refused("* * * * * *", "five fields");
    refused("60 * * * *", "minute field \"60\": values are 0-59");
    refused("* 24 * * *", "hour field");
    refused("* * 0 * *", "day of month field");
    refused("* * 32 * *", "day of month field");
    refused("* * * 13 *", "month field");
    refused("* * * * 8", "day of week field");
    refused("5-1 * * * *", "backwards");
    refused("*/0 * * * *", "step");
    refused("*/ * * * *", "step");
    refused("1- * * * *", "range needs an end");
    refused("1,,2 * * * *", "minute field");
    refused("1, * * * *", "empty list item");
    refused("x * * * *", "not a value");
    refused("* * * FOO *", "month field");
    refused("* * * * MONDAY", "unexpected characters");
    refused("0 0 30 2 *", "never happens");
    refused("0 0 31 4,6,9,11 *", "never happens");
    refused("@every", "needs a duration");
    refused("@every 0s", "at least 1s");
    refused("@every 500ms", "units d, h, m, s");
    refused("@every 10", "units d, h, m, s");
    refused("@every 367d", "366d");
    refused("@every -5s", "units");
    refused("@fortnightly", "unknown");
    refused("@daily 5", "unknown");
    refused("0 0 * * *\n", "control");
    /* 30 Feb is refused, 29 Feb taken (leap years) */
    cron("0 0 29 2 *");
    cron("0 0 30 2 1"); /* either day rule: every Monday of February */
}

/* ---- ticks in UTC ------------------------------------------------------------------------- */

TEST(cron_next_in_utc)
{
    tq_zone *z = zone("UTC");
    tq_cron c = cron("*/15 * * * *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 5, 1, 12, 7)), utc(2026, 5, 1, 12, 15));
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 5, 1, 12, 15)), utc(2026, 5, 1, 12, 30));
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 5, 1, 12, 15) - 1), utc(2026, 5, 1, 12, 15));
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 12, 31, 23, 59)), utc(2027, 1, 1, 0, 0));
    c = cron("@yearly");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 6, 1, 0, 0)), utc(2027, 1, 1, 0, 0));
    c = cron("0 0 29 2 *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 3, 1, 0, 0)), utc(2028, 2, 29, 0, 0));
    ASSERT_EQ(tq_cron_next(&c, z, utc(2096, 3, 1, 0, 0)), utc(2104, 2, 29, 0, 0));
    /* both day fields restricted: the 13th or a Friday */
    c = cron("0 0 13 * FRI");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 11, 25, 0, 0)), utc(2026, 11, 27, 0, 0)); /* Fri */
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 12, 11, 0, 0)), utc(2026, 12, 13, 0, 0)); /* 13th */
    /* a day field starting with '*' is not a restriction: both must hold */
    c = cron("0 0 */2 * MON");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 11, 25, 0, 0)), utc(2026, 12, 7, 0, 0));
    c = cron("@every 30s");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 1, 1, 10, 0) + 5000), utc(2026, 1, 1, 10, 0) + 30000);
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 1, 1, 10, 0) + 30000), utc(2026, 1, 1, 10, 1));
    ASSERT_EQ(tq_cron_next(&c, z, 0), 30000);
    tq_zone_free(z);
}

/* The brute force: every minute checked against the fields. */
static bool minute_matches(const tq_cron *c, int64_t ms)
{
    int64_t s = ms / 1000, days = s / 86400, sod = s % 86400, y;
    unsigned m, d;
    tq_civil_from_days(days, &y, &m, &d);
    if (!(c->minutes >> (sod % 3600 / 60) & 1) || !(c->hours >> (sod / 3600) & 1)) return false;
    if (!(c->months >> m & 1)) return false;
    bool md = c->mdays >> d & 1, wd = c->wdays >> tq_weekday(days) & 1;
    return (c->mday_star || c->wday_star) ? md && wd : md || wd;
}

TEST(cron_next_matches_a_brute_force_scan_in_utc)
{
    uint64_t seed = test_seed();
    tq_zone *z = zone("UTC");
    static const char *const exprs[] = {
        "*/7 */5 * * *", "0 12 1,15 * *",  "30 2 * * MON-FRI", "15 */3 10-20 * SUN",
        "0 0 L * *",     "45 23 31 * *",   "0 6 * FEB,AUG 3",  "*/2 1 * * *",
        "0 0 1 1 *",     "5-10 4 */9 * *", "0 7-9/2 * * 6,0",
    };
    for (size_t i = 0; i < sizeof exprs / sizeof exprs[0]; i++) {
        tq_cron c;
        char err[200];
        if (tq_cron_parse(exprs[i], &c, err, sizeof err)) continue; /* "L" is not taken */
        for (int k = 0; k < 20; k++) {
            int64_t start = utc(2026, 1, 1, 0, 0) +
                            (int64_t)(hash_u64(seed + i * 100 + (uint64_t)k) % (400LL * 86400000));
            int64_t got = tq_cron_next(&c, z, start);
            int64_t m = (start / 60000 + 1) * 60000;
            while (!minute_matches(&c, m)) m += 60000;
            ASSERT_MSG(got == m, "%s after %lld: %lld, brute force %lld", exprs[i],
                       (long long)start, (long long)got, (long long)m);
        }
    }
    tq_zone_free(z);
}

/* ---- zones ----------------------------------------------------------------------------------- */

TEST(zone_berlin_transitions_of_2026)
{
    tq_zone *z = zone("Europe/Berlin");
    int64_t spring = utc(2026, 3, 29, 1, 0) / 1000, fall = utc(2026, 10, 25, 1, 0) / 1000;
    ASSERT_EQ(tq_zone_offset(z, spring - 1), 3600);
    ASSERT_EQ(tq_zone_offset(z, spring), 7200);
    ASSERT_EQ(tq_zone_offset(z, fall - 1), 7200);
    ASSERT_EQ(tq_zone_offset(z, fall), 3600);
    /* 2026-03-29 02:30 does not happen: the gap's end, 03:00 CEST */
    bool gap;
    int64_t l = tq_days_from_civil(2026, 3, 29) * 86400;
    ASSERT_EQ(tq_zone_to_utc(z, l + 2 * 3600 + 1800, &gap), spring);
    ASSERT(gap);
    ASSERT_EQ(tq_zone_to_utc(z, l + 3 * 3600, &gap), spring);
    ASSERT(!gap);
    ASSERT_EQ(tq_zone_to_utc(z, l + 1 * 3600 + 1800, &gap), spring - 1800);
    /* 2026-10-25 02:30 happens twice: the first, in CEST */
    l = tq_days_from_civil(2026, 10, 25) * 86400;
    ASSERT_EQ(tq_zone_to_utc(z, l + 2 * 3600 + 1800, &gap), fall - 1800);
    ASSERT(!gap);
    ASSERT_EQ(tq_zone_to_utc(z, l + 3 * 3600, NULL), fall + 3600);
    /* long past the file's transitions, the footer's rule */
    ASSERT_EQ(tq_zone_offset(z, utc(2100, 7, 1, 0, 0) / 1000), 7200);
    ASSERT_EQ(tq_zone_offset(z, utc(2100, 1, 1, 0, 0) / 1000), 3600);
    ASSERT_EQ(tq_zone_offset(z, utc(2200, 3, 30, 0, 59) / 1000), 3600); /* last Sunday: 30th */
    ASSERT_EQ(tq_zone_offset(z, utc(2200, 3, 30, 1, 0) / 1000), 7200);
    ASSERT_STR(tq_zone_name(z), "Europe/Berlin");
    tq_zone_free(z);
}

TEST(zone_new_york_transitions_and_a_zone_without_dst)
{
    tq_zone *z = zone("America/New_York");
    int64_t spring = utc(2026, 3, 8, 7, 0) / 1000, fall = utc(2026, 11, 1, 6, 0) / 1000;
    ASSERT_EQ(tq_zone_offset(z, spring - 1), -18000);
    ASSERT_EQ(tq_zone_offset(z, spring), -14400);
    ASSERT_EQ(tq_zone_offset(z, fall - 1), -14400);
    ASSERT_EQ(tq_zone_offset(z, fall), -18000);
    tq_zone_free(z);
    z = zone("Asia/Kolkata");
    for (int64_t t = utc(2020, 1, 1, 0, 0) / 1000; t < utc(2060, 1, 1, 0, 0) / 1000; t += 86400 * 7)
        ASSERT_EQ(tq_zone_offset(z, t), 19800);
    tq_cron c = cron("0 9 * * *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 5, 1, 12, 0)), utc(2026, 5, 2, 3, 30));
    tq_zone_free(z);
}

/* The footer rules alone agree with the files, hour by hour, north and south. */
TEST(zone_posix_rules_agree_with_the_files)
{
    static const struct {
        const char *name, *rule;
    } cases[] = {
        {"Europe/Berlin", "CET-1CEST,M3.5.0,M10.5.0/3"},
        {"America/New_York", "EST5EDT,M3.2.0,M11.1.0"},
        {"Australia/Sydney", "AEST-10AEDT,M10.1.0,M4.1.0/3"},
        {"America/Santiago", "<-04>4<-03>,M9.1.6/24,M4.1.6/24"},
        {"Asia/Kathmandu", "<+0545>-5:45"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char err[200];
        tq_zone *f = zone(cases[i].name);
        tq_zone *p = tq_zone_posix(cases[i].name, cases[i].rule, err, sizeof err);
        ASSERT_MSG(p, "%s: %s", cases[i].rule, err);
        for (int64_t t = utc(2026, 1, 1, 0, 0) / 1000; t < utc(2028, 1, 1, 0, 0) / 1000; t += 3600)
            ASSERT_MSG(tq_zone_offset(f, t) == tq_zone_offset(p, t), "%s at %lld: %d != %d",
                       cases[i].name, (long long)t, tq_zone_offset(f, t), tq_zone_offset(p, t));
        tq_zone_free(f);
        tq_zone_free(p);
    }
    char err[200];
    ASSERT(!tq_zone_posix("x", "CET-1CEST,M3.5", err, sizeof err));
    ASSERT(!tq_zone_posix("x", "C-1", err, sizeof err));
}

TEST(zone_unknown_or_bad_names_are_refused_clearly)
{
    char err[256];
    ASSERT(!tq_zone_load("Europe/Nowhere", NULL, err, sizeof err));
    ASSERT_STR(err, "unknown time zone: Europe/Nowhere");
    ASSERT(!tq_zone_load("Europe", NULL, err, sizeof err));
    ASSERT_STR(err, "unknown time zone: Europe");
    static const char *const bad[] = {
        "../etc/passwd",  "/etc/passwd",    "Europe/../UTC", "",
        "Europe//Berlin", "Europe/Berlin/", "a b",           ".hidden"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ASSERT_MSG(!tq_zone_load(bad[i], NULL, err, sizeof err), "%s was taken", bad[i]);
        ASSERT_MSG(strstr(err, "not a time zone name"), "%s: %s", bad[i], err);
    }
    static const unsigned char junk[64] = "TZif1";
    ASSERT(!tq_zone_parse("x", junk, sizeof junk, err, sizeof err));
    ASSERT(strstr(err, "version 1"));
    ASSERT(!tq_zone_parse("x", junk + 1, 40, err, sizeof err));
    ASSERT(strstr(err, "not a TZif file"));
    tq_zone *z = zone("Etc/UTC");
    ASSERT_EQ(tq_zone_offset(z, 1800000000), 0);
    tq_zone_free(z);
}

/* ---- ticks across daylight-saving changes ---------------------------------------------------- */

TEST(cron_spring_forward_gap_ticks_once_at_the_gap_end)
{
    tq_zone *z = zone("Europe/Berlin");
    int64_t gap_end = utc(2026, 3, 29, 1, 0);
    tq_cron c = cron("30 2 * * *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 3, 28, 12, 0)), gap_end);
    ASSERT_EQ(tq_cron_next(&c, z, gap_end), utc(2026, 3, 30, 0, 30)); /* 02:30 CEST */
    /* every minute of the skipped hour: one tick, at 03:00 CEST */
    c = cron("* 2 * * *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 3, 29, 0, 30)), gap_end);
    ASSERT_EQ(tq_cron_next(&c, z, gap_end), utc(2026, 3, 30, 0, 0));
    /* hourly: 01:00 CET, then 03:00 CEST (02:00 is the same instant), 04:00 */
    c = cron("@hourly");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 3, 28, 23, 30)), utc(2026, 3, 29, 0, 0));
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 3, 29, 0, 0)), gap_end);
    ASSERT_EQ(tq_cron_next(&c, z, gap_end), utc(2026, 3, 29, 2, 0));
    tq_zone_free(z);
}

TEST(cron_fall_back_repeat_ticks_once)
{
    tq_zone *z = zone("Europe/Berlin");
    tq_cron c = cron("30 2 * * *");
    int64_t first = utc(2026, 10, 25, 0, 30); /* 02:30 CEST */
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 10, 24, 12, 0)), first);
    ASSERT_EQ(tq_cron_next(&c, z, first), utc(2026, 10, 26, 1, 30)); /* not 02:30 CET */
    /* asked from inside the second pass, the repeated time is not found again */
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 10, 25, 1, 10)), utc(2026, 10, 26, 1, 30));
    c = cron("*/20 * * * *");
    int64_t t = utc(2026, 10, 24, 23, 50), prev = t;
    int n = 0;
    while ((t = tq_cron_next(&c, z, t)) < utc(2026, 10, 25, 3, 0)) {
        ASSERT(t > prev);
        prev = t;
        n++;
    }
    /* 00:00-03:00 UTC is 02:00 CEST to 03:00 CET: the walls 02:00-02:40 once, 03:00-03:40 */
    ASSERT_EQ(n, 6);
    tq_zone_free(z);
    z = zone("America/New_York");
    c = cron("30 1 * * *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 11, 1, 0, 0)), utc(2026, 11, 1, 5, 30)); /* EDT */
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 11, 1, 5, 30)), utc(2026, 11, 2, 6, 30));
    c = cron("30 2 * * *");
    ASSERT_EQ(tq_cron_next(&c, z, utc(2026, 3, 8, 0, 0)), utc(2026, 3, 8, 7, 0)); /* gap */
    tq_zone_free(z);
}

static int count_ticks(const tq_cron *c, const tq_zone *z, int64_t from, int64_t to)
{
    int n = 0;
    for (int64_t t = tq_cron_next(c, z, from - 1); t < to; t = tq_cron_next(c, z, t)) n++;
    return n;
}

TEST(cron_hourly_on_the_days_clocks_change)
{
    tq_zone *z = zone("Europe/Berlin");
    tq_cron c = cron("@hourly");
    /* local midnight to midnight */
    ASSERT_EQ(count_ticks(&c, z, utc(2026, 3, 28, 23, 0), utc(2026, 3, 29, 22, 0)), 23);
    ASSERT_EQ(count_ticks(&c, z, utc(2026, 10, 24, 22, 0), utc(2026, 10, 25, 23, 0)), 24);
    ASSERT_EQ(count_ticks(&c, z, utc(2026, 6, 1, 22, 0), utc(2026, 6, 2, 22, 0)), 24);
    tq_zone_free(z);
}

/* Ticks strictly increase, and each is its expression's wall time (or a
 * gap's end), over years in several zones. */
TEST(cron_ticks_increase_and_match_their_wall_time)
{
    static const char *const zones[] = {"Europe/Berlin", "America/New_York", "Australia/Sydney",
                                        "Asia/Kathmandu", "America/Santiago"};
    static const char *const exprs[] = {"*/30 * * * *", "0 2 * * *", "15 1-3 * * SUN", "0 0 1 * *"};
    for (size_t i = 0; i < sizeof zones / sizeof zones[0]; i++) {
        tq_zone *z = zone(zones[i]);
        for (size_t k = 0; k < sizeof exprs / sizeof exprs[0]; k++) {
            tq_cron c = cron(exprs[k]);
            int64_t t = utc(2025, 12, 1, 0, 0);
            for (int n = 0; n < 3000 && t < utc(2029, 1, 1, 0, 0); n++) {
                int64_t next = tq_cron_next(&c, z, t);
                ASSERT_MSG(next > t, "%s %s: %lld after %lld", zones[i], exprs[k], (long long)next,
                           (long long)t);
                int64_t s = next / 1000, local = s + tq_zone_offset(z, s);
                int64_t before = s - 1 + tq_zone_offset(z, s - 1);
                bool at_gap = local - before > 1; /* the instant a gap ends */
                ASSERT_MSG(at_gap || minute_matches(&c, local * 1000), "%s %s: %lld", zones[i],
                           exprs[k], (long long)next);
                t = next;
            }
        }
        tq_zone_free(z);
    }
}
