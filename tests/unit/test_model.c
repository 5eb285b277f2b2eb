// SPDX-License-Identifier: Apache-2.0
/* The randomized model test: millions of random operations against the
 * engine, checking after every step that
 *   - leased+running per tenant never goes above its slots through a lease
 *     (nor above a queue's tenant cap);
 *   - at most one job per lane is active, and the jobs of a lane start in
 *     lane order;
 *   - no job is leased twice at once (tracked by the test's own clock of
 *     lease deadlines, not by asking the engine);
 *   - no job is leased from a paused queue, or from a queue paused for its
 *     tenant;
 *   - every lease's deadline, at its lease and at each heartbeat, is the
 *     lease length cut at leased_at + timeout (the job's, else its queue's):
 *     a timeout is never early nor late;
 *   - rate limits (a tenant's, a queue's, a queue's per tenant) are never
 *     exceeded, restarts included: in any window of W ms, at most
 *     burst + W / T starts (T = period / rate);
 *   - every job is in exactly one state and every count equals a recount
 *     (engine_check);
 *   - no child (depends_on) is leased before all its parents succeeded, or,
 *     with on_parent_failure run, before each parent succeeded or ended
 *     otherwise (dead, cancelled, merged; requeued from the morgue after).
 *   - batches: no callback is submitted twice (restarts included), none
 *     before its time (on_complete and on_success only once nothing of the
 *     batch is pending, on_success only when all succeeded), and none is
 *     lost (a batch with nothing pending is closed, its callbacks made).
 *   - rate keys with a cost: in any window of W ms a key's starts take at
 *     most burst + W / T units (T = period / rate), restarts included;
 *   - expiry: no job is leased at or after its expire_at, and none ends
 *     `expired` before it;
 *   - debounce: a debounced submit replaces the pending job of its key
 *     whenever there is one (and makes a job otherwise), and no debounced
 *     job runs before its quiet period is over (its last submit's
 *     debounce_ms, or its first submit's debounce_max_ms): a key runs once
 *     per quiet period;
 *   - concurrency keys: no lease takes a key past its limit (a lowered
 *     limit leases nothing of it until it is under again), and the limit in
 *     force is the key's setting (its own, else the longest prefix's),
 *     else what its jobs say, restarts included;
 *   - durable steps: a step is stored once (its own lease's repeat is a
 *     duplicate, an earlier lease's is refused), a stale token stores
 *     nothing; a parked job (a sleep, a wait for an event, a child) is not
 *     leased before its time, its event (or its timeout) or its child's
 *     end, and its next lease has the same attempt number; an event wakes
 *     exactly the jobs of its tenant waiting for its key, or is kept for
 *     the window and taken by the first wait; restarts load the steps and
 *     kept events as a store keeps them.
 *   - args out of memory (the spilling run, a tiny args budget): a job's args
 *     as engine_job_get shows them (inline, or read back into the cache) are
 *     the args it was made with, and a job not yet collected never lacks
 *     them; what the run reads ahead comes back at random, or never.
 * Every few thousand steps the engine is "restarted": its jobs are copied
 * out as a store would and loaded into a fresh engine, which carries on.
 *
 * TEST_SEED=n replays a run; MODEL_OPS=n sets the number of operations.
 */
#include "engine_helpers.h"

#define NT   5
#define NQ   4
#define NK   4
#define MAXJ 3000000
#define MAXB 1000

static const char *tenants[NT] = {"t0", "t1", "t2", "t3", "t4"};
static const char *queues[NQ] = {"fifo", "fair", "merge", "once"};
static const char *types[2] = {"A", "B"};

typedef struct live_lease {
    bool live;
    uint64_t token;
    int64_t deadline;
    int tenant, queue;
    int64_t leased_at, timeout_ms;
} live_lease;

#define LEASE_MS   200
#define TIMEOUT_MS 500 /* the fair queue's */

/* Rate limits: tenant t4 (3 per 100 ms, bursts of 2), queue "once" (5 per
 * 200 ms), and each tenant in queue "fair" (2 per 50 ms). The model keeps
 * each limit's last starts and checks every window ending at a start. */
#define RL_KEEP 64
typedef struct rate_log {
    uint32_t rate, burst;
    int64_t period;
    int64_t at[RL_KEEP];    /* start times, a ring */
    uint32_t cost[RL_KEEP]; /* units each took (0: 1) */
    unsigned n;
} rate_log;

static struct model {
    bool spill;     /* the run with a tiny args budget */
    char **args_of; /* by id: the args as collected ("the store's rows") */
    uint64_t n_spilled_leases, n_read_back;
    uint64_t rng;
    int64_t now;
    engine_t *e;
    uint32_t slots[NT];
    uint32_t cap[NQ];
    bool qpaused[NQ], tpaused[NT][NQ];
    rate_log rl_tenant, rl_queue, rl_pair[NT];
    live_lease *lease; /* by id */
    uint64_t *live;    /* ids with a live lease */
    size_t n_live;
    uint64_t max_id;
    /* last lane_seq started per (tenant, queue, key) */
    uint64_t lane_last[NT][NQ][NK];
    uint64_t steps;
    /* attempt history: the last token reported per job, the changes read */
    uint64_t *reported;
    size_t seen_changes;
    uint64_t n_attempts;
    uint64_t n_leased, n_acked, n_failed, n_expired, n_restarts, n_merged, n_dead, n_pauses;
    /* dependencies: per job, succeeded (1) or requeued after its death (2);
     * each child's parents and policy */
    uint8_t *ended;
    uint32_t *dep_of; /* index + 1 into deps, 0: no parents */
    struct dep_rec {
        uint64_t p[3];
        uint8_t n, policy;
    } * deps;
    size_t ndeps, capdeps;
    uint64_t n_children, n_children_leased;
    /* batches: the callback jobs seen made, by batch and kind (0: none yet) */
    uint64_t (*cb_seen)[ENGINE_NCALLBACKS];
    uint64_t max_batch, n_batches, n_callbacks, n_fanouts;
    /* concurrency keys: settings of "c1" and of "c*" per tenant (0: none) */
    uint32_t kset_c1[NT], kset_prefix[NT];
    uint64_t n_keyed_leases, n_key_held, n_key_settings;
    /* rate keys r0 (its jobs give 6 units a 100 ms) and r1 (its setting:
     * 4 a 200 ms), per tenant */
    rate_log rl_rkey[NT][2];
    uint64_t n_rate_keyed_leases, n_rate_key_held;
    /* expiry: each job's expire_at (0: none) */
    int64_t *expire_at;
    uint8_t *seen_expired;
    uint64_t n_jobs_expired, n_expiring_leases;
    /* debounce: the jobs of lanes d0 and d1 of queue fifo (type D, only
     * debounced submits go there), newest last, and each one's quiet
     * period: its last submit and that submit's debounce_ms, its latest start */
    struct deb_job {
        uint64_t id;
        int64_t last, ms, until;
    } dlane[NT][2][64];
    unsigned ndlane[NT][2];
    uint64_t n_debounced, n_debounce_made, n_debounced_leases;
    /* priority aging of queue fifo (0: off), its cap; leases checked
     * against every ready job of their node, those that found one waiting
     * at a raised rank */
    int64_t aging_ms, aging_cap;
    uint64_t n_order_checks, n_aged_seen, n_order_pairs;
    /* durable steps: per job, steps stored and how many before its lease;
     * what a parked job waits for; the store's rows of steps and events */
    struct job_st {
        uint16_t n, before;
        uint8_t park; /* PK_* */
        uint8_t key;  /* PK_EVENT: its key */
        uint16_t attempts;
        int64_t until; /* PK_SLEEP: its time; PK_EVENT: its timeout (0: none) */
        uint64_t child;
    } * st;
    struct srow {
        engine_step_info x;
        char name[16], event[8];
    } * srows;
    size_t nsrows, capsrows;
    struct erow {
        engine_event_info x;
        int tenant, key;
        bool gone;
        char payload[32];
    } * erows;
    /* the model's own record of kept events: what a wait should take */
    struct kev {
        int t, k;
        int64_t expires;
        uint64_t no;
        bool taken;
    } * kevs;
    size_t nkevs, capkevs;
    uint64_t event_no;
    size_t nerows, caperows;
    uint64_t *ev_parked; /* ids parked on an event (some ended since) */
    size_t n_ev_parked;
    uint64_t n_steps, n_sleeps, n_waits, n_woken, n_taken, n_kept, n_timeouts, n_kids, n_suspended,
        n_resumed;
} M;

/* Concurrency keys c0, c1, c2: their jobs say 1, 2 and nothing (the
 * queues' concurrency_limit, KEY_QUEUE_LIMIT). */
#define NCK             3
#define KEY_QUEUE_LIMIT 2
static const char *ckeys[NCK] = {"c0", "c1", "c2"};
static const uint32_t ckey_given[NCK] = {1, 2, 0};

enum { PK_NONE, PK_SLEEP, PK_EVENT, PK_CHILD };
#define EVENT_WINDOW_MS 300
static const char *ev_keys[4] = {"e0", "e1", "e2", "e3"};

#define ENDED_OK      1
#define ENDED_REQUEUE 2

static uint64_t rnd(void)
{
    uint64_t z = (M.rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
static int rn(int n)
{
    return (int)(rnd() % (uint64_t)n);
}

static int idx_of(const char *const *names, int n, const char *s)
{
    for (int i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0) return i;
    test_fail(__FILE__, __LINE__, "unknown name %s", s);
}

static int key_index(const char *key)
{
    return key && key[0] == 'k' ? key[1] - '0' : -1; /* (d0, d1: debounced lanes) */
}

static engine_config model_config(void)
{
    engine_config c;
    engine_config_defaults(&c);
    c.seed = M.rng;
    c.start_ms = M.now; /* limits begin used up at every (re)start */
    c.event_window_ms = EVENT_WINDOW_MS;
    if (M.spill) c.args_budget = 400; /* three or four jobs' args inline, a few cached */
    return c;
}

static void setup_queues(engine_t *e)
{
    for (int q = 0; q < NQ; q++) {
        engine_queue_settings s;
        engine_queue_settings_defaults(&s);
        s.lease_ms = LEASE_MS;
        s.max_attempts = 3;
        s.backoff = ENGINE_BACKOFF_FIXED;
        s.backoff_base_ms = 30;
        s.dedup_window_ms = 500;
        s.tenant_cap = M.cap[q];
        s.paused = M.qpaused[q];
        if (q == 1) s.order = ENGINE_ORDER_FAIR;
        if (q == 1) s.timeout_ms = TIMEOUT_MS;
        if (q == 1) {
            s.tenant_rate = 2;
            s.rate_period_ms = 50;
        }
        if (q == 3) {
            s.rate = 5;
            s.rate_period_ms = 200;
        }
        if (q == 2) s.merge = true;
        if (q == 3) s.delivery = ENGINE_AT_MOST_ONCE;
        s.concurrency_limit = KEY_QUEUE_LIMIT;
        if (q == 0) {
            s.aging_ms = M.aging_ms;
            s.aging_cap = M.aging_cap;
        }
        set_queue(e, queues[q], s);
    }
    for (int t = 0; t < NT; t++) {
        engine_tenant_settings ts;
        engine_tenant_settings_defaults(&ts);
        ts.slots = M.slots[t];
        ts.weight = 1 + (uint32_t)t % 3;
        if (t == 4) {
            ts.rate = 3;
            ts.rate_period_ms = 100;
            ts.rate_burst = 2;
        }
        engine_err err;
        ASSERT_MSG(engine_tenant_set(e, M.now, tenants[t], &ts, &err) == 0, "%s", err.message);
    }
    for (int t = 0; t < NT; t++)
        for (int q = 0; q < NQ; q++)
            if (M.tpaused[t][q]) engine_pause_tenant(e, M.now, queues[q], tenants[t], true, NULL);
    for (int t = 0; t < NT; t++) {
        engine_key_settings ks;
        engine_key_settings_defaults(&ks);
        if (M.kset_c1[t]) {
            ks.concurrency = M.kset_c1[t];
            ASSERT_EQ(engine_load_key_setting(e, tenants[t], "c1", &ks, NULL), 0);
        }
        if (M.kset_prefix[t]) {
            ks.concurrency = M.kset_prefix[t];
            ASSERT_EQ(engine_load_key_setting(e, tenants[t], "c*", &ks, NULL), 0);
        }
        engine_key_settings_defaults(&ks);
        ks.rate = 4;
        ks.rate_period_ms = 200;
        ASSERT_EQ(engine_load_key_setting(e, tenants[t], "r1", &ks, NULL), 0);
    }
}

/* The limit the model expects of key k of tenant t. */
static uint32_t model_key_limit(int t, int k)
{
    if (k == 1 && M.kset_c1[t]) return M.kset_c1[t];
    if (M.kset_prefix[t]) return M.kset_prefix[t];
    return ckey_given[k] ? ckey_given[k] : KEY_QUEUE_LIMIT;
}

/* A start of a rate-limited bucket at now (taking cost units): no window
 * ending now holds more than burst + W / T units. */
static void rate_start_cost(rate_log *l, const char *what, uint32_t cost)
{
    l->cost[l->n % RL_KEEP] = cost;
    l->at[l->n++ % RL_KEEP] = M.now;
    int64_t t_us = (l->period * 1000 + l->rate - 1) / l->rate;
    for (int64_t w = l->period; w <= 4 * l->period; w += l->period) {
        unsigned k = 0;
        for (unsigned i = 0; i < RL_KEEP && i < l->n; i++)
            if (l->at[(l->n - 1 - i) % RL_KEEP] > M.now - w) k += l->cost[(l->n - 1 - i) % RL_KEEP];
        int64_t most = (int64_t)l->burst + w * 1000 / t_us;
        ASSERT_MSG((int64_t)k <= most, "%s: %u units in %lld ms, at most %lld (step %llu)", what, k,
                   (long long)w, (long long)most, (unsigned long long)M.steps);
    }
}

static void rate_start(rate_log *l, const char *what)
{
    rate_start_cost(l, what, 1);
}

/* The deadline the model expects for a lease at now: the lease length, cut
 * at the attempt's timeout. */
static int64_t want_deadline(const live_lease *l)
{
    int64_t d = M.now + LEASE_MS;
    if (l->timeout_ms && l->leased_at + l->timeout_ms < d) d = l->leased_at + l->timeout_ms;
    return d;
}

/* A job's args as the engine shows them agree with what was collected
 * ("the store"); a missing one is read back from there.  Returns them. */
static const char *job_args(const engine_job_info *in)
{
    if (!M.spill || (!in->args && !in->args_missing)) return in->args; /* payloads */
    const char *stored = M.args_of[in->id];
    if (!stored) { /* not collected yet: then they must be there */
        ASSERT_MSG(!in->args_missing, "job %llu lacks its args before its row is written",
                   (unsigned long long)in->id);
        return in->args;
    }
    if (in->args_missing) return stored;
    ASSERT_MSG(in->args_len == strlen(stored) && memcmp(in->args, stored, in->args_len) == 0,
               "job %llu shows args %.*s, made with %s", (unsigned long long)in->id,
               (int)in->args_len, in->args, stored);
    return in->args;
}

/* The store's part: new jobs' rows are written with their args (which
 * must be there: a spilled job keeps them pinned until now). */
static void collect_args(void)
{
    if (!M.spill) return;
    size_t n;
    const engine_change *c = engine_changes(M.e, &n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind != ENGINE_CH_JOB || !(c[i].fields & (ENGINE_JF_NEW | ENGINE_JF_ARGS)))
            continue;
        engine_job_info in;
        engine_job_get(c[i].job, &in);
        /* payloads (none left: a new job whose payloads joined another) */
        if (in.payloads || (!in.args && !in.args_missing)) continue;
        ASSERT_MSG(!in.args_missing, "job %llu's row is written without its args",
                   (unsigned long long)in.id);
        if (c[i].fields & ENGINE_JF_ARGS) { /* replaced (debounce): the row takes them */
            free(M.args_of[in.id]);
            M.args_of[in.id] = NULL;
        }
        if (!M.args_of[in.id]) M.args_of[in.id] = strndup(in.args, in.args_len);
        job_args(&in);
    }
}

/* The server's part: what the engine wants read ahead comes back from the
 * store, or (at random) later, or never: a read that found nothing. */
static void read_ahead(void)
{
    if (!M.spill) return;
    uint64_t ids[64];
    size_t n = engine_args_wanted(M.e, M.now, ids, 64);
    for (size_t i = 0; i < n; i++) {
        const char *a = M.args_of[ids[i]];
        if (a && rn(4)) {
            engine_args_put(M.e, ids[i], a, (uint32_t)strlen(a));
            M.n_read_back++;
        } else {
            engine_args_unasked(M.e, ids[i]);
        }
    }
}

/* The store's part for durable steps: rows of steps (new, and the end of
 * a pending one) and of kept events (new, and taken). */
static void collect_steps(void)
{
    size_t n;
    const engine_change *c = engine_changes(M.e, &n);
    for (size_t i = 0; i < n; i++) {
        if (c[i].kind == ENGINE_CH_STEP && c[i].fields) {
            const engine_step_info *x = c[i].step;
            struct srow *r = NULL;
            for (size_t k = M.nsrows; k-- > 0 && !r;)
                if (M.srows[k].x.job_id == x->job_id && M.srows[k].x.pos == x->pos) r = &M.srows[k];
            ASSERT_MSG(r && !r->x.done, "step %llu: the end of step %u of job %llu, not pending",
                       (unsigned long long)M.steps, x->pos, (unsigned long long)x->job_id);
            r->x.done = true;
            r->x.size = x->size;
        } else if (c[i].kind == ENGINE_CH_STEP) {
            if (M.nsrows == M.capsrows) {
                M.capsrows = M.capsrows ? M.capsrows * 2 : 1024;
                M.srows = realloc(M.srows, M.capsrows * sizeof(*M.srows));
            }
            struct srow *r = &M.srows[M.nsrows++];
            r->x = *c[i].step;
            snprintf(r->name, sizeof r->name, "%s", c[i].step->name);
            snprintf(r->event, sizeof r->event, "%s", c[i].step->event ? c[i].step->event : "");
            r->x.name = r->x.event = r->x.result = r->x.error = NULL;
        } else if (c[i].kind == ENGINE_CH_EVENT) {
            if (M.nerows == M.caperows) {
                M.caperows = M.caperows ? M.caperows * 2 : 256;
                M.erows = realloc(M.erows, M.caperows * sizeof(*M.erows));
            }
            struct erow *r = &M.erows[M.nerows++];
            r->x = *c[i].event;
            r->tenant = idx_of(tenants, NT, c[i].event->tenant);
            r->key = idx_of(ev_keys, 4, c[i].event->key);
            r->gone = false;
            snprintf(r->payload, sizeof r->payload, "%s", c[i].event->payload);
            r->x.tenant = r->x.key = r->x.payload = NULL;
        } else if (c[i].kind == ENGINE_CH_EVENT_GONE) {
            bool found = false;
            for (size_t k = 0; k < M.nerows && !found; k++)
                if (M.erows[k].x.id == c[i].id) found = M.erows[k].gone = true;
            ASSERT(found);
        }
    }
}

/* Ends the test's record of leases whose deadline passed at a tick. */
static void clear_changes(void)
{
    collect_args();
    collect_steps();
    engine_changes_clear(M.e);
    M.seen_changes = 0;
}

/* Every lease that ends without an ack is reported once as an attempt,
 * with the token the model was given, in the step that ended it. */
static void check_attempts(void)
{
    size_t n;
    const engine_change *c = engine_changes(M.e, &n);
    for (size_t i = M.seen_changes; i < n; i++) {
        if (c[i].kind == ENGINE_CH_JOB && engine_job_state(c[i].job) == ENGINE_EXPIRED &&
            !M.seen_expired[c[i].id]) {
            uint64_t id = c[i].id;
            ASSERT_MSG(M.expire_at[id] && M.now >= M.expire_at[id],
                       "step %llu: job %llu expired at %lld, its expire_at is %lld",
                       (unsigned long long)M.steps, (unsigned long long)id, (long long)M.now,
                       (long long)M.expire_at[id]);
            M.seen_expired[id] = 1;
            M.n_jobs_expired++;
        }
        if (c[i].kind != ENGINE_CH_ATTEMPT) continue;
        const engine_attempt_info *a = c[i].attempt;
        ASSERT(a->job_id >= 1 && a->job_id <= MAXJ);
        const live_lease *l = &M.lease[a->job_id];
        ASSERT_MSG(a->token == l->token && !l->live,
                   "step %llu: attempt %llu of job %llu reported, the model's lease is %llu (%s)",
                   (unsigned long long)M.steps, (unsigned long long)a->token,
                   (unsigned long long)a->job_id, (unsigned long long)l->token,
                   l->live ? "live" : "ended");
        ASSERT_MSG(a->token > M.reported[a->job_id], "step %llu: attempt %llu of job %llu twice",
                   (unsigned long long)M.steps, (unsigned long long)a->token,
                   (unsigned long long)a->job_id);
        ASSERT(a->outcome <= ENGINE_ATTEMPT_CANCELLED || a->outcome == ENGINE_ATTEMPT_SUSPENDED);
        M.reported[a->job_id] = a->token;
        M.n_attempts++;
    }
    M.seen_changes = n;
}

/* Every callback job made is its batch's first of its kind, made once
 * nothing of the batch was pending (on_death: once one died). */
static void check_callbacks(size_t from)
{
    size_t n;
    const engine_change *c = engine_changes(M.e, &n);
    for (size_t i = from; i < n; i++) {
        if (c[i].kind != ENGINE_CH_JOB || !(c[i].fields & ENGINE_JF_NEW)) continue;
        engine_job_info in;
        engine_job_get(c[i].job, &in);
        if (!in.batch || in.batch_role == ENGINE_BATCH_MEMBER) continue;
        ASSERT(in.batch <= MAXB && in.batch_role <= ENGINE_NCALLBACKS);
        int k = in.batch_role - 1;
        ASSERT_MSG(M.cb_seen[in.batch][k] == 0,
                   "step %llu: batch %llu's %s made twice (jobs %llu and %llu)",
                   (unsigned long long)M.steps, (unsigned long long)in.batch,
                   engine_callback_name(k), (unsigned long long)M.cb_seen[in.batch][k],
                   (unsigned long long)in.id);
        M.cb_seen[in.batch][k] = in.id;
        M.n_callbacks++;
        engine_batch_info b;
        ASSERT(engine_batch_get(M.e, in.batch, &b));
        if (k == ENGINE_CB_DEATH) {
            ASSERT(b.n[ENGINE_DEAD] + b.deleted > 0 || b.n[ENGINE_MERGED] > 0 ||
                   engine_batch_pending(&b) < b.total);
        } else {
            ASSERT_MSG(b.closed_at != 0, "step %llu: %s of open batch %llu",
                       (unsigned long long)M.steps, engine_callback_name(k),
                       (unsigned long long)in.batch);
        }
        if (k == ENGINE_CB_SUCCESS) ASSERT(b.n[ENGINE_SUCCEEDED] == b.total);
    }
}

/* No batch is left open with nothing pending; a closed one has the
 * callbacks it was owed. */
static void check_batches_settled(void)
{
    for (uint64_t id = 1; id <= M.max_batch; id++) {
        engine_batch_info b;
        ASSERT(engine_batch_get(M.e, id, &b));
        if (!b.closed_at) {
            ASSERT_MSG(engine_batch_pending(&b) > 0, "step %llu: batch %llu open, none pending",
                       (unsigned long long)M.steps, (unsigned long long)id);
            continue;
        }
        if (b.callbacks[ENGINE_CB_COMPLETE])
            ASSERT_MSG(b.callback_ids[ENGINE_CB_COMPLETE] != 0 &&
                           M.cb_seen[id][ENGINE_CB_COMPLETE] == b.callback_ids[ENGINE_CB_COMPLETE],
                       "step %llu: batch %llu closed without its on_complete",
                       (unsigned long long)M.steps, (unsigned long long)id);
    }
}

static void expire_model_leases(void)
{
    for (size_t i = 0; i < M.n_live; i++) {
        live_lease *l = &M.lease[M.live[i]];
        if (l->live && l->deadline <= M.now) {
            l->live = false;
            M.n_expired++;
        }
    }
}

/* Drops ended leases from the live list. */
static void compact_live(void)
{
    size_t k = 0;
    for (size_t i = 0; i < M.n_live; i++)
        if (M.lease[M.live[i]].live) M.live[k++] = M.live[i];
    M.n_live = k;
}

static int tenant_active(int t)
{
    engine_counts c;
    if (engine_tenant_get(M.e, M.now, tenants[t], NULL, &c) != 0) return 0;
    return (int)(c.leased + c.running);
}

/* A debounced submit to lane d0 or d1 of queue fifo: it replaces the
 * lane's newest unfinished job when that one is pending. */
static void op_debounce(void)
{
    int t = rn(NT), k = rn(2);
    char key[4] = {'d', (char)('0' + k), 0}, args[32];
    snprintf(args, sizeof args, "{\"v\":%d}", rn(100));
    engine_submit_req r = {.tenant = tenants[t], .queue = "fifo", .type = "D", .key = key};
    r.args = args;
    r.args_len = (uint32_t)strlen(args);
    r.debounce_ms = 20 + rn(100);
    r.debounce_max_ms = rn(2) ? 0 : 150 + rn(200);
    unsigned *n = &M.ndlane[t][k];
    struct deb_job *v = M.dlane[t][k];
    struct deb_job *tail = NULL;
    for (unsigned i = *n; i-- > 0 && !tail;) {
        engine_job *j = engine_find(M.e, v[i].id);
        if (j && engine_job_state(j) <= ENGINE_RUNNING) tail = &v[i];
    }
    engine_state ts = tail ? engine_job_state(engine_find(M.e, tail->id)) : ENGINE_NSTATES;
    bool pending = ts == ENGINE_SCHEDULED || ts == ENGINE_READY || ts == ENGINE_BLOCKED;
    if (pending) { /* a job whose handler stored steps has started: not replaced */
        engine_job_info ti;
        engine_job_get(engine_find(M.e, tail->id), &ti);
        pending = ti.n_steps == 0;
    }
    engine_submit_res res;
    ASSERT_MSG(engine_submit(M.e, M.now, &r, &res) == 0, "debounce: %s", res.err.message);
    if (pending) {
        ASSERT_MSG(res.debounced && res.id == tail->id,
                   "step %llu: a debounced submit made job %llu, its key's job %llu waits",
                   (unsigned long long)M.steps, (unsigned long long)res.id,
                   (unsigned long long)tail->id);
        tail->last = M.now;
        tail->ms = r.debounce_ms;
        M.n_debounced++;
        if (M.spill) { /* its row takes the new args when its change is collected */
            free(M.args_of[res.id]);
            M.args_of[res.id] = NULL;
        }
        return;
    }
    ASSERT_MSG(res.created && !res.debounced, "step %llu: debounced into a job that runs",
               (unsigned long long)M.steps);
    if (*n == 64) { /* forget the oldest finished one */
        unsigned w = 0;
        for (unsigned i = 0; i < *n; i++) {
            engine_job *j = engine_find(M.e, v[i].id);
            if (w < i || (j && engine_job_state(j) <= ENGINE_RUNNING)) v[w++] = v[i];
        }
        if (w == 64) w = 63;
        *n = w;
    }
    v[(*n)++] = (struct deb_job){res.id, M.now, r.debounce_ms,
                                 r.debounce_max_ms ? M.now + r.debounce_max_ms : 0};
    M.n_debounce_made++;
    if (res.id > M.max_id) M.max_id = res.id;
}

/* A leased job of lanes d0/d1 ran after its quiet period. */
static void check_debounced_lease(const engine_job_info *in)
{
    if (strcmp(in->type, "D") != 0) return;
    int t = idx_of(tenants, NT, in->tenant), k = in->key[1] - '0';
    for (unsigned i = 0; i < M.ndlane[t][k]; i++) {
        const struct deb_job *d = &M.dlane[t][k][i];
        if (d->id != in->id) continue;
        int64_t quiet = d->last + d->ms;
        if (d->until && d->until < quiet) quiet = d->until;
        ASSERT_MSG(M.now >= quiet,
                   "step %llu: debounced job %llu leased at %lld, its quiet period ends at %lld",
                   (unsigned long long)M.steps, (unsigned long long)in->id, (long long)M.now,
                   (long long)quiet);
        M.n_debounced_leases++;
        return;
    }
}

static void op_submit(void)
{
    int t = rn(NT), q = rn(NQ);
    char key[4] = {'k', (char)('0' + rn(NK)), 0};
    char args[160];
    if (M.spill) /* 64 bytes and more: spilled once the budget is used */
        snprintf(args, sizeof args, "{\"v\":%d,\"pad\":\"%0*d\"}", rn(5), 60 + rn(60), 0);
    else
        snprintf(args, sizeof args, "{\"v\":%d}", rn(5));
    char ukey[8], idem[16];
    snprintf(ukey, sizeof ukey, "u%d", rn(3));
    snprintf(idem, sizeof idem, "i%d", rn(50));
    sub_opts o = {0};
    o.key = rn(3) ? key : NULL;
    o.args = args;
    o.priority = rn(q == 0 ? 2 : 4) == 0 ? rn(5) - 2 : 0; /* fifo ages: more of them */
    o.run_at = rn(5) == 0 ? M.now + rn(300) : 0;
    o.unique_key = rn(8) == 0 ? ukey : NULL;
    o.idem = rn(10) == 0 ? idem : NULL;
    o.has_score = rn(2);
    o.score = rn(100);
    o.timeout_ms = rn(6) == 0 ? 100 + rn(400) : 0;
    int64_t within = rn(8) == 0 ? 10 + rn(300) : 0;
    engine_limit_key ck[2];
    if (rn(3) == 0) {
        int k0 = rn(NCK);
        ck[o.n_ckeys++] = (engine_limit_key){ckeys[k0], ckey_given[k0]};
        if (rn(3) == 0) {
            int k1 = (k0 + 1 + rn(NCK - 1)) % NCK;
            ck[o.n_ckeys++] = (engine_limit_key){ckeys[k1], ckey_given[k1]};
        }
        o.ckeys = ck;
    }
    engine_rate_key rk[2];
    if (rn(4) == 0) {
        int k0 = rn(2);
        rk[o.n_rate_keys++] = k0 == 0 ? (engine_rate_key){"r0", (uint32_t)(1 + rn(3)), 6, 100, 0}
                                      : (engine_rate_key){"r1", (uint32_t)(1 + rn(2)), 0, 0, 0};
        if (rn(4) == 0)
            rk[o.n_rate_keys++] = k0 == 1 ? (engine_rate_key){"r0", 1, 6, 100, 0}
                                          : (engine_rate_key){"r1", 1, 0, 0, 0};
        o.rate_keys = rk;
    }
    /* dependencies on recent jobs of the tenant: unfinished ones, or dead
     * ones under policy run (what a submit takes) */
    engine_dep_ref refs[3];
    struct dep_rec rec = {0};
    if (rn(4) == 0 && M.max_id) {
        rec.policy = (uint8_t)(rn(2) ? ENGINE_DEPS_RUN : ENGINE_DEPS_CANCEL);
        for (int k = 1 + rn(3); k > 0; k--) {
            uint64_t back = rnd() % 60, p = M.max_id > back ? M.max_id - back : 1;
            engine_job *pj = engine_find(M.e, p);
            if (!pj || strcmp(engine_job_tenant(pj), tenants[t]) != 0) continue;
            engine_state ps = engine_job_state(pj);
            if (ps > ENGINE_DEAD || (ps == ENGINE_DEAD && rec.policy != ENGINE_DEPS_RUN)) continue;
            bool seen = false;
            for (int i = 0; i < rec.n; i++) seen |= rec.p[i] == p;
            if (seen) continue;
            refs[rec.n] = (engine_dep_ref){.id = p, .index = -1};
            rec.p[rec.n++] = p;
        }
        o.deps = refs;
        o.n_deps = rec.n;
        o.on_parent_failure = (engine_deps_policy)rec.policy;
    }
    o.start_within_ms = within;
    engine_submit_res r = submit_x(M.e, M.now, tenants[t], queues[q], types[rn(2)], o);
    if (r.created && within) M.expire_at[r.id] = M.now + within;
    ASSERT_MSG(r.code == 0, "submit: %s", r.err.message);
    if (r.created && rec.n) {
        if (M.ndeps == M.capdeps) {
            M.capdeps = M.capdeps ? M.capdeps * 2 : 1024;
            M.deps = realloc(M.deps, M.capdeps * sizeof(*M.deps));
        }
        M.deps[M.ndeps++] = rec;
        M.dep_of[r.id] = (uint32_t)M.ndeps;
        M.n_children++;
    }
    if (r.id > M.max_id) M.max_id = r.id;
    if (r.merged) M.n_merged++;
}

/* A batch of 1-4 jobs (queues without merging), with some callbacks to
 * "fifo"; or jobs added to an open batch (fan-out). */
static void op_batch(void)
{
    int t = rn(NT);
    engine_submit_req jobs[4];
    engine_submit_res res[4];
    size_t n = 1 + (size_t)rn(4);
    static const int bq[3] = {0, 1, 3};
    for (size_t i = 0; i < n; i++) {
        memset(&jobs[i], 0, sizeof jobs[i]);
        jobs[i].tenant = tenants[t];
        jobs[i].queue = queues[bq[rn(3)]];
        jobs[i].type = types[rn(2)];
        jobs[i].run_at = rn(5) == 0 ? M.now + rn(300) : 0;
    }
    engine_err err;
    size_t bad;
    if (M.max_batch && (rn(3) == 0 || M.max_batch >= MAXB)) {
        /* mostly recent batches: those are the open ones */
        uint64_t back = (uint64_t)rn(M.max_batch < 4 ? (int)M.max_batch : 4);
        uint64_t id = rn(8) ? M.max_batch - back : 1 + (uint64_t)rn((int)M.max_batch);
        engine_batch_info b;
        ASSERT(engine_batch_get(M.e, id, &b));
        for (size_t i = 0; i < n; i++) jobs[i].tenant = b.tenant;
        int rc = engine_batch_add(M.e, M.now, id, NULL, jobs, n, res, &bad, &err);
        ASSERT_MSG(rc == (b.closed_at ? TENQ_ECONFLICT : 0), "add: %d %s", rc, err.message);
        if (!rc) M.n_fanouts++;
        return;
    }
    if (M.max_batch >= MAXB) return;
    engine_submit_req cbs[ENGINE_NCALLBACKS];
    const engine_submit_req *cbp[ENGINE_NCALLBACKS] = {0};
    static const char *const cbtype[ENGINE_NCALLBACKS] = {"complete", "success", "death"};
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
        memset(&cbs[k], 0, sizeof cbs[k]);
        cbs[k].queue = "fifo";
        cbs[k].type = cbtype[k];
        if (rn(4)) cbp[k] = &cbs[k];
    }
    uint64_t id;
    int rc = engine_batch_create(M.e, M.now, tenants[t], cbp, jobs, n, &id, res, &bad, &err);
    ASSERT_MSG(rc == 0, "batch: %s", err.message);
    ASSERT_EQ(id, M.max_batch + 1);
    M.max_batch = id;
    M.n_batches++;
}

typedef struct pair_ctx {
    const char *q, *t;
    engine_counts *out;
} pair_ctx;

static void pair_cb(void *c, const char *qn, const char *tn, const engine_counts *cnt)
{
    pair_ctx *cx = c;
    if (strcmp(qn, cx->q) == 0 && strcmp(tn, cx->t) == 0) *cx->out = *cnt;
}

/* What a ready job of queue fifo ranks as at now, in 1/aging_ms steps of
 * priority (higher first): its priority, raised by its wait up to the cap
 * (docs/SEMANTICS.md, "Priority aging"). */
static int64_t model_rank(const engine_job_info *in, int64_t now, bool *rising)
{
    int64_t n = M.aging_ms ? M.aging_ms : 1, p = in->priority;
    *rising = false;
    if (!M.aging_ms || p >= M.aging_cap) return p * n;
    int64_t waited = now > in->run_at ? now - in->run_at : 0;
    int64_t r = p * n + waited;
    if (r >= M.aging_cap * n) return M.aging_cap * n;
    *rising = true;
    return r;
}

/* Whether ready job k goes before j (both of one node, at now). */
static bool model_before(const engine_job_info *k, const engine_job_info *j, int64_t now)
{
    bool rk, rj;
    int64_t a = model_rank(k, now, &rk), b = model_rank(j, now, &rj);
    if (a != b) return a > b;
    if (!rk && (k->run_at != j->run_at)) return k->run_at < j->run_at; /* first come first */
    return k->id < j->id;
}

/* No ready job of queue fifo without keys is left behind a job of its node
 * (tenant, type) just leased that it ranks before: aging raises a job by
 * its wait, never reorders jobs of one priority.  O(jobs): now and then. */
static void check_order(const engine_job_info *leased, size_t n, int64_t now)
{
    for (uint64_t id = 1; id <= M.max_id; id++) {
        engine_job *kj = engine_find(M.e, id);
        if (!kj || engine_job_state(kj) != ENGINE_READY) continue;
        engine_job_info k;
        engine_job_get(kj, &k);
        if (strcmp(k.queue, "fifo") != 0 || k.n_concurrency_keys || k.n_rate_keys) continue;
        bool rising;
        model_rank(&k, now, &rising);
        M.n_aged_seen += rising && now > k.run_at;
        for (size_t i = 0; i < n; i++) {
            const engine_job_info *j = &leased[i];
            if (strcmp(j->tenant, k.tenant) != 0 || strcmp(j->type, k.type) != 0) continue;
            M.n_order_pairs += M.aging_ms && j->priority != k.priority;
            ASSERT_MSG(!model_before(&k, j, now),
                       "step %llu: job %llu (priority %d, run_at %lld) leased while job %llu "
                       "(priority %d, run_at %lld) of its node ranks before it (aging %lld ms, "
                       "cap %lld, now %lld)",
                       (unsigned long long)M.steps, (unsigned long long)j->id, j->priority,
                       (long long)j->run_at, (unsigned long long)k.id, k.priority,
                       (long long)k.run_at, (long long)M.aging_ms, (long long)M.aging_cap,
                       (long long)now);
        }
    }
    M.n_order_checks++;
}

static void op_lease(void)
{
    const char *qs[NQ];
    int nq = 1 + rn(NQ);
    for (int i = 0; i < nq; i++) qs[i] = queues[rn(NQ)];
    const char *tp[1] = {types[rn(2)]};
    engine_lease_req req = {
        .queues = qs, .n_queues = (size_t)nq, .max = (size_t)(1 + rn(4)), .worker = "w"};
    if (rn(4) == 0) {
        req.types = tp;
        req.n_types = 1;
    }
    int before[NT];
    for (int t = 0; t < NT; t++) before[t] = tenant_active(t);
    engine_key_info kbefore[NT][NCK];
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < NCK; k++) {
            if (!engine_key_info_get(M.e, M.now, tenants[t], ckeys[k], &kbefore[t][k])) {
                memset(&kbefore[t][k], 0, sizeof kbefore[t][k]);
                kbefore[t][k].limit = model_key_limit(t, k);
            }
            ASSERT_MSG(kbefore[t][k].limit == model_key_limit(t, k),
                       "step %llu: key %s/%s has limit %u, the model says %u",
                       (unsigned long long)M.steps, tenants[t], ckeys[k], kbefore[t][k].limit,
                       model_key_limit(t, k));
            M.n_key_held += kbefore[t][k].held;
        }
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < 2; k++) {
            engine_key_info ri;
            const char *rname = k ? "r1" : "r0";
            if (engine_key_info_get(M.e, M.now, tenants[t], rname, &ri))
                M.n_rate_key_held += ri.held;
        }
    int kgot[NT][NCK] = {{0}};
    engine_job *out[8];
    size_t n = engine_lease(M.e, M.now, &req, out);
    engine_job_info plain_fifo[8];
    size_t n_plain_fifo = 0;
    int got[NT] = {0};
    int got_q[NT][NQ] = {{0}};
    for (size_t i = 0; i < n; i++) {
        engine_job_info in;
        engine_job_get(out[i], &in);
        if (M.spill && !in.payloads) {
            M.n_spilled_leases += in.args_missing || engine_job_spilled(out[i]);
            job_args(&in); /* what the worker gets is what was submitted */
        }
        live_lease *l = &M.lease[in.id];
        ASSERT_MSG(!l->live, "job %llu leased twice at once (step %llu)", (unsigned long long)in.id,
                   (unsigned long long)M.steps);
        ASSERT_MSG(!M.expire_at[in.id] || M.now < M.expire_at[in.id],
                   "step %llu: job %llu leased at %lld, it expired at %lld",
                   (unsigned long long)M.steps, (unsigned long long)in.id, (long long)M.now,
                   (long long)M.expire_at[in.id]);
        ASSERT_EQ(in.expire_at, M.expire_at[in.id]);
        M.n_expiring_leases += M.expire_at[in.id] != 0;
        check_debounced_lease(&in);
        ASSERT_MSG(!(in.queue[0] == 'o' && in.attempts > 1),
                   "at-most-once job %llu handed out twice", (unsigned long long)in.id);
        int t = idx_of(tenants, NT, in.tenant), q = idx_of(queues, NQ, in.queue);
        ASSERT_MSG(!M.qpaused[q] && !M.tpaused[t][q], "job %llu leased from paused %s/%s",
                   (unsigned long long)in.id, in.queue, in.tenant);
        if (t == 4) rate_start(&M.rl_tenant, "tenant t4's rate");
        if (q == 3) rate_start(&M.rl_queue, "queue once's rate");
        if (q == 1) rate_start(&M.rl_pair[t], "queue fair's per-tenant rate");
        l->leased_at = M.now;
        l->timeout_ms = in.timeout_ms ? in.timeout_ms : q == 1 ? TIMEOUT_MS : 0;
        ASSERT_EQ(in.lease_until, want_deadline(l));
        struct job_st *js = &M.st[in.id];
        if (js->park) { /* parked: its time, its event's timeout or its child's end came */
            engine_job *cj = js->park == PK_CHILD ? engine_find(M.e, js->child) : NULL;
            /* a child that died and was requeued from the morgue since is running again */
            ASSERT_MSG(js->park == PK_CHILD ? !cj || engine_job_state(cj) >= ENGINE_DEAD ||
                                                  (M.ended[js->child] & ENDED_REQUEUE)
                                            : js->until && M.now >= js->until,
                       "step %llu: job %llu leased while it waits (park %d, until %lld)",
                       (unsigned long long)M.steps, (unsigned long long)in.id, js->park,
                       (long long)js->until);
            if (js->park == PK_EVENT) M.n_timeouts++;
            js->park = PK_NONE;
        }
        if (js->attempts) { /* resumed: the same attempt goes on */
            ASSERT_MSG(in.attempts == js->attempts,
                       "step %llu: job %llu resumed as attempt %u, "
                       "parked as %u",
                       (unsigned long long)M.steps, (unsigned long long)in.id, in.attempts,
                       js->attempts);
            js->attempts = 0;
            M.n_resumed++;
        }
        ASSERT_EQ(in.n_steps, js->n);
        js->before = js->n;
        l->live = true;
        M.live[M.n_live++] = in.id;
        l->token = in.token;
        l->deadline = in.lease_until;
        l->tenant = t;
        l->queue = q;
        got[t]++;
        got_q[t][q]++;
        if (M.dep_of[in.id]) {
            /* no child before its parents: each succeeded, or (run) ended otherwise */
            const struct dep_rec *d = &M.deps[M.dep_of[in.id] - 1];
            for (int i = 0; i < d->n; i++) {
                uint64_t p = d->p[i];
                if (M.ended[p] & ENDED_OK) continue;
                ASSERT_MSG(d->policy == ENGINE_DEPS_RUN,
                           "step %llu: child %llu leased before parent %llu succeeded",
                           (unsigned long long)M.steps, (unsigned long long)in.id,
                           (unsigned long long)p);
                engine_job *pj = engine_find(M.e, p);
                bool unfinished = pj && engine_job_state(pj) < ENGINE_DEAD;
                ASSERT_MSG(!unfinished || (M.ended[p] & ENDED_REQUEUE),
                           "step %llu: child %llu (run) leased while parent %llu is %s",
                           (unsigned long long)M.steps, (unsigned long long)in.id,
                           (unsigned long long)p, engine_state_name(engine_job_state(pj)));
            }
            M.n_children_leased++;
        }
        for (uint32_t i = 0; i < in.n_concurrency_keys; i++) {
            int k = in.concurrency_keys[i].key[1] - '0';
            kgot[t][k]++;
            M.n_keyed_leases++;
        }
        for (uint32_t i = 0; i < in.n_rate_keys; i++) {
            int k = in.rate_keys[i].key[1] - '0';
            uint32_t cost = in.rate_keys[i].cost ? in.rate_keys[i].cost : 1;
            rate_start_cost(&M.rl_rkey[t][k], k ? "rate key r1" : "rate key r0", cost);
            M.n_rate_keyed_leases++;
        }
        int k = key_index(in.key);
        if (k >= 0) {
            ASSERT_MSG(in.lane_seq >= M.lane_last[t][q][k],
                       "lane %s/%s/%s started seq %llu after %llu", in.tenant, in.queue, in.key,
                       (unsigned long long)in.lane_seq, (unsigned long long)M.lane_last[t][q][k]);
            M.lane_last[t][q][k] = in.lane_seq;
        }
        M.n_leased++;
        if (q == 0 && !in.n_concurrency_keys && !in.n_rate_keys) plain_fifo[n_plain_fifo++] = in;
    }
    if (n_plain_fifo) check_order(plain_fifo, n_plain_fifo, M.now);
    for (int t = 0; t < NT; t++)
        for (int k = 0; k < NCK; k++)
            ASSERT_MSG(!kgot[t][k] || kbefore[t][k].active + kgot[t][k] <= kbefore[t][k].limit,
                       "step %llu: key %s/%s had %u of %u running, %d more leased",
                       (unsigned long long)M.steps, tenants[t], ckeys[k], kbefore[t][k].active,
                       kbefore[t][k].limit, kgot[t][k]);
    for (int t = 0; t < NT; t++) {
        if (!got[t]) continue;
        int after = tenant_active(t);
        ASSERT_EQ(after, before[t] + got[t]);
        ASSERT_MSG((uint32_t)after <= M.slots[t], "tenant %s has %d active, slots %u", tenants[t],
                   after, M.slots[t]);
        for (int q = 0; q < NQ; q++) {
            if (!got_q[t][q]) continue;
            engine_counts pc = {0};
            /* pair counts through foreach is O(pairs); fine at this size */
            pair_ctx cx = {queues[q], tenants[t], &pc};
            engine_foreach_pair(M.e, M.now, pair_cb, &cx);
            ASSERT_MSG(pc.leased + pc.running <= M.cap[q], "pair %s/%s above cap %u", queues[q],
                       tenants[t], M.cap[q]);
        }
    }
}

/* A live lease at random (or 0). */
static uint64_t pick_live(void)
{
    compact_live();
    return M.n_live ? M.live[rnd() % M.n_live] : 0;
}

/* The model's kept event a wait of (t, k) takes now: the oldest within
 * its window not taken yet, or NULL. */
static struct kev *kev_first(int t, int k)
{
    for (size_t i = 0; i < M.nkevs; i++) {
        struct kev *v = &M.kevs[i];
        if (!v->taken && v->t == t && v->k == k && v->expires > M.now) return v;
    }
    return NULL;
}

/* A step of a leased job: stored, sent again, refused, or a wait. */
static void op_step(uint64_t id, live_lease *l)
{
    struct job_st *js = &M.st[id];
    engine_job_info in;
    engine_job_get(engine_find(M.e, id), &in);
    ASSERT_EQ(in.n_steps, js->n);
    engine_step_req r;
    memset(&r, 0, sizeof r);
    engine_step_res res;
    engine_err err;
    char name[16];
    int what = rn(12);
    if (what == 0 && js->n > js->before) { /* this lease's step, its answer lost */
        snprintf(name, sizeof name, "s%u", js->n - 1u);
        r.name = name;
        ASSERT_EQ(engine_step(M.e, M.now, id, l->token, &r, &res, &err), 0);
        ASSERT(res.duplicate && res.pos == js->n - 1u);
        return;
    }
    if (what == 1 && js->before > 0) { /* an earlier lease's */
        snprintf(name, sizeof name, "s%u", (unsigned)rn(js->before));
        r.name = name;
        ASSERT_EQ(engine_step(M.e, M.now, id, l->token, &r, &res, &err), TENQ_ECONFLICT);
        ASSERT_STR(err.field, "name");
        return;
    }
    if (what == 2 && l->token > 1) { /* a stale token stores nothing */
        snprintf(name, sizeof name, "s%u", js->n);
        r.name = name;
        ASSERT_EQ(engine_step(M.e, M.now, id, l->token - 1, &r, &res, &err), TENQ_ECONFLICT);
        ASSERT_STR(err.field, "token");
        return;
    }
    snprintf(name, sizeof name, "s%u", js->n);
    r.name = name;
    int kind = rn(8), t = l->tenant, k = rn(4);
    char result[32];
    snprintf(result, sizeof result, "{\"i\":%u}", js->n);
    struct kev *kept = NULL;
    if (kind < 4) {
        r.kind = ENGINE_STEP_RUN;
        r.result = result;
        r.result_len = (uint32_t)strlen(result);
    } else if (kind == 4) {
        r.kind = ENGINE_STEP_SLEEP;
        r.until = M.now + 1 + rn(300);
    } else if (kind < 7) {
        r.kind = ENGINE_STEP_EVENT;
        r.event = ev_keys[k];
        r.timeout_ms = rn(3) ? 50 + rn(400) : 0;
        kept = kev_first(t, k);
    } else {
        r.kind = ENGINE_STEP_CHILD;
        r.child.queue = queues[0];
        r.child.type = types[rn(2)];
    }
    bool parks = kind >= 4 && !kept;
    int rc = engine_step(M.e, M.now, id, l->token, &r, &res, &err);
    if (parks && (l->queue == 3 || in.cancel_requested)) { /* at-most-once, or being cancelled */
        ASSERT_EQ(rc, TENQ_ECONFLICT);
        engine_job_get(engine_find(M.e, id), &in);
        ASSERT_EQ(in.n_steps, js->n);
        return;
    }
    ASSERT_MSG(rc == 0, "step %llu: step of job %llu: %s", (unsigned long long)M.steps,
               (unsigned long long)id, err.message);
    ASSERT_EQ(res.pos, js->n);
    ASSERT(!res.duplicate);
    js->n++;
    M.n_steps++;
    if (kept) { /* a kept event is taken at once, the oldest */
        char want[32];
        snprintf(want, sizeof want, "{\"n\":%llu}", (unsigned long long)kept->no);
        ASSERT_MSG(res.done && !res.parked && res.result && strcmp(res.result, want) == 0,
                   "step %llu: job %llu's wait took %s, the model kept %s",
                   (unsigned long long)M.steps, (unsigned long long)id,
                   res.result ? res.result : "nothing", want);
        kept->taken = true;
        M.n_taken++;
        return;
    }
    ASSERT_EQ(res.parked, parks);
    if (!parks) return;
    if (res.state == ENGINE_EXPIRED) { /* parked at or past its expire_at: it ends so */
        ASSERT(M.expire_at[id] && M.now >= M.expire_at[id]);
        l->live = false;
        M.n_suspended++; /* the attempt ended so (suspended) */
        return;
    }
    /* the lease ended: the job waits */
    ASSERT_EQ(res.state, kind == 4 ? ENGINE_SCHEDULED : ENGINE_WAITING);
    l->live = false;
    js->park = kind == 4 ? PK_SLEEP : kind < 7 ? PK_EVENT : PK_CHILD;
    js->attempts = (uint16_t)in.attempts;
    js->until = kind == 4 ? r.until : kind < 7 && r.timeout_ms ? M.now + r.timeout_ms : 0;
    js->key = (uint8_t)k;
    js->child = res.child;
    M.n_suspended++;
    if (kind == 4) M.n_sleeps++;
    if (js->park == PK_EVENT) {
        M.n_waits++;
        M.ev_parked[M.n_ev_parked++] = id;
    }
    if (js->park == PK_CHILD) {
        ASSERT(res.child > id);
        M.lease[res.child].tenant = t; /* the parent's tenant */
        M.n_kids++;
    }
}

/* An event: it wakes exactly the jobs of its tenant that the model has
 * parked on its key (and the engine still holds waiting), else it is kept. */
static void op_event(void)
{
    int t = rn(NT), k = rn(4);
    char payload[32];
    uint64_t no = ++M.event_no;
    snprintf(payload, sizeof payload, "{\"n\":%llu}", (unsigned long long)no);
    uint64_t ids[256];
    engine_event_res res;
    engine_err err;
    ASSERT_EQ(engine_event_send(M.e, M.now, tenants[t], ev_keys[k], payload,
                                (uint32_t)strlen(payload), ids, 256, &res, &err),
              0);
    size_t want = 0, keep = 0;
    for (size_t i = 0; i < M.n_ev_parked; i++) {
        uint64_t id = M.ev_parked[i];
        struct job_st *js = &M.st[id];
        engine_job *j = engine_find(M.e, id);
        if (js->park != PK_EVENT || !j) continue; /* resumed, or ended */
        M.ev_parked[keep++] = id;
        /* still waiting: its timeout has not come (a tick at now made it ready) */
        if (js->key != k || M.lease[id].tenant != t || (js->until && js->until <= M.now) ||
            engine_job_state(j) >= ENGINE_DEAD)
            continue;
        bool got = false;
        for (size_t d = 0; d < res.delivered && d < 256; d++) got |= ids[d] == id;
        ASSERT_MSG(got, "step %llu: event %s of %s did not wake job %llu",
                   (unsigned long long)M.steps, ev_keys[k], tenants[t], (unsigned long long)id);
        js->park = PK_NONE;
        M.n_woken++;
        want++;
    }
    M.n_ev_parked = keep;
    if (res.delivered != want)
        for (size_t d = 0; d < res.delivered; d++)
            fprintf(stderr, "  woke %llu: park %d key %d tenant %d\n", (unsigned long long)ids[d],
                    M.st[ids[d]].park, M.st[ids[d]].key, M.lease[ids[d]].tenant);
    ASSERT_MSG(res.delivered == want, "step %llu: event %s of %s woke %zu jobs, the model %zu",
               (unsigned long long)M.steps, ev_keys[k], tenants[t], res.delivered, want);
    ASSERT_EQ(res.kept, want == 0);
    if (res.kept) {
        if (M.nkevs == M.capkevs) {
            M.capkevs = M.capkevs ? M.capkevs * 2 : 256;
            M.kevs = realloc(M.kevs, M.capkevs * sizeof(*M.kevs));
        }
        M.kevs[M.nkevs++] = (struct kev){t, k, M.now + EVENT_WINDOW_MS, no, false};
        M.n_kept++;
    }
}

static void op_worker(void)
{
    uint64_t id = pick_live();
    if (!id) return;
    live_lease *l = &M.lease[id];
    engine_err err;
    /* sometimes a stale token, which must be refused */
    if (rn(20) == 0 && l->token > 1) {
        ASSERT_EQ(engine_ack(M.e, M.now, id, l->token - 1, NULL, NULL, &err), TENQ_ECONFLICT);
        return;
    }
    int what = rn(13);
    if (what >= 10) {
        op_step(id, l);
    } else if (what < 2) {
        ASSERT_EQ(engine_start(M.e, M.now, id, l->token, &err), 0);
    } else if (what < 4) {
        int64_t until;
        bool cancel;
        ASSERT_EQ(engine_heartbeat(M.e, M.now, id, l->token, "0.5", &until, &cancel, &err), 0);
        ASSERT_EQ(until, want_deadline(l));
        l->deadline = until;
    } else if (what < 7) {
        ASSERT_MSG(engine_ack(M.e, M.now, id, l->token, "{}", NULL, &err) == 0, "%s", err.message);
        M.ended[id] |= ENDED_OK;
        l->live = false;
        M.n_acked++;
    } else {
        engine_fail_req f = {.error = "x"};
        int k = rn(4);
        if (k == 0) f.no_retry = true;
        if (k == 1) {
            f.has_retry_in = true;
            f.retry_in_ms = rn(100);
        }
        if (k == 2 && rn(3) == 0) f.cancelled = true;
        engine_state s;
        ASSERT_MSG(engine_fail(M.e, M.now, id, l->token, &f, &s, &err) == 0, "%s", err.message);
        if (s == ENGINE_DEAD) M.n_dead++;
        l->live = false;
        M.n_failed++;
    }
}

static void op_cancel(void)
{
    if (!M.max_id) return;
    uint64_t back = rnd() % 400; /* recent ids: most older ones are finished */
    uint64_t id = M.max_id > back ? M.max_id - back : 1;
    engine_state s;
    int rc = engine_cancel(M.e, M.now, id, &s, NULL);
    ASSERT(rc == 0 || rc == TENQ_ECONFLICT || rc == TENQ_ENOT_FOUND);
}

static void op_morgue(void)
{
    engine_job *out[4];
    engine_morgue_filter f = {0};
    if (rn(2)) f.tenant = tenants[rn(NT)];
    size_t n = engine_morgue_list(M.e, &f, rn(2) ? ENGINE_MORGUE_NEWEST : ENGINE_MORGUE_BY_ID, NULL,
                                  4, out);
    if (!n) return;
    uint64_t id = engine_job_id(out[rn((int)n)]);
    if (rn(3)) {
        M.ended[id] |= ENDED_REQUEUE; /* it died: a child of policy run may have gone on */
        engine_job_info in;
        engine_job_get(engine_find(M.e, id), &in);
        ASSERT_EQ(engine_morgue_requeue(M.e, M.now, id, NULL), 0);
        M.expire_at[id] = 0;         /* a requeue clears it */
        if (!strcmp(in.type, "D")) { /* back at the end of its lane */
            int t = idx_of(tenants, NT, in.tenant), k = in.key[1] - '0';
            struct deb_job *v = M.dlane[t][k];
            for (unsigned i = 0; i < M.ndlane[t][k]; i++) {
                if (v[i].id != id) continue;
                struct deb_job d = v[i];
                memmove(v + i, v + i + 1, (M.ndlane[t][k] - i - 1) * sizeof *v);
                v[M.ndlane[t][k] - 1] = d;
                break;
            }
        }
    } else
        ASSERT_EQ(engine_morgue_delete(M.e, M.now, id, NULL), 0);
}

/* A setting of key c1 or of the prefix c*, set or deleted. */
static void op_key_setting(void)
{
    int t = rn(NT);
    bool prefix = rn(2);
    uint32_t *slot = prefix ? &M.kset_prefix[t] : &M.kset_c1[t];
    const char *key = prefix ? "c*" : "c1";
    engine_err err;
    if (*slot && rn(3) == 0) {
        ASSERT_EQ(engine_key_delete(M.e, M.now, tenants[t], key, &err), 0);
        *slot = 0;
    } else {
        engine_key_settings ks;
        engine_key_settings_defaults(&ks);
        ks.concurrency = (uint32_t)(1 + rn(3));
        ASSERT_MSG(engine_key_set(M.e, M.now, tenants[t], key, &ks, &err) == 0, "%s", err.message);
        *slot = ks.concurrency;
    }
    M.n_key_settings++;
}

static void op_settings(void)
{
    if (rn(5) == 0) {
        op_key_setting();
        return;
    }
    if (rn(4) == 0) {
        /* a pause or a resume, of a whole queue or of one tenant's jobs in it */
        int q = rn(NQ), t = rn(NT);
        if (rn(2)) {
            M.qpaused[q] = !M.qpaused[q];
            engine_queue_settings s = queue_settings(M.e, queues[q]);
            s.paused = M.qpaused[q];
            set_queue(M.e, queues[q], s);
        } else {
            M.tpaused[t][q] = !M.tpaused[t][q];
            engine_err err;
            ASSERT_EQ(engine_pause_tenant(M.e, M.now, queues[q], tenants[t], M.tpaused[t][q], &err),
                      0);
        }
        M.n_pauses++;
    } else if (rn(2)) {
        int t = rn(NT);
        M.slots[t] = (uint32_t)rn(5);
        engine_tenant_settings ts;
        engine_tenant_get(M.e, M.now, tenants[t], &ts, NULL); /* keeps its rate */
        ts.slots = M.slots[t];
        ts.weight = 1 + (uint32_t)rn(3);
        engine_err err;
        ASSERT_MSG(engine_tenant_set(M.e, M.now, tenants[t], &ts, &err) == 0, "%s", err.message);
    } else {
        int q = rn(NQ);
        M.cap[q] = rn(3) ? ENGINE_UNLIMITED : (uint32_t)(1 + rn(3));
        engine_queue_settings s = queue_settings(M.e, queues[q]);
        s.tenant_cap = M.cap[q];
        if (q == 0 && rn(4) == 0) { /* aging on, off, or another cap */
            M.aging_ms = rn(3) ? 20 + rn(40) : 0;
            M.aging_cap = rn(2) ? 1 : 32767;
            s.aging_ms = M.aging_ms;
            s.aging_cap = M.aging_cap;
        }
        if (q == 1 && rn(4) == 0)
            s.order = s.order == ENGINE_ORDER_FAIR ? ENGINE_ORDER_FIFO : ENGINE_ORDER_FAIR;
        set_queue(M.e, queues[q], s);
    }
}

static char *dupn(const char *s)
{
    return s ? strdup(s) : NULL;
}

static int cmp_seq(const void *a, const void *b)
{
    const engine_job_info *x = a, *y = b;
    return x->lane_seq < y->lane_seq ? -1 : x->lane_seq > y->lane_seq;
}

static int cmp_step_row(const void *a, const void *b)
{
    const struct srow *x = a, *y = b;
    if (x->x.job_id != y->x.job_id) return x->x.job_id < y->x.job_id ? -1 : 1;
    return x->x.pos < y->x.pos ? -1 : x->x.pos > y->x.pos;
}

/* A restart: copy every resident job out (as the store holds them) and load
 * them into a fresh engine. */
static void op_restart(void)
{
    clear_changes();
    engine_job_info *v = calloc(M.max_id + 1, sizeof *v);
    size_t n = 0;
    /* the edges of resident children, as the store keeps them */
    typedef struct {
        uint64_t child, parent;
        engine_deps_policy policy;
    } edge;
    edge *edges = NULL;
    size_t ne = 0, cape = 0;
    for (uint64_t id = 1; id <= M.max_id; id++) {
        engine_job *j = engine_find(M.e, id);
        if (!j) continue;
        engine_job_info *in = &v[n++];
        engine_job_get(j, in);
        for (uint32_t k = 0; k < in->n_parents; k++) {
            if (ne == cape) {
                cape = cape ? cape * 2 : 256;
                edges = realloc(edges, cape * sizeof(*edges));
            }
            edges[ne++] = (edge){id, in->parents[k], in->on_parent_failure};
        }
        in->parents = in->children = NULL;
        in->n_parents = in->n_children = 0;
        in->tenant = dupn(in->tenant);
        in->queue = dupn(in->queue);
        in->type = dupn(in->type);
        in->key = dupn(in->key);
        if (!in->payloads) {
            in->args = dupn(job_args(in)); /* the store's row has them */
            in->args_len = (uint32_t)strlen(in->args);
            in->args_missing = false;
        }
        in->worker = dupn(in->worker);
        in->error = dupn(in->error);
        in->progress = dupn(in->progress);
        in->unique_key = dupn(in->unique_key);
        in->idempotency_key = dupn(in->idempotency_key);
        if (in->n_rate_keys) {
            engine_rate_key *rk = calloc(in->n_rate_keys, sizeof *rk);
            for (uint32_t i = 0; i < in->n_rate_keys; i++) {
                rk[i] = in->rate_keys[i];
                rk[i].key = dupn(rk[i].key);
            }
            in->rate_keys = rk;
        }
        if (in->n_concurrency_keys) {
            engine_limit_key *ck = calloc(in->n_concurrency_keys, sizeof *ck);
            for (uint32_t i = 0; i < in->n_concurrency_keys; i++) {
                ck[i] = in->concurrency_keys[i];
                ck[i].key = dupn(ck[i].key);
            }
            in->concurrency_keys = ck;
        }
        if (in->n_payloads) {
            engine_payload *p = calloc(in->n_payloads, sizeof *p);
            for (uint32_t i = 0; i < in->n_payloads; i++) {
                p[i] = in->payloads[i];
                p[i].data = dupn(in->payloads[i].data);
            }
            in->payloads = p;
        }
    }
    qsort(v, n, sizeof *v, cmp_seq);
    /* batches as a store keeps them: final counts, callbacks and their jobs */
    engine_batch_info *bv = calloc(M.max_batch + 1, sizeof *bv);
    engine_submit_req *specs = calloc((M.max_batch + 1) * ENGINE_NCALLBACKS, sizeof *specs);
    for (uint64_t id = 1; id <= M.max_batch; id++) {
        engine_batch_info *b = &bv[id];
        ASSERT(engine_batch_get(M.e, id, b));
        b->tenant = dupn(b->tenant);
        for (int st = 0; st < ENGINE_SUCCEEDED; st++) b->n[st] = 0;
        for (int k = 0; k < ENGINE_NCALLBACKS; k++) {
            if (!b->callbacks[k]) continue;
            engine_submit_req *c = &specs[id * ENGINE_NCALLBACKS + (uint64_t)k];
            *c = *b->callbacks[k];
            c->queue = dupn(c->queue);
            c->type = dupn(c->type);
            b->callbacks[k] = c;
        }
    }
    uint64_t next = engine_next_id(M.e);
    engine_destroy(M.e);
    engine_config c = model_config();
    M.e = engine_create(&c);
    engine_loading(M.e, true); /* settings and jobs as a store's load gives them */
    setup_queues(M.e);
    engine_set_next_id(M.e, next);
    for (uint64_t id = 1; id <= M.max_batch; id++) {
        ASSERT_EQ(engine_load_batch(M.e, &bv[id], NULL), 0);
        free((char *)bv[id].tenant);
    }
    for (uint64_t i = 0; i < (M.max_batch + 1) * ENGINE_NCALLBACKS; i++) {
        free((char *)specs[i].queue);
        free((char *)specs[i].type);
    }
    free(bv);
    free(specs);
    for (size_t i = 0; i < n; i++) {
        engine_err err;
        ASSERT_MSG(engine_load_job(M.e, M.now, &v[i], &err) == 0, "load: %s", err.message);
        engine_job_info *in = &v[i];
        if (in->batch) ASSERT_EQ(engine_load_batch_job(M.e, in->id, in->batch, in->batch_role), 0);
        free((char *)in->tenant);
        free((char *)in->queue);
        free((char *)in->type);
        free((char *)in->key);
        free((char *)in->args);
        free((char *)in->worker);
        free((char *)in->error);
        free((char *)in->progress);
        free((char *)in->unique_key);
        free((char *)in->idempotency_key);
        for (uint32_t k = 0; k < in->n_payloads; k++) free((char *)in->payloads[k].data);
        free((void *)in->payloads);
        for (uint32_t k = 0; k < in->n_concurrency_keys; k++)
            free((char *)in->concurrency_keys[k].key);
        free((void *)in->concurrency_keys);
        for (uint32_t k = 0; k < in->n_rate_keys; k++) free((char *)in->rate_keys[k].key);
        free((void *)in->rate_keys);
    }
    free(v);
    for (size_t i = 0; i < ne; i++)
        engine_load_dep(M.e, edges[i].child, edges[i].parent, edges[i].policy);
    free(edges);
    /* steps in (job, pos) order, then kept events, as a store's load gives them */
    struct srow *rows = malloc((M.nsrows + 1) * sizeof *rows);
    memcpy(rows, M.srows, M.nsrows * sizeof *rows);
    qsort(rows, M.nsrows, sizeof *rows, cmp_step_row);
    for (size_t i = 0; i < M.nsrows; i++) {
        engine_step_info x = rows[i].x;
        x.name = rows[i].name;
        x.event = rows[i].event[0] ? rows[i].event : NULL;
        engine_err err;
        ASSERT_MSG(engine_load_step(M.e, M.now, &x, &err) == 0, "load step: %s", err.message);
    }
    free(rows);
    engine_load_deps_done(M.e, M.now);
    uint64_t max_event = 0;
    for (size_t i = 0; i < M.nerows; i++) {
        struct erow *r = &M.erows[i];
        if (r->x.id > max_event) max_event = r->x.id;
        if (r->gone) continue;
        engine_event_info x = r->x;
        x.tenant = tenants[r->tenant];
        x.key = ev_keys[r->key];
        x.payload = r->payload;
        x.len = (uint32_t)strlen(r->payload);
        ASSERT_EQ(engine_load_event(M.e, M.now, &x, NULL), 0);
    }
    engine_load_event_id(M.e, max_event);
    engine_loading(M.e, false);
    clear_changes();
    M.n_restarts++;
}

static uint64_t trace_id(void)
{
    static int init;
    static uint64_t id;
    if (!init) {
        const char *s = getenv("TRACE_ID");
        id = s ? strtoull(s, NULL, 10) : 0;
        init = 1;
    }
    return id;
}

static void trace_step(const char *what)
{
    uint64_t id = trace_id();
    if (!id) return;
    engine_job *j = engine_find(M.e, id);
    static int last = -2;
    int st = j ? (int)engine_job_state(j) : -1;
    if (st != last) {
        fprintf(stderr, "step %llu now %lld after %s: job %llu %s live=%d\n",
                (unsigned long long)M.steps, (long long)M.now, what, (unsigned long long)id,
                st < 0 ? "gone" : engine_state_name((engine_state)st), M.lease[id].live);
        last = st;
    }
}

static void check_live_leases_agree(void)
{
    compact_live();
    for (size_t i = 0; i < M.n_live; i++) {
        uint64_t id = M.live[i];
        live_lease *l = &M.lease[id];
        engine_job *j = engine_find(M.e, id);
        ASSERT_MSG(j, "live lease on job %llu the engine lost", (unsigned long long)id);
        engine_job_info in;
        engine_job_get(j, &in);
        ASSERT_MSG(in.state == ENGINE_LEASED || in.state == ENGINE_RUNNING,
                   "job %llu should be leased, is %s", (unsigned long long)id,
                   engine_state_name(in.state));
        ASSERT_EQ(in.token, l->token);
        ASSERT_EQ(in.lease_until, l->deadline);
    }
}

static void run_model(uint64_t seed, uint64_t ops, bool spill)
{
    memset(&M, 0, sizeof M);
    M.spill = spill;
    M.args_of = calloc(MAXJ + 1, sizeof(char *));
    M.rng = seed;
    M.now = 1700000000000LL;
    M.aging_ms = 30; /* queue fifo ages from the start (op_settings changes it) */
    M.aging_cap = 1;
    M.lease = calloc(MAXJ + 1, sizeof(live_lease));
    M.live = calloc(MAXJ + 1, sizeof(uint64_t));
    M.reported = calloc(MAXJ + 1, sizeof(uint64_t));
    M.ended = calloc(MAXJ + 1, 1);
    M.dep_of = calloc(MAXJ + 1, sizeof(uint32_t));
    M.cb_seen = calloc(MAXB + 1, sizeof *M.cb_seen);
    M.expire_at = calloc(MAXJ + 1, sizeof *M.expire_at);
    M.seen_expired = calloc(MAXJ + 1, 1);
    M.st = calloc(MAXJ + 1, sizeof *M.st);
    M.ev_parked = calloc(MAXJ + 1, sizeof(uint64_t));
    for (int t = 0; t < NT; t++) M.slots[t] = (uint32_t)(1 + rn(4));
    for (int q = 0; q < NQ; q++) M.cap[q] = ENGINE_UNLIMITED;
    M.rl_tenant = (rate_log){.rate = 3, .burst = 2, .period = 100};
    M.rl_queue = (rate_log){.rate = 5, .burst = 5, .period = 200};
    for (int t = 0; t < NT; t++) M.rl_pair[t] = (rate_log){.rate = 2, .burst = 2, .period = 50};
    for (int t = 0; t < NT; t++) {
        M.rl_rkey[t][0] = (rate_log){.rate = 6, .burst = 6, .period = 100};
        M.rl_rkey[t][1] = (rate_log){.rate = 4, .burst = 4, .period = 200};
    }
    engine_config c = model_config();
    M.e = engine_create(&c);
    setup_queues(M.e);
    char buf[512];
    for (M.steps = 0; M.steps < ops; M.steps++) {
        engine_counts tot;
        engine_totals(M.e, M.now, &tot);
        uint64_t resident =
            tot.ready + tot.scheduled + tot.blocked + tot.waiting + tot.leased + tot.running;
        int r = rn(100);
        if (r < 28) {
            /* The morgue is bounded too: engine_check walks every dead job
             * at every step, and a seed whose jobs die faster than the
             * morgue is emptied once took the run past its time limit. */
            if (resident < 120 && tot.dead < 150 && M.max_id < MAXJ - 10) {
                if (rn(25) == 0)
                    op_batch();
                else if (rn(10) == 0)
                    op_debounce();
                else
                    op_submit();
            }
        } else if (r < 48) {
            op_lease();
        } else if (r < 70) {
            op_worker();
        } else if (r < 75) {
            if (rn(3))
                op_cancel();
            else
                op_event();
        } else if (r < 79 || (tot.dead > 40 && r < 85)) {
            op_morgue();
        } else if (r < 81) {
            op_settings();
        } else if (r < 97) {
            M.now += rn(8) == 0 ? 150 + rn(300) : rn(40);
            engine_tick(M.e, M.now);
            expire_model_leases();
        } else if (rn(300) == 0) {
            op_restart();
        } else {
            clear_changes();
        }
        M.max_id = engine_next_id(M.e) - 1; /* the engine makes ids too (merge splits) */
        trace_step(r < 28   ? "submit"
                   : r < 48 ? "lease"
                   : r < 70 ? "worker"
                   : r < 75 ? "cancel"
                   : r < 79 ? "morgue"
                   : r < 81 ? "settings"
                   : r < 97 ? "tick"
                            : "restart/clear");
        if (rn(3) == 0) read_ahead();
        if (engine_check(M.e, M.now, buf, sizeof buf) != 0)
            test_fail(__FILE__, __LINE__, "step %llu: %s", (unsigned long long)M.steps, buf);
        check_callbacks(M.seen_changes);
        check_attempts();
        if (M.steps % 16 == 0) check_live_leases_agree();
        if (M.steps % 256 == 0) check_batches_settled();
        if (M.max_id >= MAXJ - 10) break;
    }
    fprintf(stderr,
            "  %llu steps: %llu leases, %llu acks, %llu fails, %llu expired, %llu dead, %llu "
            "merged, %llu restarts, %llu pauses, %llu jobs, %llu children (%llu leased), %llu "
            "batches (%llu fan-outs, %llu callbacks), %llu keyed leases (%llu held by keys, %llu "
            "key settings), %llu rate-keyed leases (%llu held), %llu expired (%llu leases "
            "before), %llu debounced jobs (%llu submits replaced one, %llu leased)\n",
            (unsigned long long)M.steps, (unsigned long long)M.n_leased,
            (unsigned long long)M.n_acked, (unsigned long long)M.n_failed,
            (unsigned long long)M.n_expired, (unsigned long long)M.n_dead,
            (unsigned long long)M.n_merged, (unsigned long long)M.n_restarts,
            (unsigned long long)M.n_pauses, (unsigned long long)M.max_id,
            (unsigned long long)M.n_children, (unsigned long long)M.n_children_leased,
            (unsigned long long)M.n_batches, (unsigned long long)M.n_fanouts,
            (unsigned long long)M.n_callbacks, (unsigned long long)M.n_keyed_leases,
            (unsigned long long)M.n_key_held, (unsigned long long)M.n_key_settings,
            (unsigned long long)M.n_rate_keyed_leases, (unsigned long long)M.n_rate_key_held,
            (unsigned long long)M.n_jobs_expired, (unsigned long long)M.n_expiring_leases,
            (unsigned long long)M.n_debounce_made, (unsigned long long)M.n_debounced,
            (unsigned long long)M.n_debounced_leases);
    ASSERT(M.n_leased > ops / 50);
    /* every end but an ack, once */
    ASSERT_EQ(M.n_attempts, M.n_failed + M.n_expired + M.n_suspended);
    fprintf(stderr,
            "  steps: %llu stored, %llu sleeps, %llu waits (%llu woken, %llu timed out), %llu "
            "events kept (%llu taken), %llu children, %llu resumed\n",
            (unsigned long long)M.n_steps, (unsigned long long)M.n_sleeps,
            (unsigned long long)M.n_waits, (unsigned long long)M.n_woken,
            (unsigned long long)M.n_timeouts, (unsigned long long)M.n_kept,
            (unsigned long long)M.n_taken, (unsigned long long)M.n_kids,
            (unsigned long long)M.n_resumed);
    ASSERT(M.n_steps > 0 && M.n_sleeps > 0 && M.n_woken > 0 && M.n_timeouts > 0 && M.n_taken > 0 &&
           M.n_kids > 0 && M.n_resumed > 0);
    ASSERT(M.n_expired > 0 && M.n_dead > 0 && M.n_merged > 0 && M.n_restarts > 0 && M.n_pauses > 0);
    ASSERT(M.n_children_leased > 0);
    ASSERT(M.n_batches > 0 && M.n_callbacks > 0 && M.n_fanouts > 0);
    ASSERT(M.n_keyed_leases > 0 && M.n_key_held > 0 && M.n_key_settings > 0);
    ASSERT(M.n_rate_keyed_leases > 0 && M.n_rate_key_held > 0);
    ASSERT(M.n_jobs_expired > 0 && M.n_expiring_leases > 0);
    ASSERT(M.n_debounced > 0 && M.n_debounced_leases > 0);
    fprintf(stderr,
            "  order: %llu leases checked against their node, %llu aged jobs seen, %llu pairs of "
            "priorities compared under aging\n",
            (unsigned long long)M.n_order_checks, (unsigned long long)M.n_aged_seen,
            (unsigned long long)M.n_order_pairs);
    ASSERT(M.n_order_checks > 0 && M.n_aged_seen > 0 && M.n_order_pairs > 0);
    if (spill) {
        fprintf(stderr, "  spilled: %llu leases of spilled jobs, %llu args read back\n",
                (unsigned long long)M.n_spilled_leases, (unsigned long long)M.n_read_back);
        ASSERT(M.n_spilled_leases > 0 && M.n_read_back > 0);
    }
    engine_destroy(M.e);
    for (uint64_t i = 0; i <= MAXJ; i++) free(M.args_of[i]);
    free(M.args_of);
    free(M.ended);
    free(M.dep_of);
    free(M.deps);
    free(M.lease);
    free(M.live);
    free(M.reported);
    free(M.cb_seen);
    free(M.expire_at);
    free(M.seen_expired);
    free(M.st);
    free(M.ev_parked);
    free(M.srows);
    free(M.erows);
    free(M.kevs);
}

static uint64_t model_ops(uint64_t dflt)
{
    const char *s = getenv("MODEL_OPS");
    return s && *s ? strtoull(s, NULL, 10) : dflt;
}

#ifdef TENQ_SANITIZE
#define DEFAULT_OPS 300000
#else
#define DEFAULT_OPS 2000000
#endif

TEST_T(model_random_operations_keep_every_invariant, 900)
{
    run_model(test_seed(), model_ops(DEFAULT_OPS), false);
}

/* The same with args out of memory: a budget of a few jobs' args. */
TEST_T(model_with_args_spilled_keeps_every_invariant, 900)
{
    run_model(test_seed() ^ 0x5b111ed, model_ops(DEFAULT_OPS / 2), true);
}
