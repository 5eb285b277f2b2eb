// SPDX-License-Identifier: Apache-2.0
/* engine — tenq's scheduler: a pure, in-memory state machine.
 *
 * No I/O, no clock reads, no threads, no globals.  Every call that depends on
 * time takes `now` (milliseconds since the Unix epoch, never decreasing from
 * one call to the next) from its caller, so tests drive time by hand.  Given
 * the same seed and the same calls, it makes the same decisions.
 *
 * The engine owns tenants, queues, lanes, jobs, timers and leases, and decides
 * which job runs next in O(log n) in the number of jobs, tenants and lanes.
 * It keeps every unfinished job (scheduled, blocked, ready, leased, running)
 * and every dead one (the morgue).  Finished jobs (succeeded, cancelled,
 * merged) leave memory once the caller has read the changes that report them.
 *
 * Every mutation appends what it changed to the change list (see
 * engine_changes): the store persists exactly those, the API wakes waiters.
 *
 * Errors: functions return 0 or a negative TENQ_E* code, with details in an
 * `engine_err` when the caller passes one.  A call that fails changes nothing.
 *
 * Ownership: the engine copies every string and buffer it is given.  Pointers
 * it hands out (job handles, strings inside engine_job_info, change entries)
 * stay valid until the next call that mutates the engine, unless said
 * otherwise.
 */
#ifndef TENQ_ENGINE_H
#define TENQ_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/settings.h"
#include "tenq/errors.h"
#include "tenq/states.h"

typedef struct engine engine_t;
typedef struct engine_job engine_job;

#define ENGINE_UNLIMITED          TQ_UNLIMITED /* for slots and tenant_cap */
#define ENGINE_NAME_MAX           64           /* tenant and queue names */
#define ENGINE_TYPE_MAX           128
#define ENGINE_KEY_MAX            256 /* lane keys, unique keys, idempotency keys */
#define ENGINE_PRIORITY_MIN       (-32768)
#define ENGINE_PRIORITY_MAX       32767
#define ENGINE_WEIGHT_MAX         TQ_WEIGHT_MAX
#define ENGINE_ATTEMPTS_MAX       TQ_ATTEMPTS_MAX
/* run_at may be at most about ten years ahead */
#define ENGINE_RUN_AT_HORIZON_MS  (10LL * 366 * 24 * 3600 * 1000)
/* a job's own timeout_ms is at most this */
#define ENGINE_TIMEOUT_MAX_MS     (7 * TQ_DAY_MS)
/* a merged job takes at most this many payloads; then a new job starts */
#define ENGINE_MERGE_MAX_PAYLOADS 10000
/* a job depends on at most this many parents (depends_on) */
#define ENGINE_PARENTS_MAX        100
/* a job names at most this many concurrency keys, and as many rate keys */
#define ENGINE_JOB_KEYS_MAX       4
/* a tenant keeps at most this many key settings that name a prefix ("account:*") */
#define ENGINE_KEY_PREFIXES_MAX   100

/* What a parent's death (the morgue), cancellation or merging does to a
 * child still waiting for it: cancel the child (and so its own children
 * of the same policy), or count that parent as done. */
typedef enum { ENGINE_DEPS_CANCEL, ENGINE_DEPS_RUN } engine_deps_policy;
/* "cancel", "run"; and back (-1: neither). */
const char *engine_deps_policy_name(engine_deps_policy p);
int engine_deps_policy_parse(const char *name);

/* Job states: the rows of tenq/states.h, in its order (the LIVE ones
 * first, the FINAL ones last). */
typedef enum engine_state {
#define ENGINE_STATE_ENUM_(name, word, abi, kind, finished, help) ENGINE_##name,
    TENQ_STATE_TABLE(ENGINE_STATE_ENUM_)
#undef ENGINE_STATE_ENUM_
        ENGINE_NSTATES
} engine_state;

const char *engine_state_name(engine_state s);
/* Returns the state for a name, or -1. */
int engine_state_parse(const char *name);
/* A FINAL state (tenq/states.h): kept as history only.  The table puts
 * every FINAL row after the LIVE ones (engine.c checks it). */
static inline bool engine_state_finished(engine_state s)
{
    return s >= ENGINE_SUCCEEDED;
}

/* An error with the field it is about (NULL when it is about no one field). */
typedef struct engine_err {
    int code;
    const char *field;
    char message[200];
} engine_err;

/* Fills an engine_err (err may be NULL). */
void engine_errf(engine_err *err, int code, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- settings ---------------------------------------------------------- */

typedef enum { ENGINE_ORDER_FIFO, ENGINE_ORDER_FAIR } engine_order;
/* exactly-once: retried as at-least-once, but every lease is stored before it
 * is answered, so that the store always holds the current token (what
 * tenq.complete checks in an application's transaction). */
typedef enum { ENGINE_AT_LEAST_ONCE, ENGINE_AT_MOST_ONCE, ENGINE_EXACTLY_ONCE } engine_delivery;
typedef enum {
    ENGINE_BACKOFF_DEFAULT,    /* attempt^4 + 15 + rand(0..29) * (attempt + 1) seconds */
    ENGINE_BACKOFF_FIXED,      /* base_ms every time */
    ENGINE_BACKOFF_EXPONENTIAL /* base_ms * 2^attempt, at most max_ms, +-10% jitter */
} engine_backoff_kind;

typedef struct engine_queue_settings {
    engine_order order;
    engine_delivery delivery;
    int64_t lease_ms;
    uint32_t max_attempts;
    engine_backoff_kind backoff;
    int64_t backoff_base_ms;
    int64_t backoff_max_ms;
    bool merge;
    int64_t dedup_window_ms;
    int64_t retention_ms; /* 0: keep forever (the store prunes, not the engine) */
    uint32_t max_payload_bytes;
    uint32_t tenant_cap; /* per-tenant cap on leased+running in this queue */
    int64_t timeout_ms;  /* an attempt fails this long after its lease; 0: none */
    bool paused;         /* no job of the queue is leased */
    /* Rate limits (GCRA, rate.c): at most `rate` starts of the queue and
     * `tenant_rate` of each tenant in it per rate_period_ms, with bursts of
     * up to rate_burst (ENGINE_UNLIMITED: the rate itself). */
    uint32_t rate, tenant_rate;
    int64_t rate_period_ms;
    uint32_t rate_burst;
    /* Quotas (quota.c): unfinished jobs and their args' bytes the queue
     * holds at most, all tenants together (ENGINE_UNLIMITED, 0: none). */
    uint32_t max_queued;
    int64_t max_queued_bytes;
    /* A concurrency key a job names without a limit (and that no key
     * setting limits) lets this many of its jobs run at once (keys.c). */
    uint32_t concurrency_limit;
    /* Priority aging (aging.c): a ready job of a priority below aging_cap
     * ranks as its priority + (now - run_at) / aging_ms, at most aging_cap
     * (aging_ms 0: none). */
    int64_t aging_ms;
    int64_t aging_cap;
} engine_queue_settings;

typedef struct engine_tenant_settings {
    uint32_t slots; /* 0 pauses the tenant; ENGINE_UNLIMITED */
    uint32_t weight;
    uint32_t rate; /* starts per rate_period_ms over every queue; ENGINE_UNLIMITED */
    int64_t rate_period_ms;
    uint32_t rate_burst;
    /* Quotas (quota.c): as the queue's, over every queue of the tenant. */
    uint32_t max_queued;
    int64_t max_queued_bytes;
} engine_tenant_settings;

typedef struct engine_config {
    uint64_t seed; /* backoff jitter and hash keys */
    engine_tenant_settings tenant_defaults;
    engine_queue_settings queue_defaults;
    bool strict_tenants; /* submit to an unknown tenant is an error */
    /* New leases get tokens of at least this.  A server gives every run a
     * higher floor (its start count << 32): a lease answered just before a
     * crash, and so never stored, can then never be answered again with the
     * same token, and its late ack is refused. */
    uint64_t token_floor;
    int64_t idempotency_ttl_ms; /* 24 h */
    /* 1, or 2 when the store also numbers jobs (PostgreSQL: tenq.submit in
     * an application's transaction takes odd ids; the engine's are even). */
    uint32_t id_step;
    /* When this engine's life began (the load's time): a rate limit counts
     * as used up then, so that starts before a restart and after it stay
     * within the limit together (rate.c).  0: limits begin full. */
    int64_t start_ms;
    /* Args in memory at most (bytes; 0: every job's args stay in memory):
     * past three quarters of it, new jobs' args stay out of memory, in the
     * store's rows, and the rest is a cache of those read ahead (args.c). */
    size_t args_budget;
    /* How long an event that woke no job is kept for a job that waits for
     * its key later (engine_event_send; 0: not kept). */
    int64_t event_window_ms;
} engine_config;

/* The defaults of SEMANTICS.md. */
void engine_config_defaults(engine_config *c);
void engine_queue_settings_defaults(engine_queue_settings *s);
void engine_tenant_settings_defaults(engine_tenant_settings *s);
/* Checks every field; 0 or TENQ_EINVALID naming the field. */
int engine_queue_settings_check(const engine_queue_settings *s, engine_err *err);
int engine_tenant_settings_check(const engine_tenant_settings *s, engine_err *err);

/* The settings of a key of a tenant, or of every key with a prefix
 * (TQ_KEY_SETTINGS): ENGINE_UNLIMITED leaves a field to the jobs. */
typedef struct engine_key_settings {
    uint32_t concurrency;
    /* a rate key's GCRA: rate units per rate_period_ms, bursts of
     * rate_burst (ENGINE_UNLIMITED: the rate) */
    uint32_t rate;
    int64_t rate_period_ms;
    uint32_t rate_burst;
} engine_key_settings;
void engine_key_settings_defaults(engine_key_settings *s);
int engine_key_settings_check(const engine_key_settings *s, engine_err *err);

/* The rows of base/settings.h, placed in the structs above (settings.c):
 * what the API, the stores and the dashboard read and write settings by. */
extern const tq_setting engine_queue_setting_rows[];
extern const size_t engine_queue_setting_count;
extern const tq_setting engine_tenant_setting_rows[];
extern const size_t engine_tenant_setting_count;
extern const tq_setting engine_key_setting_rows[];
extern const size_t engine_key_setting_count;
/* A setting's value in a settings struct (a choice as its index, a bool as
 * 0 or 1), and the same set. */
long long engine_setting_get(const tq_setting *s, const void *settings);
void engine_setting_set(const tq_setting *s, void *settings, long long v);
/* Name rules (SEMANTICS.md, "Names"), one function per kind of name,
 * used wherever a name is read: [A-Za-z0-9._-]{1,64} for tenants and
 * queues (and schedules); 1-128 bytes, no control character or space, for
 * types; 1-256 bytes, no control character, for keys (key, unique_key,
 * idempotency_key).  NULL is none of them. */
bool engine_name_valid(const char *s);
bool engine_type_valid(const char *s);
bool engine_key_valid(const char *s);
typedef enum { ENGINE_NAME, ENGINE_TYPE, ENGINE_KEY } engine_name_kind;
/* 0 when s keeps its kind's rule, else TENQ_EINVALID with err naming
 * field, in the rule's one wording ("queue: names are 1-64 of ..."): the
 * wordings, which the SQL of applications' transactions says too. */
#define ENGINE_STR_(x)   #x
#define ENGINE_STR(x)    ENGINE_STR_(x)
#define ENGINE_NAME_RULE "names are 1-" ENGINE_STR(ENGINE_NAME_MAX) " of A-Z a-z 0-9 . _ -"
#define ENGINE_TYPE_RULE "1-" ENGINE_STR(ENGINE_TYPE_MAX) " printable characters without spaces"
#define ENGINE_KEY_RULE  "1-" ENGINE_STR(ENGINE_KEY_MAX) " bytes without control characters"
int engine_check_name(engine_name_kind kind, const char *field, const char *s, engine_err *err);
/* A W3C trace context (traceparent): version-traceid-parentid-flags in
 * lowercase hex, 2-32-16-2 digits, version not ff, neither id all zeros. */
bool engine_traceparent_valid(const char *s);

engine_t *engine_create(const engine_config *cfg);
void engine_destroy(engine_t *e); /* NULL is fine */

/* ---- jobs as plain records --------------------------------------------- */

typedef struct engine_payload {
    double score;
    const char *data; /* JSON text */
    uint32_t len;
} engine_payload;

/* A key a job names to share a limit with the other jobs of its tenant that
 * name it (keys.c, docs/SEMANTICS.md "Keyed limits").  A concurrency key:
 * at most `limit` of the jobs naming it leased or running at once, across
 * every queue and type of the tenant (0: not given; the key's setting, or
 * else its queue's concurrency_limit). */
typedef struct engine_limit_key {
    const char *key; /* 1-256 bytes, no control characters (a key's rule) */
    uint32_t limit;  /* concurrency: jobs at once; 0: not given */
} engine_limit_key;

/* A rate key: each start of a job naming it takes `cost` units of the
 * key's rate, a GCRA bucket of `rate` units per `rate_period_ms` with
 * bursts of `rate_burst` units (keys.c).  The rate in force is the key's
 * setting's, else what its last submit gave (rate 0: not given). */
typedef struct engine_rate_key {
    const char *key;
    uint32_t cost;          /* units a start takes: 1 to 1,000,000; 0: 1 */
    uint32_t rate;          /* 0: not given */
    int64_t rate_period_ms; /* 0: 1000 */
    uint32_t rate_burst;    /* 0: the rate */
} engine_rate_key;

/* The name of a job's i-th concurrency key (i < ENGINE_JOB_KEYS_MAX), or
 * of its member: part 0 "concurrency_keys[i]", 1 "...key", 2 "...limit"
 * (the fields refusals name). */
const char *engine_ckey_field(uint32_t i, int part);
/* The same for rate keys: part 0 "rate_keys[i]", 1 "...key", 2 "...cost",
 * 3 "...rate", 4 "...rate_period_ms", 5 "...rate_burst". */
const char *engine_rkey_field(uint32_t i, int part);

/* Every field of a job, as the store writes it and the API shows it.  Filled
 * by engine_job_get(); also what engine_load_job() takes.  Strings are
 * NUL-terminated (NULL when absent). */
typedef struct engine_job_info {
    uint64_t id;
    const char *tenant, *queue, *type;
    const char *key;
    const char *args; /* JSON text; NULL on jobs that carry payloads, or args_missing */
    uint32_t args_len;
    /* The args are out of memory and not read in (engine_args_put): only
     * their length is known; the store's row holds them. */
    bool args_missing;
    /* A plain job: no key, no unique key, no batch, no payloads, no parents
     * and no children.  Waiting in line (ready or scheduled), such a job
     * touches no other job, so a load may bring it in after the server has
     * begun to serve (its row's live is 2: docs/schema.md). */
    bool plain;
    const engine_payload *payloads; /* sorted by score */
    uint32_t n_payloads;
    int32_t priority;
    engine_state state;
    uint32_t attempts, max_attempts;
    int64_t run_at;
    int64_t created_at, ready_at, leased_at, started_at, finished_at; /* 0: not yet */
    const char *worker;
    const char *error;
    const char *result, *stats; /* JSON text, set by ack */
    const char *progress;       /* JSON text, set by heartbeat */
    const char *unique_key, *idempotency_key;
    const char *traceparent; /* the submitter's W3C trace context, or NULL */
    int64_t timeout_ms;      /* the job's own timeout (0: its queue's) */
    uint64_t token;          /* fencing token of the current (or last) lease */
    int64_t lease_until;     /* while leased or running */
    bool cancel_requested;
    uint64_t merged_into; /* state MERGED: the job that took its payloads */
    uint64_t lane_seq;    /* order within its lane: the id, or later if requeued */
    /* Dependencies (resident jobs only; NULL/0 from the store's rows): the
     * parents it was submitted with, in order, and the children that named
     * it, in submission order. */
    const uint64_t *parents;
    uint32_t n_parents;
    const uint64_t *children;
    uint32_t n_children;
    engine_deps_policy on_parent_failure;
    uint64_t batch; /* the batch it belongs to, or whose callback it is; 0: none */
    int batch_role; /* ENGINE_BATCH_MEMBER, or 1 + the engine_callback_kind it is */
    /* Keyed limits, as submitted (a limit not given is 0) */
    const engine_limit_key *concurrency_keys;
    uint32_t n_concurrency_keys;
    const engine_rate_key *rate_keys;
    uint32_t n_rate_keys;
    int64_t expire_at; /* never leased at or after it; 0: none */
    /* made by a debounced submit: later ones of its key replace its args
     * while it waits, starting it no later than debounce_until (0: none) */
    bool debounced;
    int64_t debounce_until;
    /* Durable steps (steps.c; resident jobs only, 0 from the store's rows):
     * how many it stored, and the job that awaits it (run_child). */
    uint32_t n_steps;
    uint64_t awaited_by;
} engine_job_info;

/* Fills *out with the job's fields (pointers into the engine). */
void engine_job_get(const engine_job *j, engine_job_info *out);

/* Why a job that is neither leased nor finished is not handed out now. */
typedef enum {
    ENGINE_WAIT_NONE,            /* not waiting: leased, running or finished */
    ENGINE_WAIT_SCHEDULED,       /* its run_at has not come (until) */
    ENGINE_WAIT_BACKOFF,         /* a retry after a failed attempt, at until */
    ENGINE_WAIT_LANE,            /* its lane runs another job first (blocked_by) */
    ENGINE_WAIT_TENANT_SLOTS,    /* its tenant runs active of its limit slots (0: paused) */
    ENGINE_WAIT_TENANT_CAP,      /* its tenant runs active of the queue's per-tenant cap */
    ENGINE_WAIT_QUEUE_PAUSED,    /* its queue is paused */
    ENGINE_WAIT_TENANT_PAUSED,   /* its queue is paused for its tenant */
    ENGINE_WAIT_TENANT_RATE,     /* its tenant's rate allows no start before until */
    ENGINE_WAIT_QUEUE_RATE,      /* its queue's rate allows no start before until */
    ENGINE_WAIT_PAIR_RATE,       /* its queue's per-tenant rate allows none before until */
    ENGINE_WAIT_WORKER,          /* it may go now: it waits for a lease (asked_at: the last) */
    ENGINE_WAIT_PARENTS,         /* parents (ids) have not succeeded yet */
    ENGINE_WAIT_SLEEP,           /* a durable sleep of its handler, until */
    ENGINE_WAIT_EVENT,           /* its handler waits for an event (event), at most until */
    ENGINE_WAIT_CHILD,           /* its handler waits for the end of a child job (child) */
    ENGINE_WAIT_CONCURRENCY_KEY, /* key has limit jobs running (active): held_by is one */
    ENGINE_WAIT_RATE_KEY         /* key's rate allows its next start at until */
} engine_wait_kind;

typedef struct engine_wait {
    engine_wait_kind kind;
    int64_t until;          /* SCHEDULED, BACKOFF, *_RATE, RATE_KEY: the time it may go */
    uint64_t blocked_by;    /* LANE: the job at the head of its lane */
    uint32_t active, limit; /* TENANT_SLOTS, TENANT_CAP, CONCURRENCY_KEY */
    const char *key;        /* CONCURRENCY_KEY, RATE_KEY: the key */
    uint64_t held_by;       /* CONCURRENCY_KEY: a job that holds it */
    int64_t asked_at;       /* WORKER: the last lease that could have taken it; 0: none yet */
    uint32_t n_parents;     /* PARENTS: the parents still unfinished */
    uint64_t parents[ENGINE_PARENTS_MAX];
    const char *event; /* EVENT: the key */
    uint64_t child;    /* CHILD: the job awaited */
} engine_wait;

void engine_job_wait(const engine_job *j, engine_wait *out);
/* "scheduled", "backoff", "lane", "tenant_slots", "tenant_cap", "queue_paused",
 * "tenant_paused", "tenant_rate", "queue_rate", "queue_tenant_rate", "worker", "parents",
 * "sleep", "event", "child", "concurrency_key", "rate_key"; NULL for NONE. */
const char *engine_wait_name(engine_wait_kind k);
uint64_t engine_job_id(const engine_job *j);
engine_state engine_job_state(const engine_job *j);
const char *engine_job_tenant(const engine_job *j);
const char *engine_job_queue(const engine_job *j);

/* A resident job (unfinished or dead, or finished in the current change
 * list), or NULL. */
engine_job *engine_find(engine_t *e, uint64_t id);

/* ---- submitting -------------------------------------------------------- */

typedef struct engine_submit_req {
    const char *tenant, *queue, *type; /* required */
    const char *key;                   /* lane; optional */
    const char *args;                  /* JSON text; NULL means {} */
    uint32_t args_len;
    bool has_priority;
    int32_t priority;
    int64_t run_at; /* 0 or past: now */
    const char *unique_key;
    bool unique; /* unique_key = hash of type and args */
    const char *idempotency_key;
    const char *traceparent; /* W3C trace context, kept and handed out with the job */
    uint32_t max_attempts;   /* 0: the queue's */
    int64_t timeout_ms;      /* 0: the queue's; else at least a third of its lease */
    bool has_score;
    double score; /* merging order; default now */
    /* 0, or the job's id as the store gave it (a job an application's
     * transaction submitted); it must be new to the engine. */
    uint64_t id;
    /* Parents (at most ENGINE_PARENTS_MAX): each a job id, or (index >= 0)
     * the job made by an earlier request of the same engine_submit_many.
     * Each must be resident and of the same tenant: unfinished (the job
     * waits for it), or dead (with policy run it counts as done; with
     * cancel the submit is refused, 409).  A job no longer resident
     * (finished) is refused, 409; one that never was, 404. */
    const struct engine_dep_ref *depends_on;
    uint32_t n_depends_on;
    engine_deps_policy on_parent_failure;
    /* Concurrency keys (at most ENGINE_JOB_KEYS_MAX, each named once): the
     * job runs only while each has room (keys.c). */
    const engine_limit_key *concurrency_keys;
    uint32_t n_concurrency_keys;
    /* Rate keys (at most ENGINE_JOB_KEYS_MAX, each named once): each start
     * takes its cost from each key's rate (keys.c). */
    const engine_rate_key *rate_keys;
    uint32_t n_rate_keys;
    /* Expiry: the job is never leased at or after expire_at (ms since the
     * epoch; start_within_ms: now + that); one not leased by then ends
     * `expired`.  0: none; not both. */
    int64_t expire_at, start_within_ms;
    /* Debounce (needs a key): the pending job of the key's lane made by a
     * debounced submit takes this submit's args (a merging queue: its
     * payload) and starts debounce_ms from now, but no later than
     * debounce_max_ms after the first submit of its quiet period (0: no
     * maximum); else a new job starting debounce_ms from now. */
    int64_t debounce_ms, debounce_max_ms;
} engine_submit_req;

typedef struct engine_dep_ref {
    uint64_t id;
    int32_t index; /* >= 0: the job of that earlier request (id unused); -1: id */
} engine_dep_ref;

typedef struct engine_submit_res {
    int code; /* 0 or TENQ_E*; err has the details */
    engine_err err;
    uint64_t id;
    engine_state state;
    bool created, duplicate, merged;
    bool replayed;  /* answered from an earlier submit with the same idempotency_key */
    bool debounced; /* it replaced the pending job of its key (debounce_ms): id is that job */
} engine_submit_res;

/* The checks of a submit alone, changing nothing (a job to be submitted
 * later, e.g. by a schedule): 0, or the refusal in err naming the field. */
int engine_submit_check(engine_t *e, int64_t now, const engine_submit_req *req, engine_err *err);
/* Submits one job.  Returns res->code. */
int engine_submit(engine_t *e, int64_t now, const engine_submit_req *req, engine_submit_res *res);
/* Submits reqs[i] as the i-th job of a request whose earlier jobs were
 * answered in res[0..i) (what depends_on's indexes name); its answer goes
 * in res[i].  Returns res[i].code. */
int engine_submit_at(engine_t *e, int64_t now, const engine_submit_req *req, engine_submit_res *res,
                     size_t i);
/* Submits n jobs in order, each answered at its index; one bad job fails only
 * itself.  Returns how many were accepted. */
size_t engine_submit_many(engine_t *e, int64_t now, const engine_submit_req *reqs, size_t n,
                          engine_submit_res *res);
/* Quotas (docs/SEMANTICS.md, "Quotas"): 0 when the n requests (those whose
 * ok[i] is true; ok NULL: all) fit every tenant's and queue's
 * max_queued and max_queued_bytes, counted as if every job were new;
 * else TENQ_EQUOTA_EXCEEDED naming the limit.  Changes nothing. */
int engine_quota_admit(engine_t *e, const engine_submit_req *reqs, const bool *ok, size_t n,
                       engine_err *err);
/* What a new job made by r would take in memory (engine_memory's bytes), at
 * most: for a server's memory budget. */
size_t engine_job_memory_cost(const engine_submit_req *r);

/* ---- workers ----------------------------------------------------------- */

typedef struct engine_lease_req {
    const char *const *queues; /* at least one */
    size_t n_queues;
    const char *const *types; /* optional filter */
    size_t n_types;
    size_t max;
    const char *worker;
} engine_lease_req;

/* Leases up to req->max eligible jobs into out[], each with a fresh fencing
 * token.  Each queue proposes its next job by its own order (fifo or fair);
 * among the proposals of several queues the one with the highest priority,
 * then earliest run_at, then lowest id goes first.  Returns the count. */
size_t engine_lease(engine_t *e, int64_t now, const engine_lease_req *req, engine_job **out);

/* The handler began: leased -> running. */
int engine_start(engine_t *e, int64_t now, uint64_t id, uint64_t token, engine_err *err);
/* Extends the lease by the queue's lease_ms; stores progress (JSON, may be
 * NULL); tells whether a cancel was requested. */
int engine_heartbeat(engine_t *e, int64_t now, uint64_t id, uint64_t token, const char *progress,
                     int64_t *lease_until, bool *cancel, engine_err *err);
/* Succeeded; result and stats are JSON text or NULL. */
int engine_ack(engine_t *e, int64_t now, uint64_t id, uint64_t token, const char *result,
               const char *stats, engine_err *err);

typedef struct engine_fail_req {
    const char *error;
    bool has_retry_in;
    int64_t retry_in_ms;
    bool no_retry;     /* "retry": false -> the morgue now */
    bool cancelled;    /* the worker stopped a cancelled job */
    const char *stats; /* the attempt's stats (JSON text), NULL: keep */
} engine_fail_req;

/* The attempt failed.  *state_out (may be NULL) tells where the job went. */
int engine_fail(engine_t *e, int64_t now, uint64_t id, uint64_t token, const engine_fail_req *f,
                engine_state *state_out, engine_err *err);

/* ---- time -------------------------------------------------------------- */

/* Scheduled jobs whose run_at has come become ready; expired leases become
 * failed attempts (or dead on at-most-once queues, or cancelled when a cancel
 * was requested); old idempotency keys are forgotten.  Returns the number of
 * jobs that changed. */
size_t engine_tick(engine_t *e, int64_t now);
/* When engine_tick next has something to do; INT64_MAX when nothing. */
int64_t engine_next_timer(const engine_t *e);

/* ---- cancel and the morgue ---------------------------------------------- */

/* A job not yet leased is cancelled at once; a leased or running one is marked
 * cancel_requested.  *state_out tells which.  Finished or dead: TENQ_ECONFLICT. */
int engine_cancel(engine_t *e, int64_t now, uint64_t id, engine_state *state_out, engine_err *err);

typedef struct engine_morgue_filter {
    const char *tenant, *queue, *type; /* NULL: any */
} engine_morgue_filter;

typedef enum { ENGINE_MORGUE_NEWEST, ENGINE_MORGUE_BY_ID } engine_morgue_sort;

typedef struct engine_morgue_cursor {
    int64_t finished_at; /* NEWEST: continue with jobs older than (finished_at, id) */
    uint64_t id;         /* BY_ID: continue with ids above this; 0 = from the start */
} engine_morgue_cursor;

/* Up to `limit` dead jobs matching the filter, in the given order, after the
 * cursor (NULL or zeroed: from the start). */
size_t engine_morgue_list(engine_t *e, const engine_morgue_filter *f, engine_morgue_sort sort,
                          const engine_morgue_cursor *after, size_t limit, engine_job **out);
/* Back to the queue: attempts reset, run_at now (into a waiting merge job if
 * its lane has one). */
int engine_morgue_requeue(engine_t *e, int64_t now, uint64_t id, engine_err *err);
int engine_morgue_delete(engine_t *e, int64_t now, uint64_t id, engine_err *err);
/* The same for up to `max` matching jobs (oldest first); returns the count. */
size_t engine_morgue_requeue_where(engine_t *e, int64_t now, const engine_morgue_filter *f,
                                   size_t max);
size_t engine_morgue_delete_where(engine_t *e, int64_t now, const engine_morgue_filter *f,
                                  size_t max);

/* ---- bulk actions on live jobs ------------------------------------------ */

typedef struct engine_job_filter {
    const char *tenant, *queue, *type, *key; /* NULL: any */
    uint32_t states;                         /* bits 1 << engine_state; 0: any */
    int64_t created_after, created_before;   /* [after, before); 0: open */
} engine_job_filter;

typedef enum {
    ENGINE_BULK_CANCEL,    /* unfinished jobs: cancelled, or a cancel requested if leased */
    ENGINE_BULK_RETRY_NOW, /* scheduled jobs (a delay or a backoff): ready now */
    ENGINE_BULK_PRIORITY /* jobs not yet leased: priority set (a ready one keeps its place in time)
                          */
} engine_bulk_action;

/* The states an action applies to (bits 1 << engine_state). */
uint32_t engine_bulk_states(engine_bulk_action a);
/* Applies the action to up to `max` matching jobs the action applies to,
 * lowest ids first (none when dry_run); returns how many matched and sets
 * *changed to how many it changed.  O(resident jobs). */
size_t engine_bulk(engine_t *e, int64_t now, const engine_job_filter *f, engine_bulk_action a,
                   int32_t priority, bool dry_run, size_t max, size_t *changed);

/* ---- tenants and queues -------------------------------------------------- */

typedef struct engine_counts {
    /* one count per LIVE state (tenq/states.h) */
#define ENGINE_COUNT_FIELD_(name, word, abi, kind, finished, help)                                 \
    TENQ_STATE_IF_LIVE(kind, uint64_t word;)
    TENQ_STATE_TABLE(ENGINE_COUNT_FIELD_)
#undef ENGINE_COUNT_FIELD_
    uint64_t eligible;        /* ready jobs that could be leased now */
    int64_t rate_until;       /* a rate limit of its own allows no start before this; 0 */
    int64_t oldest_eligible;  /* ready_at of the oldest eligible job; 0 if none */
    uint64_t submitted_total; /* monotonic counters since start-up */
    uint64_t succeeded_total, failed_total, dead_total, cancelled_total, expired_total;
    uint64_t queued;       /* unfinished jobs (the six unfinished states): what max_queued counts */
    uint64_t queued_bytes; /* their args (payloads): what max_queued_bytes counts */
} engine_counts;

/* Creates the tenant when it does not exist.  Takes effect at once. */
int engine_tenant_set(engine_t *e, int64_t now, const char *name, const engine_tenant_settings *s,
                      engine_err *err);
/* TENQ_ENOT_FOUND when there is no such tenant.  Either pointer may be NULL. */
int engine_tenant_get(engine_t *e, int64_t now, const char *name, engine_tenant_settings *s,
                      engine_counts *c);
int engine_queue_set(engine_t *e, int64_t now, const char *name, const engine_queue_settings *s,
                     engine_err *err);
int engine_queue_get(engine_t *e, int64_t now, const char *name, engine_queue_settings *s,
                     engine_counts *c);

typedef void (*engine_tenant_fn)(void *ctx, const char *name, const engine_tenant_settings *s,
                                 const engine_counts *c);
typedef void (*engine_queue_fn)(void *ctx, const char *name, const engine_queue_settings *s,
                                const engine_counts *c);
/* (queue, tenant) pairs: counts of one tenant in one queue. */
typedef void (*engine_pair_fn)(void *ctx, const char *queue, const char *tenant,
                               const engine_counts *c);
void engine_foreach_tenant(engine_t *e, int64_t now, engine_tenant_fn fn, void *ctx);
void engine_foreach_queue(engine_t *e, int64_t now, engine_queue_fn fn, void *ctx);
void engine_foreach_pair(engine_t *e, int64_t now, engine_pair_fn fn, void *ctx);
/* Pauses (or resumes) one tenant's jobs in one queue, making either when
 * new: none of them is leased while paused (a whole queue pauses by its
 * `paused` setting).  Noted as an ENGINE_CH_PAUSE change when it changed. */
int engine_pause_tenant(engine_t *e, int64_t now, const char *queue, const char *tenant,
                        bool paused, engine_err *err);
bool engine_tenant_paused(engine_t *e, const char *queue, const char *tenant);
/* The tenants a queue is paused for, in no order (O(tenants of the queue)). */
typedef void (*engine_pause_fn)(void *ctx, const char *queue, const char *tenant);
void engine_foreach_pause(engine_t *e, const char *queue, engine_pause_fn fn, void *ctx);
/* Every leased or running job's worker and id, in no order: O(leased). */
typedef void (*engine_leased_fn)(void *ctx, const char *worker, uint64_t id);
void engine_foreach_leased(engine_t *e, engine_leased_fn fn, void *ctx);
/* Has this tenant ever had a job in this queue (since the engine was built)? */
bool engine_pair_exists(engine_t *e, const char *queue_name, const char *tenant_name);
/* Totals over all queues. */
void engine_totals(engine_t *e, int64_t now, engine_counts *c);

/* ---- keyed limits (keys.c) ------------------------------------------------
 * A key is a string of a tenant that jobs name to share a limit.  Its
 * settings (engine_key_settings) are set for the key itself, or for every
 * key that begins with a prefix, written "prefix*" (at most
 * ENGINE_KEY_PREFIXES_MAX of those per tenant); the key's own wins, then
 * the longest prefix.  Setting or deleting one takes effect at once on the
 * keys it names (O(keys of the tenant) for a prefix), and is noted as an
 * ENGINE_CH_KEY_SETTING change. */
int engine_key_set(engine_t *e, int64_t now, const char *tenant, const char *key,
                   const engine_key_settings *s, engine_err *err);
/* TENQ_ENOT_FOUND when none is set. */
int engine_key_delete(engine_t *e, int64_t now, const char *tenant, const char *key,
                      engine_err *err);
bool engine_key_setting_get(engine_t *e, const char *tenant, const char *key,
                            engine_key_settings *s);
typedef void (*engine_key_setting_fn)(void *ctx, const char *tenant, const char *key,
                                      const engine_key_settings *s);
/* Every key setting of one tenant (NULL: all), in no order. */
void engine_foreach_key_setting(engine_t *e, const char *tenant, engine_key_setting_fn fn,
                                void *ctx);
/* Recovery: a stored key setting (before the jobs). */
int engine_load_key_setting(engine_t *e, const char *tenant, const char *key,
                            const engine_key_settings *s, engine_err *err);

/* A key that resident jobs name now. */
typedef struct engine_key_info {
    const char *tenant, *key;
    uint32_t limit;      /* concurrency: in force (ENGINE_UNLIMITED: none) */
    uint32_t active;     /* its jobs leased or running */
    uint64_t held;       /* ready jobs waiting for it (its limit is reached, or its rate) */
    uint64_t ready;      /* its ready jobs */
    const char *setting; /* the setting in force: the key, "prefix*", or NULL (the jobs') */
    /* rate: units per period with bursts (rate ENGINE_UNLIMITED: none) */
    uint32_t rate, rate_burst;
    int64_t rate_period_ms;
    int64_t rate_until; /* its next start of one unit may come then; 0: now */
    const char *rate_setting;
} engine_key_info;
/* One key of a tenant; false when no resident job names it (nor a recent
 * start: a rate key is kept until its bucket is full again). */
bool engine_key_info_get(engine_t *e, int64_t now, const char *tenant, const char *key,
                         engine_key_info *out);
/* Up to max keys of one tenant (NULL: every tenant), those at their limit
 * first (fullest first), then the rest by how many jobs they hold back;
 * *total gets how many keys there are.  O(keys). */
size_t engine_keys_list(engine_t *e, int64_t now, const char *tenant, bool at_limit_only,
                        size_t max, engine_key_info *out, size_t *total);
/* Up to max jobs of a key: leased or running ones that hold it (as a
 * concurrency key), and ready ones that name it (held back by it when it
 * is at its limit), in no order.  O(leases + its groups' heaps). */
void engine_key_jobs(engine_t *e, const char *tenant, const char *key, size_t max,
                     uint64_t *holders, size_t *nh, uint64_t *ready, size_t *nr);
/* Keys named by resident jobs, and those at their limit now. */
size_t engine_key_count(const engine_t *e);
size_t engine_keys_at_limit(const engine_t *e);

typedef struct engine_lane_info {
    const char *tenant, *queue, *key;
    uint64_t length;  /* unfinished jobs in the lane */
    uint64_t head_id; /* the job that holds the lane */
    engine_state head_state;
    int64_t head_run_at;
} engine_lane_info;
/* The k longest lanes, longest first.  O(lanes). */
/* The k longest lanes that keep() accepts (NULL: all), longest first;
 * *total (if not NULL) gets how many lanes keep() accepted. */
typedef bool (*engine_lane_filter)(void *ctx, const char *tenant, const char *queue);
size_t engine_top_lanes(engine_t *e, size_t k, engine_lane_info *out, engine_lane_filter keep,
                        void *ctx, size_t *total);
size_t engine_lane_count(const engine_t *e);

/* ---- changes ------------------------------------------------------------- */

typedef enum {
    ENGINE_CH_JOB,         /* a job was created or changed: job, fields */
    ENGINE_CH_JOB_DELETED, /* a dead job was deleted: id */
    ENGINE_CH_TENANT,      /* settings of tenant `name` changed (or it was created) */
    ENGINE_CH_QUEUE,       /* settings of queue `name` changed (or it was created) */
    ENGINE_CH_IDEM,        /* an idempotency key was recorded: idem */
    ENGINE_CH_PAUSE,       /* queue `name` was paused (fields 1) or resumed for `tenant` */
    ENGINE_CH_WAKE,        /* queue `name` has newly eligible jobs (not persisted) */
    ENGINE_CH_ATTEMPT,     /* an attempt of job `id` ended without succeeding: attempt */
    ENGINE_CH_BATCH,       /* batch `id` was created or its stored fields changed */
    ENGINE_CH_STEP,        /* a step of job `id` was stored or completed: step */
    ENGINE_CH_EVENT,       /* an event was kept for a later wait: event */
    ENGINE_CH_EVENT_GONE,  /* kept event `id` was taken by a wait (its row goes) */
    ENGINE_CH_KEY_SETTING  /* key `name` of `tenant`: set (fields 1) or deleted (0) */
} engine_change_kind;

#define ENGINE_JF_NEW      1u /* the job is new: write every field */
#define ENGINE_JF_PAYLOADS 2u /* payloads changed */
#define ENGINE_JF_RESULT   4u /* result and stats were set */
#define ENGINE_JF_LANE     8u /* lane_seq moved or finished_at was cleared (requeue) */
/* the job left waiting counting a dead parent as done (policy run): its row
 * is history a load cannot work out again (the parent may be requeued),
 * so it is written with the change that released it, never late */
#define ENGINE_JF_RELEASED 16u
/* the job stored its first step, or is a child awaited: no longer plain, so
 * its row (live 1 from now) is written with that change, never late */
#define ENGINE_JF_STEPS    32u
/* its args were replaced (a debounced submit): write them */
#define ENGINE_JF_ARGS     64u

typedef struct engine_idem_info {
    const char *tenant, *key;
    uint64_t id;
    engine_state state; /* in the first answer */
    bool duplicate, merged;
    int64_t created_at;
} engine_idem_info;

typedef struct engine_change {
    engine_change_kind kind;
    uint32_t fields; /* ENGINE_CH_JOB: ENGINE_JF_* */
    engine_job *job;
    uint64_t id;
    const char *name;
    const char *tenant; /* ENGINE_CH_PAUSE */
    const engine_idem_info *idem;
    const struct engine_attempt_info *attempt;      /* ENGINE_CH_ATTEMPT */
    const struct engine_key_settings *key_settings; /* ENGINE_CH_KEY_SETTING (set) */
    const struct engine_step_info *step;            /* ENGINE_CH_STEP */
    const struct engine_event_info *event;          /* ENGINE_CH_EVENT */
} engine_change;

/* The changes since the last engine_changes_clear(), in the order made; a
 * job appears at most once however often it changed. */
const engine_change *engine_changes(engine_t *e, size_t *n);
/* How many changes engine_changes would return. */
size_t engine_change_count(const engine_t *e);
/* Forgets the change list and frees the finished jobs it held. */
void engine_changes_clear(engine_t *e);

/* ---- attempt history (attempts.c) ------------------------------------------
 * Every lease of a job is an attempt, named by its fencing token (tokens grow
 * with every lease of a job, across morgue requeues and restarts).  An
 * attempt that ends without the job succeeding (it failed, its lease
 * expired, it timed out, it was cancelled) is reported once, as an
 * ENGINE_CH_ATTEMPT change holding a copy of its fields taken as it ended:
 * the store keeps it as a row.  The current attempt of a leased or running
 * job, and the attempt that succeeded, are the job's own fields
 * (engine_job_attempt). */

typedef enum {
    ENGINE_ATTEMPT_FAILED,    /* the worker reported a failure */
    ENGINE_ATTEMPT_EXPIRED,   /* its lease ran out without a heartbeat */
    ENGINE_ATTEMPT_TIMED_OUT, /* it ran past its timeout (timeout_ms) */
    ENGINE_ATTEMPT_CANCELLED, /* it ended on a cancel requested while it ran */
    ENGINE_ATTEMPT_SUCCEEDED, /* acked: the job's own fields */
    ENGINE_ATTEMPT_LEASED,    /* the current attempt, not started yet */
    ENGINE_ATTEMPT_RUNNING,   /* the current attempt, started */
    /* its handler parked the job (a durable sleep, a wait for an event or
     * a child): the lease ended, the attempt did not fail (steps.c) */
    ENGINE_ATTEMPT_SUSPENDED,
    ENGINE_ATTEMPT_NOUTCOMES
} engine_attempt_outcome;

/* "failed", "expired", "timed_out", "cancelled", "succeeded", "leased",
 * "running", "suspended"; and back (-1: none). */
const char *engine_attempt_outcome_name(engine_attempt_outcome o);
int engine_attempt_outcome_parse(const char *name);

typedef struct engine_attempt_info {
    uint64_t job_id, token;
    uint32_t attempt; /* the job's attempt count then (1 = first; reset by a requeue) */
    const char *worker;
    int64_t leased_at, started_at, finished_at; /* 0: not (yet) */
    engine_attempt_outcome outcome;
    engine_state job_state; /* the job's state right after (or now, when current) */
    const char *error;      /* NULL when none */
    const char *stats;      /* JSON text the worker reported, or NULL */
} engine_attempt_info;

/* The attempt a job's own fields hold: its current one (leased, running) or
 * the one that succeeded.  False for a job in any other state (its attempts
 * that ended are the store's rows). */
bool engine_job_attempt(const engine_job_info *j, engine_attempt_info *out);

/* ---- batches (batches.c) ----------------------------------------------------
 * A batch is a group of jobs of one tenant with callbacks: jobs the engine
 * submits itself when the batch's jobs are all finished (on_complete), all
 * succeeded (on_success), or when the first of them dies (on_death).  A job
 * of a batch is "finished" for it once succeeded, cancelled, merged or dead
 * (in the morgue); the others are pending.  A batch is open until the call
 * in which its pending count falls to 0: that call submits on_complete (and
 * on_success when every job succeeded) and closes the batch for good.  Each
 * callback is submitted at most once, in the call whose outcome triggered
 * it, so that it is in the same change list (and store commit).  A job
 * requeued from the morgue while its batch is open is pending again; once
 * the batch is closed it runs as any job and fires nothing.  A batch
 * remembers its deaths (`deaths`, written with each death): one that had a
 * death, a cancel or a merge never fires on_success, whatever its jobs did
 * after, and on_death is due at the first death only.  Counters are kept
 * per batch: a finished job costs O(1), never a scan. */

typedef enum {
    ENGINE_CB_COMPLETE, /* on_complete */
    ENGINE_CB_SUCCESS,  /* on_success */
    ENGINE_CB_DEATH,    /* on_death */
    ENGINE_NCALLBACKS
} engine_callback_kind;
#define ENGINE_BATCH_MEMBER 0 /* a job's batch_role: one of its jobs (else 1 + kind) */
/* "on_complete", "on_success", "on_death"; and back (-1: none). */
const char *engine_callback_name(int kind);
int engine_callback_parse(const char *name);

typedef struct engine_batch_info {
    uint64_t id;
    const char *tenant;
    int64_t created_at, closed_at; /* closed_at 0: open */
    uint64_t total;                /* jobs ever added */
    uint64_t deleted;              /* dead jobs deleted from the morgue */
    /* deaths of its jobs, ever: a job requeued from the morgue keeps its
     * death here (and one that dies again counts again), so that a batch
     * that had a death never fires on_success, across restarts too */
    uint64_t deaths;
    uint64_t n[ENGINE_NSTATES]; /* jobs by their state now (final states: how many ended so) */
    /* the callbacks' specs (NULL: none; tenant is the batch's) */
    const engine_submit_req *callbacks[ENGINE_NCALLBACKS];
    uint64_t callback_ids[ENGINE_NCALLBACKS]; /* the job submitted; 0: not (yet) */
} engine_batch_info;

/* Unfinished jobs of the batch (scheduled, blocked, ready, leased, running). */
uint64_t engine_batch_pending(const engine_batch_info *b);

/* Creates a batch of n jobs (1 or more, of the batch's tenant) and its
 * callbacks (cbs[k] NULL: none), all or nothing: on a refusal *bad is the
 * index of the job at fault (or SIZE_MAX: the batch or a callback, err
 * naming the field: "on_complete.queue"), and nothing changed.  A job of a
 * batch may not be unique, carry an idempotency key or an id, nor go to a
 * merging queue.  res[i] answers job i. */
int engine_batch_create(engine_t *e, int64_t now, const char *tenant,
                        const engine_submit_req *const cbs[ENGINE_NCALLBACKS],
                        const engine_submit_req *jobs, size_t n, uint64_t *batch_id,
                        engine_submit_res *res, size_t *bad, engine_err *err);
/* Adds n jobs to an open batch (TENQ_ECONFLICT "batch_closed" when closed;
 * TENQ_ENOT_FOUND when there is none, or tenant is not NULL and not its). */
int engine_batch_add(engine_t *e, int64_t now, uint64_t batch_id, const char *tenant,
                     const engine_submit_req *jobs, size_t n, engine_submit_res *res, size_t *bad,
                     engine_err *err);
/* Fills *out (pointers into the engine); false when there is no such batch. */
bool engine_batch_get(engine_t *e, uint64_t id, engine_batch_info *out);
/* Up to max batch ids, newest first, below `before` (0: from the newest),
 * of one tenant (NULL: any).  O(batches looked at). */
size_t engine_batch_list(engine_t *e, const char *tenant, uint64_t before, size_t max,
                         uint64_t *ids);
size_t engine_batch_count(const engine_t *e);
/* Batches open now, and callback jobs submitted since this engine began. */
size_t engine_batch_open_count(const engine_t *e);
uint64_t engine_batch_callbacks_made(const engine_t *e);
/* Recovery: a batch as engine_batch_get reported it (n[] counts only its
 * final states; the resident jobs count themselves by
 * engine_load_batch_job), in id order, before its jobs' links. */
int engine_load_batch(engine_t *e, const engine_batch_info *b, engine_err *err);
/* A loaded job's link to its batch (role: ENGINE_BATCH_MEMBER or 1 + kind);
 * a job not resident is ignored. */
int engine_load_batch_job(engine_t *e, uint64_t job_id, uint64_t batch_id, int role);

/* ---- durable steps (steps.c) -----------------------------------------------
 * A handler stores the result of each step of its job under the job's
 * current lease token (a stale token is refused like a stale ack), so that
 * a later attempt gets the stored results back instead of running those
 * steps again.  A step may also park the job between attempts, ending its
 * lease without failing it: a durable sleep (back to scheduled until a
 * time), a wait for an event of its tenant (waiting, until the event comes
 * or a timeout), or a child job it submits and waits for (waiting, until
 * the child ends).  A parked job gives back its tenant's slot and keeps its
 * lane (it is still its lane's head: the jobs behind it wait).  The lease
 * that parked it is an attempt that ended "suspended" and does not count:
 * the lease that resumes it has the same attempt number.
 *
 * Memory: a job keeps its steps' count, bytes and a 64-bit hash of each
 * name; results are the store's alone (read with the job's steps).  An
 * event that woke no job is kept, with its payload, for cfg.event_window_ms,
 * and the first job of its tenant that waits for its key takes it. */

#define ENGINE_STEPS_MAX       1000                /* steps a job stores at most */
#define ENGINE_STEPS_BYTES_MAX (16u * 1024 * 1024) /* their results' bytes at most */
#define ENGINE_EVENT_MAX_BYTES (1024u * 1024)      /* an event's payload at most */

typedef enum {
    ENGINE_STEP_RUN,   /* code the handler ran: its result */
    ENGINE_STEP_SLEEP, /* a durable sleep until a time */
    ENGINE_STEP_EVENT, /* a wait for an event: its payload, or timed out */
    ENGINE_STEP_CHILD, /* a child job awaited: its result, or its error */
    ENGINE_NSTEP_KINDS
} engine_step_kind;
/* "step", "sleep", "event", "child"; and back (-1: none). */
const char *engine_step_kind_name(engine_step_kind k);
int engine_step_kind_parse(const char *name);

/* A step as its row holds it. */
typedef struct engine_step_info {
    uint64_t job_id;
    uint32_t pos; /* 0, 1, ... in the order stored */
    const char *name;
    engine_step_kind kind;
    bool done;          /* false: the job waits for it (EVENT, CHILD) */
    const char *result; /* JSON text; NULL: none (a sleep, a timeout, a failed child) */
    const char *error;  /* EVENT: "timed out"; CHILD: why the child did not succeed */
    uint64_t token;     /* the lease it was stored under */
    uint32_t attempt;   /* that lease's attempt number (1 = first) */
    int64_t created_at, finished_at; /* finished_at 0: not done */
    const char *event;               /* EVENT: the key */
    int64_t until;                   /* SLEEP: until; EVENT: the timeout's time (0: none) */
    uint64_t child;                  /* CHILD: the child's id */
    int child_state;                 /* CHILD done: the child's state then (else -1) */
    uint32_t size;                   /* bytes of result */
} engine_step_info;

typedef struct engine_step_req {
    const char *name; /* the key rule: 1-256 bytes, no control character */
    engine_step_kind kind;
    const char *result; /* RUN: JSON text (NULL: null), at most the queue's max_payload_bytes */
    uint32_t result_len;
    int64_t until;           /* SLEEP: the time to resume (ms; past: not parked) */
    const char *event;       /* EVENT: the key (the key rule) */
    int64_t timeout_ms;      /* EVENT: 0: none; else 1 ms to 10 years */
    engine_submit_req child; /* CHILD: the child (its tenant is the job's) */
} engine_step_req;

typedef struct engine_step_res {
    uint32_t pos;
    bool duplicate;     /* stored already by this lease: nothing changed */
    bool parked;        /* the lease ended: the job is `state` (scheduled or waiting) */
    engine_state state; /* the job's state after */
    int64_t run_at;     /* SLEEP: when it resumes */
    bool done;          /* EVENT: taken at once from a kept event (result) */
    const char *result; /* valid until the next call that mutates the engine */
    uint64_t child;     /* CHILD: the child's id */
    engine_state child_state;
} engine_step_res;

/* Stores a step of job id under its lease token (the lease goes on), or
 * parks the job (SLEEP, EVENT, CHILD: the lease ends).  A name this lease
 * stored already is answered duplicate; one an earlier lease stored is
 * TENQ_ECONFLICT ("name": read the job's steps).  Limits: ENGINE_STEPS_MAX
 * steps, ENGINE_STEPS_BYTES_MAX bytes of results (TENQ_ETOO_LARGE), a
 * result within the queue's max_payload_bytes.  An at-most-once job is
 * never parked (it would be handed out again), nor a job whose cancel was
 * requested (TENQ_ECONFLICT).  A CHILD submits the child as engine_submit
 * would (no id, idempotency key, uniqueness or depends_on; not to a
 * merging queue), refusing with its error. */
int engine_step(engine_t *e, int64_t now, uint64_t id, uint64_t token, const engine_step_req *r,
                engine_step_res *res, engine_err *err);

/* An event as its row holds it (kept for a later wait). */
typedef struct engine_event_info {
    uint64_t id;
    const char *tenant, *key;
    const char *payload; /* JSON text */
    uint32_t len;
    int64_t created_at, expires_at;
} engine_event_info;

typedef struct engine_event_res {
    size_t delivered; /* jobs it woke (their ids: the first max_ids in ids) */
    bool kept;        /* it woke none: kept until expires_at for a later wait */
    int64_t expires_at;
} engine_event_res;

/* An event of a tenant: every job of the tenant waiting for its key takes
 * its payload as that step's result and goes on; when none waits it is
 * kept for cfg.event_window_ms (0: dropped).  payload: JSON text (NULL:
 * null), at most ENGINE_EVENT_MAX_BYTES. */
int engine_event_send(engine_t *e, int64_t now, const char *tenant, const char *key,
                      const char *payload, uint32_t len, uint64_t *ids, size_t max_ids,
                      engine_event_res *res, engine_err *err);
/* Events kept now, and jobs waiting for an event. */
size_t engine_events_kept(const engine_t *e);
size_t engine_event_waiters(const engine_t *e);

/* Recovery: a job's steps, in (job, pos) order, after every job is loaded
 * and before engine_load_deps_done (result NULL: only its size is known);
 * each kept event, by expires_at (expired ones are dropped); the highest
 * event id ever written (new ones are numbered above it). */
int engine_load_step(engine_t *e, int64_t now, const engine_step_info *s, engine_err *err);
int engine_load_event(engine_t *e, int64_t now, const engine_event_info *ev, engine_err *err);
void engine_load_event_id(engine_t *e, uint64_t max_id);

/* ---- recovery ------------------------------------------------------------ */

/* Loads a job in any resident state (unfinished or dead), as
 * engine_job_get() reported it.  Jobs of a lane must come in lane_seq order.
 * Leased and running jobs keep their token and deadline and take their
 * tenant's slots.  Creates missing tenants and queues with the defaults.
 * Loading notes changes like any call: clear them when recovery is done. */
int engine_load_job(engine_t *e, int64_t now, const engine_job_info *j, engine_err *err);
int engine_load_idem(engine_t *e, const engine_idem_info *i, engine_err *err);
/* An edge of the dependency graph, after every job is loaded: the child's
 * parent at position pos (edges of a child come in pos order), and the
 * child's policy.  Either end may be gone from memory (finished).  Then
 * engine_load_deps_done: each waiting child waits for its parents still
 * unfinished, and is released when there are none. */
void engine_load_dep(engine_t *e, uint64_t child, uint64_t parent, engine_deps_policy policy);
void engine_load_deps_done(engine_t *e, int64_t now);
/* Ids handed out from now on are at least next_id. */
/* Around a load (store_load): the jobs loaded are what the store holds, so
 * they are not listed as changed (a million entries made and cleared). */
void engine_loading(engine_t *e, bool on);
void engine_set_next_id(engine_t *e, uint64_t next_id);
uint64_t engine_next_id(const engine_t *e);

/* ---- introspection ------------------------------------------------------- */

/* ---- args out of memory (args.c) ------------------------------------------ */

/* Up to max ids of jobs whose args are out of memory and will soon be
 * wanted: the front of each node whose front changed (a window that grows
 * with its leases), the next job of a ready lane head, scheduled jobs due
 * within 2 s.  Each id is returned once until engine_args_put or
 * engine_args_unasked says what became of it. */
size_t engine_args_wanted(engine_t *e, int64_t now, uint64_t *ids, size_t max);
/* A spilled job's args, read from the store: kept in the cache when it has
 * room (false: not kept, or no such spilled job). */
bool engine_args_put(engine_t *e, uint64_t id, const char *text, uint32_t len);
/* A read ahead that found nothing (the job's row is gone). */
void engine_args_unasked(engine_t *e, uint64_t id);
/* Whether the job's args are out of memory (cached or not). */
bool engine_job_spilled(const engine_job *j);

typedef struct engine_args_stats {
    size_t budget;       /* cfg.args_budget */
    size_t inline_bytes; /* args (and payloads) kept in the jobs */
    size_t cache_bytes;  /* the cache of spilled jobs' args */
    size_t cache_entries;
    size_t spilled; /* jobs in memory whose args are out of it */
} engine_args_stats;
void engine_args_usage(const engine_t *e, engine_args_stats *st);

typedef struct engine_memory {
    size_t jobs;       /* resident jobs */
    size_t bytes;      /* what they take: each job's allocations and index entries (an estimate
                        * kept exact to the allocator's chunk sizes, internal.h mem_chunk) */
    size_t data_bytes; /* of which args and payloads */
} engine_memory;
void engine_memory_usage(const engine_t *e, engine_memory *m);

/* Checks every internal invariant (heaps, lanes, counts, slots) by a full
 * recount: O(n), for tests.  Returns 0 or -1 with a message in buf. */
int engine_check(engine_t *e, int64_t now, char *buf, size_t len);

#endif
