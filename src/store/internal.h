// SPDX-License-Identifier: Apache-2.0
/* The store's insides: batches, the backend vtable, shared helpers. */
#ifndef TENQ_STORE_INTERNAL_H
#define TENQ_STORE_INTERNAL_H

#include "columns.h"
#include "schema.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Strings inside a batch live in one arena and are named by offset (the
 * arena may move as it grows).  SNULL: no string. */
typedef uint32_t soff;
#define SNULL UINT32_MAX

typedef enum {
    OP_JOB_INSERT,
    OP_JOB_UPDATE,
    OP_JOB_DELETE,
    OP_TENANT,
    OP_QUEUE,
    OP_IDEM,
    OP_TOKEN,
    OP_TOKEN_REVOKE,
    OP_REQUEST,
    OP_PAUSE,            /* u.pause: a queue paused or resumed for a tenant */
    OP_INBOX_DONE,       /* u.tx: a job taken in from the inbox */
    OP_TX_DONE,          /* u.tx: an outcome of an application's transaction applied */
    OP_ATTEMPT,          /* u.attempt: an attempt that ended without its job succeeding */
    OP_SCHEDULE,         /* u.sched: a schedule's whole row */
    OP_SCHEDULE_TICK,    /* u.sched: name, last_tick, next_tick */
    OP_SCHEDULE_DELETE,  /* u.sched: name */
    OP_DEP,              /* u.dep: an edge of a new job (its parent) */
    OP_BATCH,            /* u.bat: a batch's whole row */
    OP_BATCH_JOB,        /* u.bat: a job's link to its batch (id, job_id, role) */
    OP_USAGE,            /* u.usage: what a tenant or queue with a quota holds (PostgreSQL) */
    OP_AUDIT,            /* u.audit: a row of the audit log */
    OP_STEP,             /* u.step: a step's new row */
    OP_STEP_DONE,        /* u.step: a pending step's end (job_id, pos, its result) */
    OP_EVENT,            /* u.event: an event kept for a later wait */
    OP_EVENT_DELETE,     /* u.event: id, taken by a wait */
    OP_EVENT_INBOX_DONE, /* u.event: id, an event of tenq.event_inbox delivered (PostgreSQL) */
    OP_KEY_SETTING,      /* u.keyset: a key's settings set, or deleted */
} op_kind;

/* A job row in a batch: its columns (columns.h), strings in the arena. */
typedef struct batch_row {
    uint32_t fields;
    bool plain; /* engine_job_info.plain */
    STORE_JOB_COLUMNS_TABLE(STORE_JC_BATCH_FIELD)
} batch_row;

typedef struct store_op {
    op_kind kind;
    union {
        batch_row job;
        uint64_t id; /* JOB_DELETE */
        struct {
            soff name;
            engine_tenant_settings s;
        } tenant;
        struct {
            soff name;
            engine_queue_settings s;
        } queue;
        struct {
            soff tenant, key;
            uint64_t id;
            uint8_t state;
            bool duplicate, merged;
            int64_t created_at;
        } idem;
        struct {
            int64_t id, created_at, revoked_at;
            soff hash, role, queues;
            bool hide_data;
        } token;
        struct {
            soff scope, key, answer;
            uint64_t fingerprint;
            int status;
            int64_t created_at;
        } request;
        struct {
            uint64_t id, token;
        } tx;
        struct {
            soff queue, tenant;
            bool paused;
        } pause;
        struct {
            soff name;
            bool queue; /* a queue's, else a tenant's */
            uint64_t queued, bytes;
        } usage;
        struct {
            soff tenant, key;
            bool set; /* else deleted */
            engine_key_settings s;
        } keyset;
        struct {
            uint64_t job_id, token;
            uint32_t attempt;
            uint8_t outcome, job_state;
            int64_t leased_at, started_at, finished_at;
            soff worker, error, stats;
        } attempt;
        struct {
            uint64_t child, parent;
            uint32_t pos;
            uint8_t policy;
        } dep;
        struct {
            soff name, tenant, cron, timezone, missed, queue, type, args, key, unique_key;
            int32_t priority;
            uint32_t max_attempts;
            bool unique, paused;
            int64_t timeout_ms, last_tick, next_tick, created_at, updated_at;
        } sched;
        struct {
            uint64_t job_id, token, child;
            uint32_t pos, attempt, size;
            uint8_t kind;
            bool done;
            int8_t child_state; /* -1: none */
            int64_t created_at, finished_at, until;
            soff name, result, error, event;
        } step;
        struct {
            uint64_t id;
            int64_t created_at, expires_at;
            soff tenant, key, payload;
        } event;
        struct {
            int64_t at, token_id;
            int status;
            soff role, tenant, method, path, peer, detail;
        } audit;
        struct {
            uint64_t id, job_id, cb_id[ENGINE_NCALLBACKS];
            soff tenant, callbacks;
            int64_t created_at, closed_at;
            uint64_t total, succeeded, cancelled, merged, deleted, deaths, expired;
            uint8_t role;
        } bat;
    } u;
} store_op;

struct store_batch {
    store_op *ops;
    size_t n, cap;
    char *arena;
    size_t alen, acap;
    uint64_t seq;
    uint64_t epoch; /* the failure generation it was handed over in */
    uint64_t term;  /* the leadership term its changes were made under */
    bool more;      /* a part of a chain whose end is still to come */
    struct store_batch *next;
};

/* A new operation of the batch (zeroed), and a string copied into its arena. */
store_op *store_op_push(store_batch *b, op_kind k);
soff store_arena_put(store_batch *b, const char *s, size_t len);

static inline const char *bstr(const store_batch *b, soff o)
{
    return o == SNULL ? NULL : b->arena + o;
}

/* The parameters of an audit row's statement (OP_AUDIT), in order. */
void store_audit_params(const store_batch *b, const store_op *o, const store_param_sink *out);
/* The parameters of a schedule's statement (OP_SCHEDULE*), in order. */
void store_schedule_params(const store_batch *b, const store_op *o, const store_param_sink *out);

/* Batches' rows and their jobs' links into the engine (batches.c), after
 * the jobs, with the store's lock held. */
int store_load_batches(store_t *s, engine_t *e);
/* The parameters of a batch's statement (OP_BATCH, OP_BATCH_JOB), in order. */
void store_batch_params(const store_batch *b, const store_op *o, const store_param_sink *out);

/* Durable steps' and kept events' rows (steps.c): the parameters of their
 * statements (OP_STEP, OP_STEP_DONE, OP_EVENT, OP_EVENT_DELETE), in order;
 * the load of the live jobs' steps and the kept events, after the jobs and
 * their edges, before the waits are worked out (engine_load_deps_done). */
void store_step_params(const store_batch *b, const store_op *o, const store_param_sink *out);
int store_load_steps(store_t *s, engine_t *e, int64_t now);

/* Rows for reads: the row array plus every string allocated for them. */
typedef struct rows_builder {
    engine_job_info *v;
    size_t n, cap;
    void **mem;
    size_t nmem, capmem;
} rows_builder;
engine_job_info *rows_add(rows_builder *rb);
/* A copy of s (NULL stays NULL) that lives as long as the rows. */
const char *rows_str(rows_builder *rb, const char *s);
void rows_keep(rows_builder *rb, void *p);
void rows_free(rows_builder *rb);
struct store_rowacc;
/* Adds the job of a database row (read through acc), its strings and
 * payloads copied into the rows.  0, or TENQ_ECORRUPT with the store's error set. */
int rows_add_row(store_t *s, rows_builder *rb, const struct store_rowacc *acc, void *row);

/* A finished piece of work waiting for store_dispatch (results.c). */
typedef struct store_result {
    int kind; /* 0 commit, 1 read */
    /* a read: hands it to its callback and frees what it read (reader.c) */
    void (*deliver)(struct store_result *r);
    uint64_t seq;
    int rc;
    /* reads: of jobs (fn, rows), or of a request key (rfn, req) */
    store_rows_fn fn;
    store_request_read_fn rfn;
    void *ctx;
    rows_builder rows;
    bool found;
    store_request_key req; /* its strings malloc'd */
    store_inbox_fn ifn;    /* a read of the inbox: its rows (strings kept in rows) */
    store_inbox inbox;
    store_attempts_fn afn; /* a read of a job's attempts: the job in rows, these */
    store_deps_fn dfn;     /* a read of a job's edges: the job in rows, these */
    store_steps_fn sfn;    /* a read of a job's steps: the job in rows, these */
    engine_step_info *stp; /* steps read (a job's, or with its attempts) */
    size_t nstp, capstp;
    void (*xdone)(void *ctx, int rc); /* a read of its own (read_req's xrun) */
    store_dep *dep;                   /* parents first (ndep_parents), then children */
    size_t ndep, capdep, ndep_parents, ndep_total;
    engine_attempt_info *att;
    size_t natt, capatt;
    bool bad_att; /* an attempt row held a word this tenq does not know */
    struct store_result *next;
} store_result;

typedef struct read_req {
    uint64_t id; /* get one job when nonzero */
    store_job_query q;
    char *qstrings; /* owned copies of the query's strings (and scope, key) */
    store_rows_fn fn;
    store_request_read_fn rfn; /* a request key's read: scope, key */
    const char *scope, *key;
    store_inbox_fn ifn;    /* an inbox read: up to max, raising tx ids to floor */
    store_attempts_fn afn; /* a job (id) and its attempts */
    store_deps_fn dfn;     /* a job (id) and its edges */
    store_steps_fn sfn;    /* a job (id) and its steps */
    uint64_t *ids;         /* an args read: these jobs' ids and args (fn), owned */
    size_t nids;
    bool rest;      /* a page of plain jobs (fn) after rest_after, up to max */
    bool rest_args; /* with their args (else only small ones) */
    store_rest_cursor rest_after;
    /* a read of its own (the audit log): run on the reader thread, then
     * done on the loop's, with its rc */
    int (*xrun)(store_t *s, void *ctx);
    void (*xdone)(void *ctx, int rc);
    size_t max;
    uint64_t floor;
    store_inbox_flag flag;
    void *ctx;
    struct read_req *next;
} read_req;

/* A job's steps (steps.c, on the reader thread): with their results, or
 * without (names: for its attempts); and their delivery. */
int store_read_steps(store_t *s, uint64_t id, bool results, store_result *res);
void store_steps_deliver(store_result *res);
/* A read of its own (read_req's xrun, xdone), queued for the reader
 * thread, or run now on the caller's (sync; 0 or the run's rc). */
void store_read_own(store_t *s, int (*run)(store_t *, void *), void (*done)(void *, int),
                    void *ctx);
int store_read_own_sync(store_t *s, int (*run)(store_t *, void *), void (*done)(void *, int),
                        void *ctx);
/* The inbox's read (inbox.c), on the reader thread. */
int store_inbox_run(store_t *s, size_t max, uint64_t floor, store_inbox_flag flag, store_inbox *in,
                    rows_builder *keep);
void store_inbox_free(store_inbox *in);

/* A job row ready to write: its columns (columns.h), strings pointing into
 * the batches' arenas. */
typedef struct group_row {
    uint32_t fields; /* ENGINE_JF_*, of every operation folded in */
    bool plain;      /* engine_job_info.plain, as of its latest operation */
    bool dropped;
    STORE_JOB_COLUMNS_TABLE(STORE_JC_GROUP_FIELD)
} group_row;

/* What one transaction writes, folded: every job appears once, as an
 * insert (new in this group, with its latest state) or an update (its
 * latest state; payloads, result, stats as last set), and deletes last.
 * Other operations keep their order. */
typedef struct store_group {
    uint64_t term; /* every batch's: the transaction checks it */
    group_row *ins, *upd;
    size_t nins, nupd;
    uint64_t *del;
    size_t ndel;
    const store_op **other;
    const store_batch **other_b;
    size_t nother;
    /* rows of the inbox and of tx_outcomes to delete (PostgreSQL) */
    uint64_t *inbox_done, *tx_id, *tx_token;
    size_t ninbox, ntx;
} store_group;

void store_group_build(store_group *g, store_batch *const *batches, size_t n);
/* Is the row's job live after this write (unfinished or dead)? */
/* The row's `live` (docs/schema.md): 2 for a plain job waiting in line
 * (ready or scheduled: a load brings it in after the server began to
 * serve), 1 for every other unfinished or dead job, 0 (NULL) once final. */
static inline int group_row_live(const group_row *r)
{
    if (r->state >= ENGINE_SUCCEEDED) return 0;
    return r->plain && (r->state == ENGINE_READY || r->state == ENGINE_SCHEDULED) ? 2 : 1;
}
/* May this update skip every index (the job stays live in its lane place)?
 * Never for a plain job: its live goes between 2 and 1 with its state; nor
 * for one that just stopped being plain (its first step: live 2 to 1). */
static inline bool group_row_hot(const group_row *r)
{
    return group_row_live(r) == 1 && !r->plain && r->state != ENGINE_DEAD &&
           !(r->fields & (ENGINE_JF_LANE | ENGINE_JF_STEPS | ENGINE_JF_ARGS));
}
void store_group_free(store_group *g);

typedef struct store_driver {
    const char *name;
    /* Writes a group in one transaction (the write connection): begins it
     * unless `begin` is false (a chain's transaction is open already), and
     * commits it unless `commit` is false (more of the chain follows).  On
     * an error the transaction is rolled back, chain and all. */
    int (*apply)(store_t *s, const store_group *g, bool begin, bool commit);
    /* Rolls back a chain's open transaction; NULL when the backend takes
     * no chains (apply is then always called to begin and commit). */
    void (*abandon)(store_t *s);
    int (*load)(store_t *s, engine_t *e, int64_t now, store_load_stats *st);
    /* A query (a template of schema.h: $S, ?N) with text parameters; each
     * row handed to row(ctx, acc, row).  On the write connection (under
     * db_lock), or the read connection (under read_db_lock). */
    int (*select)(store_t *s, bool read, const char *tmpl, int n, const char *const *params,
                  void (*row)(void *ctx, const struct store_rowacc *acc, void *row), void *ctx);
    /* A read on the read connection: one job by id, or a page. */
    int (*query)(store_t *s, uint64_t id, const store_job_query *q, rows_builder *rows);
    /* A transaction of the write connection's own (retention): begun
     * under the term (0: unfenced; PostgreSQL calls tenq.fence first), a
     * statement (a template, text parameters; rows changed, or an error),
     * ended (committed, or rolled back).  Under db_lock. */
    int (*tx_begin)(store_t *s, uint64_t term);
    long (*tx_exec)(store_t *s, const char *tmpl, int n, const char *const *params);
    int (*tx_end)(store_t *s, bool commit);
    /* Leadership (store.h): campaign, new_term, renew, resign, wait. */
    int (*campaign)(store_t *s, const store_node *me, uint64_t *term, store_leader *who);
    int (*new_term)(store_t *s, const store_node *me, uint64_t term, uint64_t *next);
    int (*renew)(store_t *s, const store_node *me, uint64_t term);
    void (*resign)(store_t *s, const store_node *me, uint64_t term);
    int (*leader_wait)(store_t *s, int wake_fd, int ms);
    /* Applications' transactions (inbox.c): whether one committed since the
     * last call (the leader_wait's other news); NULL: the backend has no
     * inbox (SQLite). */
    bool (*inbox_news)(store_t *s);
    void (*close)(store_t *s);
} store_driver;

struct store {
    const store_driver *be;
    void *impl;
    store_opts opts;
    char where[256];
    char err[512];
    pthread_mutex_t err_lock;

    /* writer */
    pthread_t writer;
    pthread_mutex_t lock; /* guards the fields below */
    pthread_cond_t cond;
    store_batch *pending, *pending_tail;
    bool stopping;
    uint64_t next_seq;
    uint64_t term;          /* batches carry the term they were handed over in */
    uint64_t epoch;         /* and the failure generation */
    uint64_t ok_epoch;      /* batches of older epochs fail */
    int fail_rc;            /* why they fail */
    uint64_t committed_seq; /* highest committed */
    bool writer_busy;
    uint64_t n_transactions, n_batches;
    store_timing timing;
    /* The writer's priority while the server is quiet (see writer_rest):
     * whether it may step aside, its policy now (read by the caller's
     * watchdog), how long it waits for each batch (a moving average),
     * and until when it keeps normal priority after the watchdog raised it. */
    bool writer_may_idle;
    int writer_policy;
    double writer_wait_ns;
    int64_t writer_normal_until_ns;
    uint64_t n_writer_raised;
    int writer_tid;

    /* the clock (clock.c): the caller's clock is the monotonic clock in ms
     * plus clock_off_ms (atomic); the time the store had kept when last read,
     * and the monotonic ms of that read (0: never read; both under lock) */
    int64_t clock_off_ms;
    int64_t known_ms, known_mono_ms;

    /* write connection: the writer, load and prune share it */
    pthread_mutex_t db_lock;

    /* reader */
    pthread_t reader;
    read_req *reads, *reads_tail;
    pthread_cond_t read_cond;
    pthread_mutex_t read_db_lock; /* the read connection */

    /* results for the caller's thread */
    int efd;
    store_result *results, *results_tail;

    store_commit_fn on_commit;
    void *on_commit_ctx;
    uint64_t sync_seq;
    int sync_rc;
    bool sync_done;
};

void store_set_err(store_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* One retention step, under db_lock (retention.c): rows deleted, or an error. */
long store_retention_step(store_t *s, int64_t now, uint64_t term);
/* The clock (clock.c): set from the wall clock at open; the caller's time
 * kept in the store (a transaction of its own under the term, under
 * db_lock), only ever raised. */
void store_clock_init(store_t *s);
int store_clock_save(store_t *s, uint64_t term);
/* A finished commit or read, for the caller's thread (results.c:
 * store_dispatch). */
void store_post_result(store_t *s, store_result *r);
/* The threads (writer.c, reader.c). */
void *store_writer_main(void *arg);
void *store_reader_main(void *arg);
/* Whether the writer may be put at idle priority and taken back (writer.c). */
bool store_writer_may_leave_idle(void);

/* Backends. */
int store_sqlite_open(store_t *s, const char *path, char *errbuf, size_t errlen);
/* Takes the exclusive lock of one server on a SQLite file (sqlite_lock.c):
 * 0 with *fd the descriptor that holds it, or TENQ_EUNAVAILABLE with a
 * message naming the process that holds it. */
int store_sqlite_lock(const char *path, int *fd, char *errbuf, size_t errlen);
int store_pg_open(store_t *s, const char *url, char *errbuf, size_t errlen);

/* Parses a stored payloads array into engine payloads (data is canonical
 * JSON, malloc'd; free with store_payloads_free). */
int store_payloads_parse(const char *text, engine_payload **out, uint32_t *n);
void store_payloads_free(engine_payload *p, uint32_t n);

#endif
