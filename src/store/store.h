// SPDX-License-Identifier: Apache-2.0
/* store — durability.  One interface, two backends: SQLite (embedded, the
 * default) and PostgreSQL (a real server, what several tenq servers share).
 *
 * Writes: the caller turns the engine's changes into a batch and hands it
 * over (store_commit).  A writer thread takes every batch that is waiting,
 * writes them all in one transaction, commits with one fsync, and reports
 * each batch's outcome through the event fd: "group commit".  Batches are
 * committed in the order handed over.  A batch that fails is never reported
 * committed; after a failure every batch handed over before
 * store_clear_failure() fails too, since it was built on changes that were
 * not kept (the caller rebuilds its engine with store_load, then clears).
 *
 * Reads (a job, a page of jobs) run on a reader thread with their own
 * connection and report through the same event fd, so a slow query never
 * stalls the caller's event loop.
 *
 * Threads: every function is called from one thread (the caller's event
 * loop); callbacks run in store_dispatch() on that thread.
 *
 * Errors: 0 or a negative TENQ_E* code; store_errmsg() tells more.
 * Ownership: batches are owned by the store once handed to store_commit;
 * rows given to read callbacks are valid during the callback only.
 */
#ifndef TENQ_STORE_H
#define TENQ_STORE_H

#include "engine/engine.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct store store_t;
typedef struct store_batch store_batch;

#define STORE_SCHEMA_VERSION 7

typedef enum { STORE_SYNC_FULL, STORE_SYNC_NORMAL } store_sync;

typedef struct store_opts {
    /* SQLite: FULL (default) fsyncs every commit, so an acknowledged job
     * survives power loss.  NORMAL fsyncs only at checkpoints: a crash of
     * the process loses nothing, but a power cut or kernel crash may lose
     * the last commits (acknowledged ones included). */
    store_sync sync;
    /* Tests: migrate only up to this version (0: the newest). */
    int max_version;
    /* Retention runs in the background unless this is set. */
    bool no_retention;
    /* Rows a retention step deletes at most (default 1000). */
    int retention_batch;
    /* How long request keys are kept (Idempotency-Key; default 10 min). */
    int64_t request_key_ttl_ms;
    /* How long audit rows are kept (default 90 days). */
    int64_t audit_ttl_ms;
    /* Tests: the writer waits this long before each commit, so that a crash
     * can land between an answer and its commit. */
    int test_commit_delay_ms;
    int test_sync_delay_ms; /* PostgreSQL: a pause before a group's Sync, its statements run */
    /* The writer thread waits for work, and commits, at idle priority
     * (SCHED_IDLE) while the server is quiet, so that a worker or request
     * it would delay runs first; it goes back to normal priority as soon as
     * work comes faster, or when the caller's watchdog finds it waiting for
     * a CPU (store_writer_check).  Used only when the process may return
     * the thread to normal priority (CAP_SYS_NICE, or RLIMIT_NICE of 20). */
    bool writer_idle;
    /* A server that leads the store by election (see "leadership"): every
     * write, retention included, goes only under a term of its own
     * (store_use_term), and batches without one fail.  Off (tools, tests
     * that own the store alone): batches of term 0 are written unfenced. */
    bool elect;
    /* This server's name in the store (PostgreSQL: application_name
     * "tenq:<node>" of its connections, how a standby finds the
     * connections of a stalled leader); NULL: none. */
    const char *node;
} store_opts;

/* Opens "sqlite:PATH" (or a bare path ending in .db) or "postgresql://..."
 * / "postgres://...", creating or migrating the schema.  A file that is not
 * a tenq database, or one from a newer tenq, is refused (TENQ_ENOT_TENQ,
 * TENQ_EVERSION) with a message saying so in errbuf. */
int store_open(const char *url, const store_opts *opts, store_t **out, char *errbuf, size_t errlen);
/* Waits for batches already handed over, stops the threads, closes. */
void store_close(store_t *s);
const char *store_backend(const store_t *s); /* "sqlite" or "postgres" */
const char *store_errmsg(const store_t *s);  /* the last error, for people */
/* Where it is: the file path, or the PostgreSQL host:port/db. */
const char *store_where(const store_t *s);

/* ---- batches ----------------------------------------------------------- */

store_batch *store_batch_new(void);
void store_batch_free(store_batch *b); /* NULL is fine */
size_t store_batch_ops(const store_batch *b);
/* A job row: every field when fields has ENGINE_JF_NEW, else the mutable
 * ones (payloads when ENGINE_JF_PAYLOADS, result and stats when
 * ENGINE_JF_RESULT).  The job's data is copied. */
void store_batch_job(store_batch *b, const engine_job_info *j, uint32_t fields);
void store_batch_job_delete(store_batch *b, uint64_t id);
void store_batch_tenant(store_batch *b, const char *name, const engine_tenant_settings *s);
void store_batch_queue(store_batch *b, const char *name, const engine_queue_settings *s);
void store_batch_idem(store_batch *b, const engine_idem_info *i);
/* A queue paused (or resumed) for one tenant. */
void store_batch_pause(store_batch *b, const char *queue, const char *tenant, bool paused);
/* A key's settings (s NULL: deleted). */
void store_batch_key_setting(store_batch *b, const char *tenant, const char *key,
                             const engine_key_settings *s);
/* What a tenant (queue false) or a queue with a quota holds now, for the
 * quota check of applications' transactions (tenq.queued_usage; PostgreSQL
 * only: SQLite writes nothing). */
void store_batch_usage(store_batch *b, bool queue, const char *name, uint64_t queued,
                       uint64_t bytes);
/* An attempt that ended without its job succeeding (ENGINE_CH_ATTEMPT): a
 * row of the job's attempt history, kept as long as the job (a job's
 * deletion, by retention or from the morgue, deletes its attempts). */
void store_batch_attempt(store_batch *b, const engine_attempt_info *a);
/* A step's row (new, or the end of a pending one: update), a kept
 * event's row, and its deletion (taken by a wait): added by
 * store_batch_changes for ENGINE_CH_STEP, ENGINE_CH_EVENT and
 * ENGINE_CH_EVENT_GONE. */
void store_batch_step(store_batch *b, const engine_step_info *x, bool update);
void store_batch_event(store_batch *b, const engine_event_info *x);
void store_batch_event_delete(store_batch *b, uint64_t id);
/* An edge of a new job: its parent at position pos (its depends_on), with
 * its policy; added by store_batch_changes for every new job's parents. */
void store_batch_dep(store_batch *b, uint64_t child, uint64_t parent, uint32_t pos,
                     engine_deps_policy policy);

/* A schedule (periodic jobs, api/cron.c) as its row: the job it makes and
 * how far it has ticked (every tick before next_tick is handled). */
typedef struct store_schedule {
    const char *name, *tenant, *cron, *timezone, *missed;
    const char *queue, *type, *args, *key, *unique_key; /* key, unique_key: NULL when none */
    int32_t priority;
    uint32_t max_attempts; /* 0: the queue's */
    bool unique, paused;
    int64_t timeout_ms, last_tick, next_tick, created_at, updated_at;
} store_schedule;
/* The whole row, created or replaced. */
void store_batch_schedule(store_batch *b, const store_schedule *x);
/* A tick (or ticks given up) written: the row's last_tick and next_tick. */
void store_batch_schedule_tick(store_batch *b, const char *name, int64_t last_tick,
                               int64_t next_tick);
void store_batch_schedule_delete(store_batch *b, const char *name);
/* Every schedule, by name, on the caller's thread (the row's strings are
 * valid during the call). */
typedef void (*store_schedule_fn)(void *ctx, const store_schedule *x);
int store_load_schedules(store_t *s, store_schedule_fn fn, void *ctx);

/* A batch's row (ENGINE_CH_BATCH), written whole: its counters, callbacks
 * (their specs as JSON text) and the jobs they made. */
void store_batch_put_batch(store_batch *b, const engine_batch_info *x);
/* A job's link to its batch (written with the new job: ENGINE_JF_NEW). */
void store_batch_batch_job(store_batch *b, uint64_t job_id, uint64_t batch_id, int role);
/* A batch's callbacks as the JSON text its row keeps (malloc'd), and back:
 * specs[k] malloc'd (free with store_callbacks_free), NULL when none. */
char *store_callbacks_json(const engine_submit_req *const cbs[ENGINE_NCALLBACKS]);
int store_callbacks_parse(const char *text, engine_submit_req *cbs[ENGINE_NCALLBACKS]);
void store_callbacks_free(engine_submit_req *cbs[ENGINE_NCALLBACKS]);

typedef struct store_token {
    int64_t id;
    const char *hash;   /* hex SHA-256 of the secret; the secret is never stored */
    const char *role;   /* "admin", "worker", "tenant:NAME", "viewer", "viewer:NAME" */
    const char *queues; /* JSON array or NULL (all) */
    int64_t created_at;
    int64_t revoked_at; /* 0: live */
    bool hide_data;     /* a viewer that sees jobs without their data */
} store_token;
void store_batch_token(store_batch *b, const store_token *t);

/* A change made through the API, written in the commit of the change (the
 * audit log; docs/operations.md, "The audit log"). */
typedef struct store_audit {
    int64_t at;
    int64_t token_id;   /* 0: no token (a server with none) */
    const char *role;   /* the token's role ("admin", "tenant:acme"...) */
    const char *tenant; /* the token's tenant, or NULL: whose entry it is */
    const char *method, *path;
    int status;         /* the answer's */
    const char *peer;   /* "ip:port" the request came from */
    const char *detail; /* the request's body, cut short (2 KiB), or NULL */
} store_audit;
void store_batch_audit(store_batch *b, const store_audit *a);
void store_batch_token_revoke(store_batch *b, int64_t id, int64_t at);

/* A request sent with an Idempotency-Key: its first answer, kept so that
 * the same request sent again is answered the same (store_request_key). */
typedef struct store_request_key {
    const char *scope; /* whose: "" for admin, or the tenant of a tenant token */
    const char *key;
    uint64_t fingerprint; /* of the request's body */
    int status;           /* of the first answer */
    const char *answer;   /* its body; NULL in loads (not read) */
    int64_t created_at;
} store_request_key;
void store_batch_request(store_batch *b, const store_request_key *r);

/* Appends every change in the engine's change list (not clearing it). */
void store_batch_changes(store_batch *b, engine_t *e);
/* The same, leaving out the changes for which skip() says true. */
typedef bool (*store_change_filter)(void *ctx, const engine_change *c);
void store_batch_changes_except(store_batch *b, engine_t *e, store_change_filter skip, void *ctx);

/* Hands the batch over (the store owns it from now) and returns its
 * sequence number; the outcome comes to on_commit in store_dispatch(). */
uint64_t store_commit(store_t *s, store_batch *b);
/* A part of a chain: the writer applies it at once but commits it only with
 * the chain's end, the next batch handed over by store_commit, all in one
 * transaction (so a big request is written while its caller still builds
 * the rest, and is kept whole or not at all).  The caller must end the
 * chain in the same turn of its loop: the writer keeps the write
 * connection, and store_load, store_prune_now and store_next_epoch wait
 * for the chain's end.  Every part is reported when the chain ends.  A
 * backend that takes no chains (store_can_chain false) commits each part
 * on its own. */
uint64_t store_commit_part(store_t *s, store_batch *b);
bool store_can_chain(const store_t *s);
/* Hands over and waits: 0 once committed, or the error. */
int store_commit_wait(store_t *s, store_batch *b);

typedef void (*store_commit_fn)(void *ctx, uint64_t seq, int rc);
void store_on_commit(store_t *s, store_commit_fn fn, void *ctx);
/* Readable when outcomes or read results wait; then call store_dispatch. */
int store_event_fd(const store_t *s);
/* Runs the callbacks of everything that finished; returns how many. */
size_t store_dispatch(store_t *s);
/* The highest sequence number known committed (every lower one is too,
 * unless it failed). */
uint64_t store_committed_seq(const store_t *s);
/* Transactions committed and batches in them since open (group commit:
 * batches / transactions is how many shared each fsync). */
void store_counters(const store_t *s, uint64_t *transactions, uint64_t *batches);

/* The writer at idle priority (store_opts.writer_idle): whether it may be
 * (the option, and the process can undo it), and whether it is now. */
bool store_writer_may_idle(const store_t *s);
bool store_writer_idle(const store_t *s);
/* The caller's watchdog, a few ms after handing over the batch `seq` while
 * the writer was idle: a writer that still has not committed it and is
 * waiting for a CPU (other threads or processes keep them all busy) gets
 * normal priority back, and keeps it for a second.  Returns true when the
 * caller should look again later (the writer waits on the disk). */
bool store_writer_check(store_t *s, uint64_t seq);
/* How many times the watchdog raised the writer. */
uint64_t store_writer_raised(const store_t *s);
/* How long commits took (writing and syncing a group), as a histogram:
 * counts[i] commits took at most bounds_us[i] microseconds (the last bound is
 * "more"), and their total time. */
#define STORE_HIST_BUCKETS 10
typedef struct store_timing {
    uint64_t counts[STORE_HIST_BUCKETS];
    double total_us;
} store_timing;
extern const double store_hist_bounds_us[STORE_HIST_BUCKETS];
void store_commit_timing(const store_t *s, store_timing *out);
/* After a failure: the caller has reloaded its state; new batches may go. */
void store_clear_failure(store_t *s);
bool store_failed(const store_t *s);

/* ---- recovery ------------------------------------------------------------ */

typedef struct store_load_stats {
    size_t jobs, tenants, queues, idem, tokens;
    double seconds;
} store_load_stats;

/* Loads every tenant, queue, unfinished and dead job, and recent
 * idempotency key into the engine (clearing its change list after), and
 * sets its next id above every id ever used.  Runs on the caller's thread;
 * call it before handing over batches, or after a failure. */
int store_load(store_t *s, engine_t *e, int64_t now, store_load_stats *st);
/* The same but the plain jobs waiting in line (live = 2), which a server
 * brings in after it began to serve (store_load_rest). */
int store_load_first(store_t *s, engine_t *e, int64_t now, store_load_stats *st);

/* ---- leadership ------------------------------------------------------------
 * One server leads a store at a time: it loads the jobs, schedules them and
 * writes.  SQLite: the server that opened the file, which holds an exclusive
 * lock on it from store_open to store_close (a second store_open of the file
 * in another process is refused, naming the holder).  PostgreSQL: any number
 * of servers open one database and elect a leader: a session advisory lock
 * held by the leader's control connection, and a row (tenq.leader) it renews
 * within a TTL; a standby ends the connections of a leader whose TTL passed,
 * and one that died lets its lock go at once.
 *
 * Every leadership, and every reload after a failed commit, gets a new term,
 * above every earlier one and committed before it is returned: the fencing
 * tokens of a term start at term << 32.  Batches carry the term of the
 * engine they come from (store_use_term) and every write transaction checks
 * it (PostgreSQL: tenq.fence, inside the transaction), so a server that
 * lost its leadership never commits a write after another took over: its
 * batches fail with TENQ_ENOT_LEADER.
 *
 * The functions of this section run on one thread of the caller's (not its
 * event loop): they may block on the store, each for at most its connect or
 * lock timeout. */

typedef struct store_node {
    const char *node;      /* this server, unique per start (16 hex digits) */
    const char *advertise; /* the URL clients reach it at; "" when unknown */
    const char *host;
    int pid;
    int64_t ttl_ms; /* how long a renewal keeps the leadership */
} store_node;

/* Who leads, as the store says. */
typedef struct store_leader {
    uint64_t term;
    char node[24];       /* "" when nobody has led yet, or the leader resigned */
    char advertise[256]; /* "" when unknown */
    char host[128];
    int pid;
    int64_t expires_in_ms; /* by the store's clock; <= 0: its TTL passed */
    bool evicted;          /* its TTL had passed: its connections were ended */
} store_leader;

/* Tries to lead: 1 when this server now leads, under the new term *term; 0
 * when another server does (*who says which; one whose TTL passed has its
 * connections ended, so that a later campaign can win); or an error. */
int store_campaign(store_t *s, const store_node *me, uint64_t *term, store_leader *who);
/* While leading: a new term (to reload after a failed commit), or
 * TENQ_ENOT_LEADER when this server no longer leads. */
int store_new_term(store_t *s, const store_node *me, uint64_t term, uint64_t *next);
/* While leading: holds the leadership for another TTL from now, or
 * TENQ_ENOT_LEADER when it was lost. */
int store_renew(store_t *s, const store_node *me, uint64_t term);
/* Gives the leadership up (a clean stop): standbys hear of it at once. */
void store_resign(store_t *s, const store_node *me, uint64_t term);
/* Waits up to ms for news of the leadership: on PostgreSQL a standby hears
 * of a resignation, and the control connection's loss shows at once.  The
 * wait ends early when wake_fd (>= 0) becomes readable.  Returns 1 when
 * there may be news (campaign or renew now), else 0. */
int store_leader_wait(store_t *s, int wake_fd, int ms);
/* The same wait's other news: true (once) when an application's transaction
 * committed something to the inbox since the last call (PostgreSQL). */
bool store_inbox_news(store_t *s);
/* Batches handed over from now on carry this term (the term of the engine
 * they come from; the caller's thread). */
void store_use_term(store_t *s, uint64_t term);
/* Fails every batch handed over so far, with rc, without writing it (a
 * server that stopped leading); store_clear_failure ends it as after a
 * failed commit. */
void store_fail_pending(store_t *s, int rc);

typedef void (*store_request_fn)(void *ctx, const store_request_key *r);
/* Every request key created after `since` (their answers left out). */
int store_load_requests(store_t *s, int64_t since, store_request_fn fn, void *ctx);
/* One request's first answer, read on the reader thread: fn(ctx, rc, r)
 * in store_dispatch, r NULL when there is none (r valid during the call). */
typedef void (*store_request_read_fn)(void *ctx, int rc, const store_request_key *r);
void store_get_request(store_t *s, const char *scope, const char *key, store_request_read_fn fn,
                       void *ctx);

/* ---- an application's transactions (PostgreSQL; docs/transactions.md) ------
 * tenq.submit writes a job to tenq.inbox and tenq.complete / tenq.fail an
 * outcome to tenq.tx_outcomes, in the application's transaction; the leader
 * reads what committed and takes it in, deleting each row in the commit
 * that applies it (store_batch_inbox_done, store_batch_tx_done). */
typedef struct store_tx_job {
    uint64_t id; /* given in the transaction (odd) */
    const char *tenant, *queue, *type, *args, *key, *unique_key, *idempotency_key, *traceparent;
    bool unique, has_score;
    int64_t run_at; /* 0: now */
    int32_t priority;
    uint32_t max_attempts; /* 0: the queue's */
    double score;
    int64_t created_at;
    int64_t timeout_ms; /* 0: the queue's (schema 12) */
    /* keyed options (schema 26): the keys it names; bad_options: its stored
     * options could not be read (the job is refused when taken in) */
    const engine_limit_key *concurrency_keys;
    uint32_t n_concurrency_keys;
    const engine_rate_key *rate_keys;
    uint32_t n_rate_keys;
    int64_t expire_at, debounce_ms, debounce_max_ms;
    bool bad_options;
} store_tx_job;

typedef struct store_tx_outcome {
    uint64_t id, token;
    bool ok, has_retry_in;
    const char *result, *error;
    int64_t retry_in_ms;
} store_tx_outcome;

/* An event sent in a transaction (tenq.send_event, schema 24). */
typedef struct store_tx_event {
    uint64_t id; /* its number in tenq.event_inbox */
    const char *tenant, *key, *payload;
} store_tx_event;

typedef struct store_inbox {
    store_tx_job *jobs;
    size_t njobs;
    store_tx_outcome *outcomes;
    size_t noutcomes;
    store_tx_event *events;
    size_t nevents;
    bool cool; /* STORE_INBOX_COOL: no transaction that saw the flag set is open */
} store_inbox;

/* What a read of the inbox does first with the flag tenq.inbox_hot (schema
 * 15), which tells applications' transactions whether to notify. */
typedef enum store_inbox_flag {
    STORE_INBOX_KEEP, /* leaves it as it is */
    STORE_INBOX_HOT,  /* sets it: the leader reads again, transactions need not notify */
    STORE_INBOX_COOL, /* clears it, and sets in->cool when no transaction that saw it set
                         is still open (so that this read finds all they committed) */
} store_inbox_flag;

/* Does this store take jobs from applications' transactions (PostgreSQL)? */
bool store_has_inbox(const store_t *s);
/* Reads up to max jobs, max outcomes and max events, oldest first, on the reader
 * thread: fn(ctx, rc, in) in store_dispatch (in valid during the call).
 * floor: the engine's next id, which tenq.tx_ids is raised to when no
 * transaction is taking an id (so that ids stay in time order). */
typedef void (*store_inbox_fn)(void *ctx, int rc, const store_inbox *in);
void store_read_inbox(store_t *s, size_t max, uint64_t floor, store_inbox_flag flag,
                      store_inbox_fn fn, void *ctx);
void store_batch_inbox_done(store_batch *b, uint64_t id);
/* An event of tenq.event_inbox delivered: its row goes in this commit. */
void store_batch_event_inbox_done(store_batch *b, uint64_t id);
void store_batch_tx_done(store_batch *b, uint64_t id, uint64_t token);

typedef void (*store_token_fn)(void *ctx, const store_token *t);
/* Every token, revoked ones too (revoked_at set): ids are never reused. */
int store_load_tokens(store_t *s, store_token_fn fn, void *ctx);

/* ---- reads --------------------------------------------------------------- */

typedef struct store_rows {
    engine_job_info *jobs;
    size_t n;
} store_rows;

typedef struct store_job_query {
    const char *tenant, *queue, *type, *key; /* NULL: any */
    const char *args;   /* text its args (or payloads) contain, as stored: canonical JSON */
    int state;          /* -1: any */
    uint64_t before_id; /* newest first, ids below this; 0: newest */
    uint32_t limit;
} store_job_query;

typedef void (*store_rows_fn)(void *ctx, int rc, const store_rows *rows);
/* One job by id (rows->n is 0 when there is none). */
void store_get_job(store_t *s, uint64_t id, store_rows_fn fn, void *ctx);
void store_list_jobs(store_t *s, const store_job_query *q, store_rows_fn fn, void *ctx);
/* The same, on the caller's thread (tests, tools). */
int store_get_job_sync(store_t *s, uint64_t id, store_rows_fn fn, void *ctx);
/* Where a load of the plain jobs waiting in line (live = 2) is: the last
 * row read, by fifo order (its key, STORE_FIFO_KEY, and id; {-1, 0}: none
 * yet). */
typedef struct store_rest_cursor {
    int64_t key;
    uint64_t id;
} store_rest_cursor;
#define STORE_REST_START ((store_rest_cursor){-1, 0})
/* The cursor after this row. */
store_rest_cursor store_rest_after(const engine_job_info *row);
/* The next page of them, up to max rows, in fifo order (priority, then
 * run_at, then id), on the reader thread: what a load brings in after the
 * server began to serve (docs/SEMANTICS.md, "Serving while loading").
 * Rows with every field, as store_get_job's; without with_args, args of
 * more than 64 bytes are left in the store (args NULL, args_missing, and
 * args_len their length). */
void store_load_rest(store_t *s, store_rest_cursor after, size_t max, bool with_args,
                     store_rows_fn fn, void *ctx);

/* The args of these jobs (of their rows that have args; any order): rows
 * with only id, args and args_len set.  For args out of memory (the
 * engine's engine_args_wanted, a lease or a read that found a job's args
 * missing); read only after the rows' submits are committed. */
void store_read_args(store_t *s, const uint64_t *ids, size_t n, store_rows_fn fn, void *ctx);
/* A job's row (job NULL when there is none) and the rows of its attempts
 * that ended without it succeeding (store_batch_attempt), by token. */
typedef struct store_attempts {
    const engine_job_info *job;
    const engine_attempt_info *v;
    size_t n;
    /* its steps, without results: which attempt (token) stored each */
    const engine_step_info *steps;
    size_t n_steps;
} store_attempts;
typedef void (*store_attempts_fn)(void *ctx, int rc, const store_attempts *a);
void store_get_attempts(store_t *s, uint64_t id, store_attempts_fn fn, void *ctx);
/* A job's row (job NULL when there is none) and its steps in order, with
 * their results (store_batch_changes writes them: ENGINE_CH_STEP). */
typedef struct store_steps {
    const engine_job_info *job;
    const engine_step_info *v;
    size_t n;
} store_steps;
typedef void (*store_steps_fn)(void *ctx, int rc, const store_steps *st);
void store_get_steps(store_t *s, uint64_t id, store_steps_fn fn, void *ctx);
int store_get_steps_sync(store_t *s, uint64_t id, store_steps_fn fn, void *ctx);
/* A job's row (job NULL when there is none), its parents in the order it
 * named them (state -1 and result NULL: gone from the store) and its
 * children still in the store, the first 1,000 by id (children_total: all). */
typedef struct store_dep {
    uint64_t id;
    int state; /* engine_state, or -1: no row */
    const char *result;
} store_dep;
typedef struct store_deps {
    const engine_job_info *job;
    const store_dep *parents;
    size_t n_parents;
    const store_dep *children;
    size_t n_children, children_total;
} store_deps;
typedef void (*store_deps_fn)(void *ctx, int rc, const store_deps *d);
void store_get_deps(store_t *s, uint64_t id, store_deps_fn fn, void *ctx);
int store_get_deps_sync(store_t *s, uint64_t id, store_deps_fn fn, void *ctx);
int store_get_attempts_sync(store_t *s, uint64_t id, store_attempts_fn fn, void *ctx);
int store_list_jobs_sync(store_t *s, const store_job_query *q, store_rows_fn fn, void *ctx);

/* ---- the clock -------------------------------------------------------------
 * The store goes by its caller's clock (the engine's `now`): the wall clock
 * read once, advanced by the monotonic clock, so that a step of the wall
 * clock while the server runs changes nothing (until store_set_clock: the
 * wall clock at open).  The leader keeps the latest time of it in the store
 * (every 10 s, and at close; only ever raised), so that a start finds the
 * time the store last knew: a wall clock behind it went back while the
 * server was down (docs/SEMANTICS.md, "The clock"). */
void store_set_clock(store_t *s, int64_t wall0_ms, int64_t mono0_ns);
int64_t store_now(const store_t *s);
/* The latest time the store kept (*known_ms 0: none yet).  From this read
 * on, retention's clock runs from that time no faster than the monotonic
 * clock.  The caller's thread, before store_load. */
int store_clock_read(store_t *s, int64_t *known_ms);
/* Retention's clock: the caller's, but never ahead of the time the store
 * kept (store_clock_read) plus the monotonic time since, so that a wall
 * clock stepped ahead at a start prunes nothing early. */
int64_t store_retention_clock(store_t *s);
/* Keeps the clock's time in the store now, under the current term (a leader
 * about to resign: once it has, its writes are fenced off).  0 or an error. */
int store_keep_clock(store_t *s);

/* ---- retention ----------------------------------------------------------- */

/* One retention step now (tests): deletes up to the batch size of finished
 * jobs older than their queue's retention, and idempotency keys older than
 * a day, by the time `now` (the writer's steps go by store_retention_clock).
 * Returns rows deleted or an error. */
long store_prune_now(store_t *s, int64_t now);
/* Finished jobs (succeeded, cancelled, merged) matching the filter, at most
 * max, lowest ids first: deleted, or counted when dry_run.  Returns the
 * count or an error.  Runs on the caller's thread (an operator's action).
 * audit (may be NULL): written in the transaction of the delete. */
long store_purge_finished(store_t *s, const engine_job_filter *f, bool dry_run, long max,
                          const store_audit *audit);

/* ---- the audit log ---------------------------------------------------------- */

/* Which rows (newest first): before_id (0: from the newest), limit; the
 * rest narrow (0/NULL: any): a token, a tenant's ("" : the admins', made
 * with no tenant), a method, paths starting with path, since/until (at). */
typedef struct store_audit_query {
    int64_t before_id, token_id, since, until;
    const char *tenant, *method, *path;
    uint32_t limit;
} store_audit_query;
typedef struct store_audit_row {
    int64_t id;
    store_audit a;
} store_audit_row;
typedef void (*store_audit_fn)(void *ctx, int rc, const store_audit_row *rows, size_t n);
/* On the reader thread; fn on the loop's (store_dispatch), its rows good
 * until it returns. */
void store_list_audit(store_t *s, const store_audit_query *q, store_audit_fn fn, void *ctx);
int store_list_audit_sync(store_t *s, const store_audit_query *q, store_audit_fn fn, void *ctx);

/* ---- tests ----------------------------------------------------------------- */

/* SQLite: after this many more bytes written to files of this store, writes
 * fail as if the disk were full (-1: no limit).  The fault is raised by the
 * VFS under SQLite, so SQLite sees a real SQLITE_FULL. */
void store_test_set_write_budget(store_t *s, long long bytes);
/* SQLite's statements that update jobs (one row, or 16 at once; `hot`:
 * the form for updates that keep jobs in their lane place) and insert 16
 * at once; malloc'd.  For the tests that read their programs. */
char *store_sqlite_job_sql(bool many, bool hot);
char *store_sqlite_insert_rows_sql(void);

#endif
