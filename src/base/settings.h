// SPDX-License-Identifier: Apache-2.0
/* The settings of queues and tenants, declared once.
 *
 * Each row names a setting and says everything the rest of tenq needs to
 * know of it: its field (the engine's struct member, the API's JSON member
 * and the store's column are all this name), the CLI's flag, its kind, its
 * default, its bounds, its words (for a choice), a label and a line of help.
 * The engine's defaults and checks (engine/settings.c), the API's reader and
 * writer (api/api_settings.c), both stores' writes and loads, the CLI's
 * flags (cli/admin.c) and the dashboard's forms (GET /v1/settings) all come
 * from these rows: adding a setting touches its row, the engine's struct
 * member, a migration for its column, and the code that acts on it.
 *
 * XX(field, flag, kind, default, min, max, words, label, help)
 *   kind   CHOICE: one of `words` (a NULL-terminated list), stored and shown
 *                  as the word, held as its index;
 *          MS:     a duration in milliseconds (the CLI takes 500ms, 5m, 7d);
 *          COUNT:  a whole number;
 *          BYTES:  a size in bytes (the CLI takes 64KiB, 1MiB);
 *          BOOL:   true or false;
 *          LIMIT:  a whole number, or null (unlimited: TQ_UNLIMITED).
 * Bounds are checked as given; rules across settings (a backoff's maximum
 * above its base) are the engine's to check. */
#ifndef TENQ_BASE_SETTINGS_H
#define TENQ_BASE_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TQ_UNLIMITED        UINT32_MAX
#define TQ_DAY_MS           (24LL * 3600 * 1000)
#define TQ_ATTEMPTS_MAX     1000
#define TQ_WEIGHT_MAX       1000
#define TQ_RATE_BURST_MAX   1000000
/* The largest max_queued_bytes: 1 PiB. */
#define TQ_QUEUED_BYTES_MAX (1LL << 50)
/* The largest concurrency limit a key may have. */
#define TQ_KEY_LIMIT_MAX    1000000

#define TQ_WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

#define TQ_QUEUE_SETTINGS(XX)                                                                      \
    XX(order, "order", CHOICE, 0, 0, 1, TQ_WORDS("fifo", "fair"), "Order",                         \
       "fifo: oldest first; fair: tenants take turns by weight")                                   \
    XX(delivery, "delivery", CHOICE, 0, 0, 2,                                                      \
       TQ_WORDS("at-least-once", "at-most-once", "exactly-once"), "Delivery",                      \
       "at-least-once: failed and expired attempts retry; at-most-once: never handed out twice; "  \
       "exactly-once (PostgreSQL): retried as at-least-once, each lease stored before it is "      \
       "handed out, so a handler may complete its job in its own transaction (tenq.complete)")     \
    XX(lease_ms, "lease", MS, 300000, 100, 7 * TQ_DAY_MS, NULL, "Lease",                           \
       "a lease not renewed by then counts as a failed attempt")                                   \
    XX(max_attempts, "max-attempts", COUNT, 25, 1, TQ_ATTEMPTS_MAX, NULL, "Max attempts",          \
       "a job dies when an attempt fails at this count")                                           \
    XX(backoff, "backoff", CHOICE, 0, 0, 2, TQ_WORDS("default", "fixed", "exponential"),           \
       "Backoff",                                                                                  \
       "the delay before a retry: default (attempt^4 + 15 s + jitter), fixed or exponential")      \
    XX(backoff_base_ms, "backoff-base", MS, 1000, 0, 30 * TQ_DAY_MS, NULL, "Backoff base",         \
       "fixed: the delay every time; exponential: base x 2^attempt")                               \
    XX(backoff_max_ms, "backoff-max", MS, 3600000, 0, 365 * TQ_DAY_MS, NULL, "Backoff max",        \
       "exponential backoff stops growing here (at least the base)")                               \
    XX(merge, "merge", BOOL, 0, 0, 1, NULL, "Merge payloads",                                      \
       "a lane's new payloads join its waiting job instead of making another")                     \
    XX(dedup_window_ms, "dedup-window", MS, 600000, 0, 365 * TQ_DAY_MS, NULL, "Dedup window",      \
       "how long a unique key holds")                                                              \
    XX(retention_ms, "retention", MS, 604800000, 0, 100 * 365 * TQ_DAY_MS, NULL, "Retention",      \
       "finished jobs are pruned after this; 0 keeps them forever")                                \
    XX(max_payload_bytes, "max-payload", BYTES, 1048576, 2, 64 * 1024 * 1024, NULL, "Max payload", \
       "the largest args a job may carry")                                                         \
    XX(tenant_cap, "tenant-cap", LIMIT, TQ_UNLIMITED, 1, TQ_UNLIMITED - 1, NULL, "Per-tenant cap", \
       "jobs of one tenant leased or running in this queue at once")                               \
    XX(timeout_ms, "timeout", MS, 0, 0, 7 * TQ_DAY_MS, NULL, "Timeout",                            \
       "an attempt still running this long after its lease fails, heartbeats or not; 0: none; "    \
       "at least a third of the lease (workers heartbeat that often)")                             \
    XX(paused, "paused", BOOL, 0, 0, 1, NULL, "Paused",                                            \
       "no job of this queue is leased while it is paused; submits are taken as always")           \
    XX(rate, "rate", LIMIT, TQ_UNLIMITED, 1, TQ_UNLIMITED - 1, NULL, "Rate",                       \
       "jobs of this queue started per rate period, all tenants together; none: no limit")         \
    XX(tenant_rate, "tenant-rate", LIMIT, TQ_UNLIMITED, 1, TQ_UNLIMITED - 1, NULL,                 \
       "Per-tenant rate", "jobs of one tenant started in this queue per rate period")              \
    XX(rate_period_ms, "rate-period", MS, 1000, 1, TQ_DAY_MS, NULL, "Rate period",                 \
       "the period of rate and tenant_rate")                                                       \
    XX(rate_burst, "rate-burst", LIMIT, TQ_UNLIMITED, 1, TQ_RATE_BURST_MAX, NULL, "Rate burst",    \
       "starts that may come at once after a quiet spell; none: a whole period's worth")           \
    XX(max_queued, "max-queued", LIMIT, TQ_UNLIMITED, 0, TQ_UNLIMITED - 1, NULL, "Max queued",     \
       "unfinished jobs this queue holds at most, all tenants together; a submit past it is "      \
       "refused (429 quota_exceeded); none: no limit")                                             \
    XX(max_queued_bytes, "max-queued-bytes", BYTES, 0, 0, TQ_QUEUED_BYTES_MAX, NULL,               \
       "Max queued bytes",                                                                         \
       "bytes of args (and payloads) its unfinished jobs hold at most, all tenants together; 0: "  \
       "no limit")                                                                                 \
    XX(concurrency_limit, "concurrency-limit", COUNT, 1, 1, TQ_KEY_LIMIT_MAX, NULL,                \
       "Concurrency limit",                                                                        \
       "jobs naming a concurrency key without a limit (and without a key setting) run this many "  \
       "at once")                                                                                  \
    XX(aging_ms, "aging", MS, 0, 0, 30 * TQ_DAY_MS, NULL, "Aging",                                 \
       "a ready job's priority rises one step every aging_ms it waits (from its run_at), up to "   \
       "aging_cap; 0: none")                                                                       \
    XX(aging_cap, "aging-cap", COUNT, 32767, -32768, 32767, NULL, "Aging cap",                     \
       "the priority aging raises a job to at most; jobs of this priority or above never rise")

#define TQ_TENANT_SETTINGS(XX)                                                                     \
    XX(slots, "slots", LIMIT, TQ_UNLIMITED, 0, TQ_UNLIMITED - 1, NULL, "Slots",                    \
       "jobs of this tenant leased or running at once, over every queue; 0 pauses it")             \
    XX(weight, "weight", COUNT, 1, 1, TQ_WEIGHT_MAX, NULL, "Weight",                               \
       "its share in fair queues, against other tenants' weights")                                 \
    XX(rate, "rate", LIMIT, TQ_UNLIMITED, 1, TQ_UNLIMITED - 1, NULL, "Rate",                       \
       "jobs of this tenant started per rate period, over every queue; none: no limit")            \
    XX(rate_period_ms, "rate-period", MS, 1000, 1, TQ_DAY_MS, NULL, "Rate period",                 \
       "the period of rate")                                                                       \
    XX(rate_burst, "rate-burst", LIMIT, TQ_UNLIMITED, 1, TQ_RATE_BURST_MAX, NULL, "Rate burst",    \
       "starts that may come at once after a quiet spell; none: a whole period's worth")           \
    XX(max_queued, "max-queued", LIMIT, TQ_UNLIMITED, 0, TQ_UNLIMITED - 1, NULL, "Max queued",     \
       "unfinished jobs this tenant holds at most, over every queue; a submit past it is "         \
       "refused (429 quota_exceeded); none: no limit")                                             \
    XX(max_queued_bytes, "max-queued-bytes", BYTES, 0, 0, TQ_QUEUED_BYTES_MAX, NULL,               \
       "Max queued bytes",                                                                         \
       "bytes of args (and payloads) its unfinished jobs hold at most, over every queue; 0: no "   \
       "limit")

/* The settings of a key of a tenant, or of every key that begins with a
 * prefix (docs/SEMANTICS.md, "Keyed limits"): each wins over what the jobs
 * naming the key say; null leaves it to them. */
#define TQ_KEY_SETTINGS(XX)                                                                        \
    XX(concurrency, "concurrency", LIMIT, TQ_UNLIMITED, 1, TQ_KEY_LIMIT_MAX, NULL, "Concurrency",  \
       "jobs naming this key as a concurrency key that run at once; null: as the jobs say")        \
    XX(rate, "rate", LIMIT, TQ_UNLIMITED, 1, TQ_UNLIMITED - 1, NULL, "Rate",                       \
       "units the starts of jobs naming this key as a rate key take per rate period (a job's "     \
       "cost is its units); null: as the jobs say")                                                \
    XX(rate_period_ms, "rate-period", MS, 1000, 1, TQ_DAY_MS, NULL, "Rate period",                 \
       "the period of rate")                                                                       \
    XX(rate_burst, "rate-burst", LIMIT, TQ_UNLIMITED, 1, TQ_RATE_BURST_MAX, NULL, "Rate burst",    \
       "units that may start at once after a quiet spell; null: a whole period's worth")

typedef enum {
    TQ_SET_CHOICE,
    TQ_SET_MS,
    TQ_SET_COUNT,
    TQ_SET_BYTES,
    TQ_SET_BOOL,
    TQ_SET_LIMIT
} tq_setting_kind;

/* One row, as code reads it.  off and size place the field in the
 * engine's struct (engine/settings.c fills them; 0 elsewhere). */
typedef struct tq_setting {
    const char *name, *flag;
    tq_setting_kind kind;
    long long def, min, max;
    const char *const *words; /* CHOICE: the words, NULL-terminated */
    const char *label, *help;
    size_t off;
    unsigned char size; /* 1 (bool), 4 (choice, count, limit, bytes) or 8 (ms) */
} tq_setting;

/* The rows without their places (for the CLI, which has no engine). */
#define TQ_SETTING_ROW(f, fl, k, d, lo, hi, w, lab, h)                                             \
    {#f, fl, TQ_SET_##k, (long long)(d), (long long)(lo), (long long)(hi), w, lab, h, 0, 0},

/* The kind's name, as GET /v1/settings says it: "choice", "ms", ... */
const char *tq_setting_kind_name(tq_setting_kind k);
/* A choice's word for its index, or NULL; the index of a word, or -1. */
const char *tq_setting_word(const tq_setting *s, long long v);
int tq_setting_word_index(const tq_setting *s, const char *word);
/* "fifo|fair": a choice's words as the CLI shows them. */
void tq_setting_words_text(const tq_setting *s, char *buf, size_t len);
/* Whether v is a value of the setting (its bounds; LIMIT's unlimited). */
bool tq_setting_in_range(const tq_setting *s, long long v);
/* "lease_ms must be from 100 to 604800000", "order must be fifo or fair"... */
void tq_setting_range_text(const tq_setting *s, char *buf, size_t len);

#endif
