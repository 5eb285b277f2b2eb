// SPDX-License-Identifier: Apache-2.0
/* The API server's insides, shared by its .c files. */
#ifndef TENQ_API_INTERNAL_H
#define TENQ_API_INTERNAL_H

#include "admit.h"
#include "api.h"
#include "args_read.h"
#include "load_rest.h"
#include "http.h"
#include "jbuf.h"

#include "base/cron.h"
#include "base/htab.h"
#include "base/jscan.h"
#include "base/xalloc.h"
#include "engine/engine.h"
#include "store/store.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct event;
struct event_base;

/* ---- auth ------------------------------------------------------------------- */

/* ROLE_VIEWER is a token's role only: a request made with one has the
 * role of its scope (ROLE_ADMIN for "viewer", ROLE_TENANT for
 * "viewer:NAME") with read_only set (router.c), so that every handler
 * scopes its reads as for those roles. */
typedef enum {
    ROLE_NONE = 0,
    ROLE_ADMIN = 1,
    ROLE_TENANT = 2,
    ROLE_WORKER = 4,
    ROLE_VIEWER = 8
} role_kind;
#define ROLES_ALL (ROLE_ADMIN | ROLE_TENANT | ROLE_WORKER)

typedef struct token {
    int64_t id;
    char hash[65];
    role_kind role;
    char tenant[ENGINE_NAME_MAX + 1]; /* ROLE_TENANT; ROLE_VIEWER: its scope ("": every tenant) */
    char **queues;                    /* NULL: every queue */
    size_t nqueues;
    char *queues_json;
    int64_t created_at;
    bool hide_data; /* a viewer that sees jobs without their args and results */
    bool revoked;   /* kept until exit: requests in flight may point here */
} token;

/* Who is asking: a token, or everyone (no tokens configured). */
typedef struct principal {
    role_kind role;
    const token *tok; /* NULL when no tokens exist */
    bool read_only;   /* a viewer: GET only */
    bool hide_data;   /* jobs shown without args, payloads, result, progress */
} principal;

typedef struct auth {
    htab by_hash;
    token **all;
    size_t n, cap;
    int64_t next_id;
} auth;

void auth_init(auth *a);
void auth_free(auth *a);
token *auth_add(auth *a, int64_t id, const char *hash, const char *role, const char *queues_json,
                int64_t created_at, bool hide_data);
token *auth_find_secret(auth *a, const char *secret);
token *auth_find_id(auth *a, int64_t id);
/* The token a verified client certificate stands for: its common name is
 * "token:ID" (mutual TLS).  NULL with the reason in why when it names none,
 * or one unknown or revoked. */
token *auth_find_cert(auth *a, const char *cn, char *why, size_t wl);
/* Revokes at once: the token no longer authenticates. */
void auth_revoke(auth *a, token *t);
/* Parses "admin", "worker", "tenant:NAME", "viewer", "viewer:NAME". */
bool auth_parse_role(const char *role, role_kind *kind, char *tenant);
/* A token's role as the API writes it ("tenant:acme", "viewer"), into out. */
void auth_role_text(const token *t, char *out, size_t len);
/* The role's word alone, for messages ("tenant", "viewer"). */
const char *auth_role_word(role_kind r);
bool token_allows_queue(const token *t, const char *queue);
/* A new random secret: "tq_" + 43 base64url characters. */
void auth_new_secret(char out[64]);

/* ---- the server --------------------------------------------------------------- */

struct server;
/* What a request does once its changes are committed (srv_after_commit):
 * rc 0, or why they were not; req NULL when the client went away (then it
 * only frees ctx). */
typedef void (*commit_then)(struct server *s, http_req *req, void *ctx, int rc);

/* A reply held until the batch with its changes is committed, or a step
 * to take then (then, ctx). */
typedef struct pending {
    http_req *req; /* NULL when the client went away */
    int status;
    char *body;
    size_t len;
    commit_then then;
    void *ctx;
    struct pending *next;
} pending;

/* Ids of jobs that reached a final state in a batch (for waiters). */
typedef struct idvec {
    uint64_t *v;
    size_t n, cap;
} idvec;

typedef struct inflight {
    uint64_t seq;
    uint64_t term; /* the term its changes were made under */
    pending *replies, *replies_tail;
    idvec done;
    struct inflight *next;
} inflight;

typedef struct lease_waiter {
    struct server *srv;
    http_req *req;
    principal who;
    char **queues;
    size_t nqueues;
    char **types;
    size_t ntypes;
    size_t max;
    char *worker;
    char *results; /* the answers to outcomes reported with the lease, or NULL */
    bool columns;  /* its jobs as columns (lease_json.c) */
    struct event *timer;
    struct lease_waiter *prev, *next;
} lease_waiter;

typedef struct job_waiter {
    struct server *srv;
    http_req *req;
    uint64_t id;
    principal who;
    struct event *timer;
    struct job_waiter *prev, *next;
} job_waiter;

/* A read from the store on behalf of a request that may go away meanwhile. */
typedef struct read_ctx {
    struct server *srv;
    http_req *req; /* NULL once the client left */
    principal who;
    uint64_t id;
    uint64_t committed_before; /* for wait: re-read if a commit landed meanwhile */
    int kind;                  /* what to do with the rows */
    int64_t timeout_ms;
    bool want_token;
    uint32_t limit;
} read_ctx;

read_ctx *read_ctx_new(struct server *s, http_req *req, const principal *who);
/* Detaches the context from its request; returns the request or NULL. */
http_req *read_ctx_take(read_ctx *c);
/* Attaches the context to its request again (for a second read). */
void read_ctx_rearm(read_ctx *c, http_req *req);

/* A ring of per-second samples of a counter pair, for rates. */
typedef struct rate_ring {
    uint64_t hash;
    char *name;
    uint64_t ok[61], bad[61];
    int head, filled;
} rate_ring;

/* Throughput and depth over the last hour, one sample each 10 s (history.c):
 * the totals' counters and counts, so that a page opened now draws an hour. */
#define HISTORY_EVERY_S 10
#define HISTORY_N       361
typedef struct history_sample {
    int64_t t;
    uint64_t succeeded, failed; /* totals since start (rates come from two samples) */
    /* one count per LIVE state (tenq/states.h) */
#define HISTORY_COUNT_(name, word, abi, kind, finished, help)                                      \
    TENQ_STATE_IF_LIVE(kind, uint64_t word;)
    TENQ_STATE_TABLE(HISTORY_COUNT_)
#undef HISTORY_COUNT_
} history_sample;

/* Workers seen (workers.c). */
typedef struct worker_seen worker_seen;

/* Request keys (request_keys.c). */
typedef struct rkey rkey;
typedef struct rkey_set rkey_set;

/* Periodic jobs (cron.c; the API in api_schedules.c). */
typedef enum { MISSED_SKIP, MISSED_ONCE, MISSED_EACH } cron_missed;
#define CRON_EACH_MAX 100 /* missed ticks the policy "each" makes up, at most */
typedef struct cron_set cron_set;
typedef struct schedule {
    char *name, *tenant, *cron_text, *timezone;
    char *queue, *type, *args, *key, *unique_key; /* the job; key, unique_key may be NULL */
    tq_cron cron;
    const tq_zone *zone; /* the server's, shared */
    cron_missed missed;
    int32_t priority;
    uint32_t max_attempts; /* 0: the queue's */
    bool unique, paused;
    bool broken; /* loaded, but its expression or zone no longer reads: never ticks */
    int64_t timeout_ms, last_tick, next_tick, created_at, updated_at;
    char *last_error;  /* why the last tick was refused, or NULL */
    uint64_t last_job; /* the job the last tick made here (0: none since this load) */
    uint32_t hidx;
} schedule;

typedef struct server {
    api_config cfg;
    struct event_base *base;
    http_server *http;
    engine_t *e;
    store_t *st;
    auth auth;
    int port;

    /* the engine's clock: wall0_ms (atomic: only ever raised, by the
     * loader, srv_clock_at_least) plus the monotonic time since mono0_ns */
    int64_t wall0_ms, mono0_ns;

    store_batch *batch;
    pending *cur, *cur_tail; /* replies waiting for the batch being built */
    idvec cur_done;          /* jobs finished in the batch being built */
    inflight *inflight, *inflight_tail;
    uint64_t last_seq;
    bool chain_open; /* srv_hand_over gave the writer a part; srv_end_chain ends it */
    struct event *flush_ev;
    struct event *store_ev;
    struct event *writer_watch_ev; /* see watch_writer */

    lease_waiter *lwait;
    size_t n_lwait;
    /* srv_wake_leases is running: a lease's reply collected more wake-ups,
     * which wait here for the pass in progress (it walks the waiters) */
    bool waking;
    char **wake_later;
    size_t n_wake_later;
    job_waiter *jwait;

    struct event *tick_ev;
    int64_t tick_at;
    /* job rows written late: leases and readiness not yet stored (commit.c) */
    htab late_rows;
    struct late_row *late_first, *late_last;
    struct event *late_ev;
    struct event *sample_ev;
    htab rates_q, rates_t;
    uint64_t rate_samples; /* samples taken since start */
    htab workers;          /* worker_seen by name */
    history_sample history[HISTORY_N];
    int history_head, history_n;
    struct event *resync_ev;
    bool resyncing;
    /* taking in what applications' transactions committed (ingest.c) */
    struct event *ingest_ev, *ingest_retry_ev;
    bool ingest_busy, ingest_again;
    int ingest_phase;      /* idle, hot or cooling (ingest.c) */
    int ingest_streak;     /* reads in a row that found rows */
    int ingest_backoff_ms; /* until the next read while cooling */
    uint64_t ingest_term;  /* the term of the last read */
    /* the leadership (lead.c): leading is true while this server's engine
     * is the store's (resyncing: reloading it; writes refused), under term */
    struct lead *lead;
    rkey_set *rkeys; /* request keys (request_keys.c) */
    cron_set *cron;  /* periodic jobs (cron.c) */
    bool leading;
    uint64_t term;
    bool admin_token_refused; /* TENQ_ADMIN_TOKEN names another role's token */
    /* the request being handled, when its route is one the audit log
     * records (api_audit.c), and who made it */
    http_req *audit_req;
    principal audit_who;

    struct event *sig_term, *sig_int, *sig_hup;
    struct tls_server *tls; /* NULL: plain HTTP */
    bool stopping;
    bool open_network; /* listening beyond loopback: tokens always required */
    int exit_code;

    admit_state admit;         /* quotas and the memory budget (admit.c) */
    args_read_state args;      /* args out of memory: reads (args_read.c) */
    load_rest_state load_rest; /* the plain jobs brought in while serving (load_rest.c) */

    /* counters for /metrics */
    uint64_t n_requests, n_errors;
    uint64_t n_commits_ok, n_commits_failed;
} server;

int64_t srv_now(server *s);
/* Moves the engine's clock forward to at least `known` (the time the store
 * kept: a wall clock behind it went back while the server was down) and
 * tells the store.  Any thread. */
void srv_clock_at_least(server *s, int64_t known);

/* ---- the leadership (lead.c, and the loop's side in lead_loop.c) ---------------- */

/* A fresh engine whose fencing tokens start above every earlier term's (any
 * thread). */
engine_t *srv_engine_new(server *s, uint64_t term);
/* The loop's side: an engine loaded under a new term begins to serve; the
 * leadership lost (to another server: standby now); the leadership not
 * certain (writes refused until it is won again, or another server leads). */
void srv_install(server *s, engine_t *e, uint64_t term, const store_load_stats *st,
                 const store_token *tokens, size_t ntokens, rkey_set *keys, void *crons);
void srv_step_down(server *s, const char *why);
void srv_detach(server *s, const char *why);
/* Leads, its engine current, its leadership certain: may change anything. */
bool srv_serving(server *s);
/* The answer of a server that does not lead: 307 to the leader, or 503. */
void srv_not_leader(server *s, http_req *req);
/* Tokens as the store has them (revoked ones too), merged into this
 * server's; the TENQ_ADMIN_TOKEN one made when missing (-1: refused). */
void srv_merge_tokens(server *s, const store_token *v, size_t n);
int srv_ensure_admin_token(server *s);

/* The leadership thread.  lead_start makes this start's node name's
 * holder, campaigns once (and loads, when it wins) before the loop runs,
 * then starts the thread; lead_stop (resign: give the leadership up) ends
 * it, and lead_free frees what is left (the node's name and address stay
 * readable until then). */
void lead_node_name(char *out, size_t len);
int lead_start(server *s, const char *node, const char *listen_host);
void lead_stop(server *s, bool resign);
void lead_free(server *s);
/* The leadership is certain now (SQLite: always). */
bool lead_valid(const server *s);
/* After a failed commit, every batch reported: a new term, a new engine. */
void lead_reload(server *s);
/* Something says the leadership may be lost: the thread looks now. */
void lead_recheck(server *s);
/* The leader's URL when another server leads and its URL is known. */
bool lead_leader(server *s, char *url, size_t len);
const char *lead_node(const server *s);
const char *lead_advertise(const server *s);

/* Errors in the protocol's shape; `field` may be NULL. */
void reply_error(http_req *req, int err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void reply_json(http_req *req, int status, jbuf *b);
void reply_engine_err(http_req *req, const engine_err *err);

/* After a handler changed the engine: collects its changes into the batch
 * being built and answers req with (status, body) once they are committed.
 * With nothing to commit it answers once everything handed over so far is
 * committed (at once if that is all done).  Takes the jbuf's text. */
void srv_commit_reply(server *s, http_req *req, int status, jbuf *b);
/* The same, but answers at once: the changes commit with the batch being
 * built, after the answer.  Only for leases of at-least-once queues (see
 * docs/SEMANTICS.md "Durability"). */
void srv_commit_reply_now(server *s, http_req *req, int status, jbuf *b);
/* Collects the handler's changes and calls then(s, req, ctx, rc) once
 * they, and everything handed over before them, are committed (at once
 * when that is all done); the handler does not answer req itself.  req may
 * be NULL: a step of the server's own. */
void srv_after_commit(server *s, http_req *req, commit_then then, void *ctx);
/* Wakes the long polls of queues that just got work, before the caller
 * builds its reply and before the changes go into the batch: the woken
 * worker's lease leaves first (measured in W2: ARCHITECTURE.md).  Changes
 * are collected as before, and a queue woken twice costs one empty try. */
void srv_wake_first(server *s);
/* Collects the engine's changes without a reply (ticks). */
void srv_collect(server *s);
/* Inside a handler making many changes (a big batch of submits): hands
 * those made so far to the writer, which writes them while the handler
 * goes on but commits them only with the rest (store_commit_part): the
 * request is kept whole or not at all.  The handler must call
 * srv_end_chain after its srv_commit_reply, before it returns.  Does
 * nothing on a store that takes no chains. */
void srv_hand_over(server *s);
void srv_end_chain(server *s);

/* The commit pipeline's own (commit.c): its events made (0, or -1 when one
 * could not be) and freed; a flush of the batch being built at the end of
 * this turn of the loop, or now; the leases waiting to be written, written
 * (those granted before `before`) or dropped; what was not handed over yet
 * answered rc and dropped (its engine is being replaced). */
int srv_commit_start(server *s);
void srv_commit_timers_off(server *s);
void srv_commit_free(server *s);
void srv_schedule_flush(server *s);
void srv_flush_now(server *s);
void srv_write_late_rows(server *s, int64_t before);
/* A commit's outcome the store contradicts: writes stop and the engine is
 * loaded again from the store (why: for the log). */
void srv_reload(server *s, const char *why);

/* Applications' transactions (ingest.c; PostgreSQL): what they committed to
 * the inbox is read and taken in now, if this server leads and serves, and
 * then every --inbox-poll in case a notification was lost. */
int srv_ingest_start(server *s);
void srv_ingest_kick(server *s);
void srv_ingest_stop(server *s); /* its timers off */
void srv_ingest_free(server *s);
void srv_drop_late_rows(server *s);
void srv_drop_uncommitted(server *s, int rc, const char *why);

/* Periodic jobs (cron.c).  The loader thread collects the store's
 * schedules (cron_load_new, cron_collect as a store_schedule_fn); the
 * loop installs them with the engine (srv_cron_install, which takes what
 * was loaded, and submits the ticks missed meanwhile by each schedule's
 * policy) and drops them when it stops leading (srv_cron_clear).
 * srv_cron_put takes x (compiled: cron_compile) and replaces any schedule
 * of its name; put, delete and pause write the row into the batch being
 * built (the caller answers with srv_commit_reply). */
int srv_cron_start(server *s);
void srv_cron_free(server *s);
void srv_cron_clear(server *s);
void *cron_load_new(void);
void cron_collect(void *ctx, const store_schedule *x);
void cron_load_free(void *loaded);
void srv_cron_install(server *s, void *loaded);
extern const char *const cron_missed_words[]; /* "skip", "once", "each", NULL */
int cron_missed_parse(const char *w);         /* -1: none of them */
/* Parses x->cron_text and finds x->timezone: 0, or -1 with the reason. */
int cron_compile(server *s, schedule *x, char *err, size_t errlen);
const tq_zone *srv_cron_zone(server *s, const char *name, char *err, size_t errlen);
int64_t cron_next(const schedule *x, int64_t after); /* the first tick after; -1: none */
void cron_schedule_free(schedule *x);
schedule *srv_cron_find(server *s, const char *name);
/* Every schedule (malloc'd array, in no order): how many. */
size_t srv_cron_all(server *s, schedule ***out);
void srv_cron_counters(server *s, size_t *schedules, uint64_t *ticks, uint64_t *refused);
void srv_cron_put(server *s, schedule *x, int64_t now);
void srv_cron_delete(server *s, schedule *x);
void srv_cron_pause(server *s, schedule *x, bool paused, int64_t now);

/* Long polls and job waits (waiters.c). */
void srv_wake_leases(server *s, const char *queue);
/* Whether a request waits for this job; answers every waiter of it with its
 * committed state. */
bool srv_has_waiter(uint64_t id);
void srv_answer_waiters(server *s, uint64_t id);
/* A lease long poll answered now with no jobs (its results, if any). */
void srv_lease_waiter_end(server *s, lease_waiter *w);
/* Every job waiter answered as a standby would (this server lost the jobs). */
void srv_end_job_waiters(server *s);
void srv_waiters_free(server *s);

/* The loop (server.c, router.c). */
void srv_on_request(void *ctx, http_req *req);
void srv_rearm_tick(server *s);
void srv_maybe_finish_stop(server *s);
/* The rates' sampling timer (api_rates.c): 0, or -1 when it cannot start. */
int api_rates_start(server *s);

/* Routes (router.c's table).  query: the query parameters the route
 * takes, space-separated (NULL: any); body: whether its handler reads a
 * JSON object (and refuses a member it does not know) or takes none (an
 * empty body, or {}).  The router refuses anything else before the
 * handler runs: a parameter not listed or given twice, a body to a route
 * that takes none (400, naming the parameter or member). */
typedef void (*route_fn)(server *s, http_req *req, const principal *who, const char **args);
typedef enum { BODY_NONE, BODY_JSON } route_body;
typedef struct route {
    const char *method;
    const char *pattern; /* "/v1/jobs/{}/ack": {} takes one segment */
    route_fn fn;
    int roles; /* role_kind bits, and ROUTE_AUDIT */
    const char *query;
    route_body body;
} route;
/* In a route's roles: a change the audit log records (api_audit.c). */
#define ROUTE_AUDIT 0x100

/* The audit log (api_audit.c).  The router brackets an audited route's
 * handler with begin and end; srv_commit_reply (and _now) call note, which
 * writes the request's row into the batch being built (the commit of its
 * change); take fills *a instead, for a change committed by a transaction
 * of its own, and returns NULL when the request is not audited (mem: its
 * strings, freed by the caller). */
void srv_audit_begin(server *s, http_req *req, const principal *who);
void srv_audit_end(server *s);
void srv_audit_note(server *s, http_req *req, int status);
const store_audit *srv_audit_take(server *s, http_req *req, int status, store_audit *a,
                                  char *mem[3]);
void h_audit(server *s, http_req *req, const principal *who, const char **args);

/* Job JSON.  wait: why the job is not handed out now ("waiting"), or NULL
 * to leave it out (a job read from the store). */
/* How a job is shown to whom (api_job_view): with its lease token, without
 * its data (args, payloads, result, progress: "data_hidden": true). */
#define JOB_VIEW_TOKEN 1u
#define JOB_VIEW_HIDE  2u
unsigned api_job_view(const principal *who);
void api_json_job(jbuf *b, const engine_job_info *j, unsigned view, const engine_wait *wait,
                  int64_t now);
/* An answer's field of an item (json_fields.c): whether the item has it
 * (NULL: every item has it), and its value written. */
typedef struct api_field {
    const char *name;
    bool (*has)(const void *item);
    void (*put)(jbuf *b, const void *item);
} api_field;
/* One item as an object of the fields it has. */
void api_json_object(jbuf *b, const void *item, const api_field *fields, size_t nfields);
/* n items, each `size` bytes after the last, as the member "jobs" (a list
 * of objects) or, columns, "columns": a list per field some item has, null
 * for the items without it. */
void api_json_items(jbuf *b, const void *items, size_t n, size_t size, const api_field *fields,
                    size_t nfields, bool columns);
/* A lease's n jobs, as api_json_items writes them (lease_json.c). */
void api_json_leased(jbuf *b, const engine_job_info *jobs, size_t n, bool columns);
/* A merging queue's job's payloads: [{"payload": ..., "score": ...}, ...]. */
void api_json_payloads(jbuf *b, const engine_job_info *j);

/* Request bodies. */
json_t *req_body(http_req *req); /* replies 400 itself and returns NULL on error */
/* The first key of obj not in allowed (NULL-terminated), or NULL. */
const char *obj_unknown_field(json_t *obj, const char *const *allowed);
/* Checks that every key of obj is in the NULL-terminated list; replies 400 otherwise. */
bool req_only_fields(http_req *req, json_t *obj, const char *const *allowed);
/* A string or an integer member (absent or null: not given, *out NULL or
 * unchanged): 0, or the refusal in err.  req_str and req_int reply it. */
int obj_str(json_t *obj, const char *key, bool required, const char **out, engine_err *err);
int obj_int(json_t *obj, const char *key, long long min, long long max, long long *out,
            bool *present, engine_err *err);
bool req_str(http_req *req, json_t *obj, const char *key, const char **out, bool required);
bool req_int(http_req *req, json_t *obj, const char *key, long long *out, bool *present,
             long long min, long long max);
bool req_bool(http_req *req, json_t *obj, const char *key, bool *out, bool *present);
/* Refuses (400 naming it) a member of obj that is null.  For the bodies
 * where leaving a field out widens what the request acts on (a filter's
 * "any", a pause's "every tenant"): an explicit null, an unset variable in
 * the client, must not widen it too. */
bool req_no_null(http_req *req, json_t *obj);
/* Names read from a request, each checked by its kind's one rule
 * (engine_check_name; SEMANTICS.md, "Names"), replying 400 naming the
 * field otherwise.  req_name reads a member of obj (absent: *out NULL; null
 * or not a string: refused); req_query_name a query parameter (absent:
 * *out NULL) into buf, read whole: a value cut to fit buf is longer than
 * any name, so the rule refuses it. */
#define QUERY_NAME_BUF (ENGINE_KEY_MAX + 2)
bool req_name_ok(http_req *req, engine_name_kind kind, const char *field, const char *s);
bool req_name(http_req *req, json_t *obj, const char *key, engine_name_kind kind, const char **out);
bool req_query_name(http_req *req, const char *name, engine_name_kind kind,
                    char buf[QUERY_NAME_BUF], const char **out);
/* Canonical JSON text (keys sorted, compact); malloc'd. */
char *canonical_json(const json_t *v);

/* A submitted job's fields into r (jobread.c).  read_job reads a jansson
 * tree: strings point into it or into *args_out (the canonical args,
 * malloc'd); on a refusal it fills err and returns false.  read_job_text
 * reads the object's text in place and gives what read_job would, or
 * declines (false, nothing to free): then read_job must read the job, and
 * words any refusal.  Its strings and args point into *mem (free it). */
bool read_job(json_t *o, const principal *who, engine_submit_req *r, char **args_out,
              engine_err *err);
bool read_job_text(tq_iter *obj, const principal *who, engine_submit_req *r, char **mem);
/* An outcome's fields once read (jobread.c). */
typedef struct outcome_in {
    uint64_t token;
    bool ok;
    char *result, *stats; /* canonical JSON (malloc'd), or NULL */
    char *error;          /* malloc'd, or NULL */
    engine_fail_req f;    /* retry_in_ms, retry, cancelled (error and stats set at the end) */
} outcome_in;
void outcome_in_free(outcome_in *in);
/* From a JSON object (an ack when ok, else a failure), checked in the order
 * that picks which refusal a bad outcome gets; 0, or an error in err and
 * nothing to free.  The caller checked id and ok, and that every key is an
 * outcome's. */
int outcome_read(json_t *o, bool ok, outcome_in *in, engine_err *err);
/* From an outcome's text in place, with its id; false when outcome_read
 * must read it instead (anything unusual, and every refusal).  Both text
 * readers read the object obj/o stands at (tq_iter_at, or a step of a
 * walk), checking it as they go, and leave it past the object. */
bool outcome_read_text(tq_iter *o, outcome_in *in, uint64_t *id);

/* Outcomes of jobs no longer in hand, answered from the store
 * (outcome_late.c).  late_note writes a placeholder for one into the list
 * being written in b and returns the set (made when ls is NULL);
 * late_resolve waits for everything uncommitted, reads their rows, puts
 * each answer in its place in text (taken) and calls done with the whole
 * (malloc'd, the callee frees it), or with req and text NULL when the
 * client left or the commit failed (answered already).  late_resolve_one
 * answers a single ack or fail (POST /v1/jobs/{id}/ack) itself. */
typedef struct late_set late_set;
typedef void (*late_done)(struct server *s, http_req *req, char *text, void *ctx);
late_set *late_note(late_set *ls, jbuf *b, uint64_t id, const outcome_in *in);
void late_free(late_set *ls);
void late_resolve(struct server *s, http_req *req, const principal *who, late_set *ls, char *text,
                  late_done done, void *ctx);
void late_resolve_one(struct server *s, http_req *req, const principal *who, uint64_t id,
                      const outcome_in *in);
/* A start or heartbeat of a job not in hand: 409 when its row is there (its
 * lease ended), 404 when not. */
void late_refuse_call(struct server *s, http_req *req, const principal *who, uint64_t id,
                      uint64_t token);
/* Is this outcome of a job in hand already applied (sent again: the same
 * token, and its lease ended with this outcome; see outcome_late.c)? */
bool outcome_already_applied(struct server *s, uint64_t id, const outcome_in *in);

/* Requests sent with an Idempotency-Key (request_keys.c).  begin reads the
 * header: false when it answered the request itself (a replay of the first
 * answer, a wait for it, a refusal), else fills *k (k->key NULL: no key).
 * reply answers a submit like srv_commit_reply, keeping its answer under
 * the key with its commit.  The loader thread collects a store's keys
 * (rkeys_load_new, rkeys_collect as a store_request_fn), the loop makes the
 * set from them (rkeys_from_load, which frees what it takes). */
typedef struct rkey_ctx {
    const char *scope, *key;
    uint64_t fingerprint;
} rkey_ctx;
bool srv_request_key_begin(server *s, http_req *req, const principal *who, const char **args,
                           route_fn again, rkey_ctx *k);
/* submit_json.c: one job's answer to a submit, {"id", "state",
 * "duplicate", "merged"} or {"error"}; a batch's as the member "jobs" (a
 * list of those) or "columns" (a list a field). */
void srv_write_submit_result(jbuf *b, const engine_submit_res *res);
void api_json_submitted(jbuf *b, const engine_submit_res *res, size_t n, bool columns);

/* A batch whose every job was made, in one state, with ids a step apart:
 * its answer is kept as this range (a few bytes) instead of ~60 bytes a job,
 * and in the form it was sent in (columns or not). */
typedef struct rkey_range {
    uint64_t first, step;
    size_t n;
    engine_state state;
    bool columns;
} rkey_range;
void srv_request_key_reply(server *s, http_req *req, const rkey_ctx *k, int status, jbuf *b,
                           const rkey_range *range);
rkey_set *rkeys_new(void);
void rkeys_free(rkey_set *set);
void *rkeys_load_new(void);
void rkeys_collect(void *ctx, const store_request_key *r);
void rkeys_load_free(void *loaded);
rkey_set *rkeys_from_load(void *loaded);

/* A lease request's fields (POST /v1/lease; jobread.c). */
#define LEASE_MAX  1000 /* jobs a lease may ask for */
#define MAX_QUEUES 64   /* names in queues and in types */
typedef struct lease_in {
    char *worker;           /* malloc'd, or NULL (not given) */
    char **queues, **types; /* malloc'd lists of malloc'd names */
    size_t nq, nt;
    long long max, wait_ms;
    bool has_outcomes; /* outcomes to report first (not null) */
    bool columns;      /* the jobs answered as columns */
    tq_span outcomes;  /* lease_read_text: their list, in the body's text */
} lease_in;
void lease_in_free(lease_in *in);
/* From a jansson tree: 0, or the refusal in err (nothing to free). */
int lease_read(json_t *body, lease_in *in, engine_err *err);
/* From the body's text in place: what lease_read gives, or false (nothing
 * to free) when lease_read must read it (anything unusual, and every
 * refusal). */
bool lease_read_text(const char *text, size_t n, lease_in *in);

/* Request bodies read whole before anything is applied (request_read.c):
 * pure, so that tests and fuzzers call them alone.
 *
 * A submit's body (POST /v1/jobs): one job, or {"jobs": [...]}.  Each job's
 * strings point into mem[i] (read in place) or into the tree and mem[i]
 * (its canonical args), which the caller keeps until it is done. */
#define SUBMIT_BATCH_MAX 10000 /* jobs a submit holds at most */
typedef struct submit_in {
    size_t n;
    bool batch;
    bool columns; /* a batch's answer as columns */
    engine_submit_req *reqs;
    engine_submit_res *res; /* zeroed; from a tree, a job refused has code and err set */
    bool *ok;               /* from a tree: which jobs were read; NULL: all of them */
    char **mem;
} submit_in;
void submit_in_free(submit_in *in);
/* In place: true with every job read, or false (nothing to free) when
 * submit_read_tree must read it (anything unusual, and every refusal).  A
 * single job longer than max_job_bytes is left to it too. */
bool submit_read_text(const char *text, size_t len, long long max_job_bytes, const principal *who,
                      submit_in *in);
/* From the body's tree (an object; len: the body's bytes): SUBMIT_READ
 * with *in (a job refused has its answer in res), or why the whole request
 * is refused, nothing to free: a single job too large, a batch with a
 * member other than "jobs" and "columns" (*other_key, in the tree), jobs
 * not a list of 1 to 10,000, columns not true, false or null. */
typedef enum {
    SUBMIT_READ,
    SUBMIT_TOO_LARGE,
    SUBMIT_NOT_ONLY_JOBS,
    SUBMIT_BAD_JOBS,
    SUBMIT_BAD_COLUMNS
} submit_verdict;
submit_verdict submit_read_tree(json_t *body, size_t len, long long max_job_bytes,
                                const principal *who, submit_in *in, const char **other_key);

/* A list of outcomes (POST /v1/outcomes, a lease's "outcomes") read, not
 * applied yet. */
typedef struct outcome_set {
    size_t n, cap;
    outcome_in *ins;
    uint64_t *ids;     /* 0 where the item had no usable id */
    engine_err **errs; /* from a tree: why each item was refused (malloc'd), or NULL */
} outcome_set;
void outcome_set_free(outcome_set *os);
/* Every item of the list `list` walks (1 to 10,000 of them), read in place;
 * false when jansson must read the list (nothing to free). */
bool outcome_set_read(tq_iter *list, outcome_set *os);
/* The same from a tree: the refusal in err when list is not a list of 1 to
 * 10,000 (nothing to free); a bad item gets its own error in errs. */
int outcome_set_read_tree(json_t *list, outcome_set *os, engine_err *err);
/* A whole POST /v1/outcomes body in place ({"outcomes": [...]} and nothing
 * else); false when jansson must read it (nothing to free). */
bool outcomes_read_text(const char *text, size_t len, outcome_set *os);

/* canonical_json's text for a checked value read in place (malloc'd), or
 * NULL when jansson must write it (escapes, deep nesting, big numbers). */
char *canonical_text(tq_span v);
/* An integer token of at most 18 digits (it fits whatever they are). */
bool text_int(tq_span v, long long *out);

/* A numeric query parameter from lo to hi (dflt when absent); replies 400
 * and returns false when it is not a whole number in range. */
bool req_query_num(http_req *req, const char *name, long long dflt, long long lo, long long hi,
                   long long *out);
/* Admin and worker tokens see a job's lease token; tenants do not. */
bool auth_shows_token(const principal *who);

/* Permission helpers: true when the principal may see this job. */
bool auth_may_see_job(const principal *who, const char *tenant, const char *queue);

/* Handlers (api_jobs.c, api_work.c, api_settings.c, api_morgue.c, api_tokens.c,
 * api_stats.c, dashboard.c). */
void h_submit(server *s, http_req *req, const principal *who, const char **args);
void h_get_job(server *s, http_req *req, const principal *who, const char **args);
void h_list_jobs(server *s, http_req *req, const principal *who, const char **args);
void h_wait_job(server *s, http_req *req, const principal *who, const char **args);
/* api_batches.c */
void h_batch_create(server *s, http_req *req, const principal *who, const char **args);
void h_batch_add(server *s, http_req *req, const principal *who, const char **args);
void h_batch_get(server *s, http_req *req, const principal *who, const char **args);
void h_batches(server *s, http_req *req, const principal *who, const char **args);
/* api_attempts.c */
void h_job_attempts(server *s, http_req *req, const principal *who, const char **args);
/* api_deps.c.  A job shows at most this many children's ids (the first,
 * by id), with children_count. */
#define API_CHILDREN_SHOWN 1000
/* api_deps.c */
void h_job_parents(server *s, http_req *req, const principal *who, const char **args);
/* Durable steps (api_steps.c) and events (api_events.c). */
void h_step(server *s, http_req *req, const principal *who, const char **args);
void h_steps_batch(server *s, http_req *req, const principal *who, const char **args);
void h_job_steps(server *s, http_req *req, const principal *who, const char **args);
void h_event_send(server *s, http_req *req, const principal *who, const char **args);
void api_json_step(jbuf *b, const engine_step_info *x, bool show_token, bool with_result);
void h_cancel(server *s, http_req *req, const principal *who, const char **args);
void h_lease(server *s, http_req *req, const principal *who, const char **args);
void h_start(server *s, http_req *req, const principal *who, const char **args);
void h_heartbeat(server *s, http_req *req, const principal *who, const char **args);
void h_ack(server *s, http_req *req, const principal *who, const char **args);
void h_fail(server *s, http_req *req, const principal *who, const char **args);
void h_outcomes(server *s, http_req *req, const principal *who, const char **args);
void h_tenants(server *s, http_req *req, const principal *who, const char **args);
void h_settings(server *s, http_req *req, const principal *who, const char **args);
void h_spec(server *s, http_req *req, const principal *who, const char **args);
void h_tenant_get(server *s, http_req *req, const principal *who, const char **args);
void h_tenant_put(server *s, http_req *req, const principal *who, const char **args);
void h_queues(server *s, http_req *req, const principal *who, const char **args);
void h_queue_get(server *s, http_req *req, const principal *who, const char **args);
void h_queue_put(server *s, http_req *req, const principal *who, const char **args);
void h_queue_pause(server *s, http_req *req, const principal *who, const char **args);
void h_jobs_bulk(server *s, http_req *req, const principal *who, const char **args);
void h_queue_resume(server *s, http_req *req, const principal *who, const char **args);
void h_morgue(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_requeue(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_delete(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_requeue_where(server *s, http_req *req, const principal *who, const char **args);
void h_morgue_delete_where(server *s, http_req *req, const principal *who, const char **args);
void h_tokens(server *s, http_req *req, const principal *who, const char **args);
void h_token_create(server *s, http_req *req, const principal *who, const char **args);
void h_token_revoke(server *s, http_req *req, const principal *who, const char **args);
void h_stats(server *s, http_req *req, const principal *who, const char **args);
void h_metrics(server *s, http_req *req, const principal *who, const char **args);
void h_healthz(server *s, http_req *req, const principal *who, const char **args);
void h_readyz(server *s, http_req *req, const principal *who, const char **args);
void h_dashboard(server *s, http_req *req, const principal *who, const char **args);
void h_lanes(server *s, http_req *req, const principal *who, const char **args);
void h_whoami(server *s, http_req *req, const principal *who, const char **args);
void h_schedules(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_get(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_put(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_delete(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_pause(server *s, http_req *req, const principal *who, const char **args);
void h_schedule_resume(server *s, http_req *req, const principal *who, const char **args);

/* What the engine's foreach callbacks of the list endpoints write into. */
typedef struct api_list_ctx {
    server *s;
    jbuf *b;
    const principal *who;
} api_list_ctx;

/* A tenant as GET /v1/tenants lists it, for engine_foreach_tenant with an
 * api_list_ctx (api_settings.c; a tenant token sees its own only). */
void api_list_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                     const engine_counts *c);

/* A queue's or tenant's counts as JSON members, and its rates (api_rates.c). */
void api_json_counts(jbuf *b, const engine_counts *c, int64_t now);
/* The settings of queues and tenants as GET /v1/settings shows them (an
 * object: queue, tenant). */
void api_json_settings(jbuf *b);
/* The waiting reason of a job that waits for a worker when none asked for
 * work lately (util.c), beside the engine's (engine_wait_name). */
#define API_WAIT_NO_WORKER "no_worker"
/* The dashboard's states.js: STATES, LIVE and UNFINISHED (api_spec.c). */
void api_spec_states_js(jbuf *b);
void api_json_rates(jbuf *b, server *s, bool queue, const char *name);
void rates_sample(server *s);
void rates_get(server *s, bool queue, const char *name, double *ok_per_s, double *bad_per_s);
void rates_free(server *s);
void history_push(server *s, const engine_counts *totals);
/* A lease request came from this worker, for these queues; it was handed n jobs. */
void workers_seen(server *s, const char *name, char *const *queues, size_t nq);
void workers_leased(server *s, const char *name, size_t n);
void workers_free(server *s);
void h_workers(server *s, http_req *req, const principal *who, const char **args);
void h_stats_history(server *s, http_req *req, const principal *who, const char **args);

/* Waiters (waiters.c). */
void srv_lease_waiter_add(server *s, lease_waiter *w, int64_t wait_ms);
void srv_job_waiter_add(server *s, job_waiter *w, int64_t wait_ms);
/* A lease for a request, answered now (false when nothing was eligible);
 * results: the text of a "results" list to answer with too, or NULL;
 * columns: the jobs as columns. */
bool srv_try_lease(server *s, http_req *req, const principal *who, char **queues, size_t nq,
                   char **types, size_t nt, size_t max, const char *worker, const char *results,
                   bool columns);
/* {"jobs":[]}, or {"columns":{}} (with the results list, when not NULL). */
void reply_no_jobs(http_req *req, const char *results, bool columns);

/* Parses a positive id from a path segment; replies 404 and returns 0 if bad. */
uint64_t req_path_id(http_req *req, const char *seg);

#endif
