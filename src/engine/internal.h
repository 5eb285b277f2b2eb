// SPDX-License-Identifier: Apache-2.0
/* The engine's insides, shared by its .c files and by nothing else.
 *
 * Objects and what indexes them:
 *   tenant  by name            slots, weight, active leases, morgue trees
 *   queue   by name            settings, heap of eligible shards, fair clock
 *   shard   (queue, type)      heap of eligible nodes
 *   pair    (queue, tenant)    per-queue cap, fair pass, counters
 *   node    (shard, tenant)    heap of ready jobs (lane heads and keyless)
 *   lane    (tenant, queue, key) list of unfinished jobs in submission order
 *   job     by id              one allocation: the record, then its args
 *   tkey    (tenant, key)      a keyed limit: how many of its jobs run (keys.c)
 *   group   (node, keys)       a node's ready jobs that name the same keys:
 *                              a node of its own, in its node's heap of
 *                              groups while every key has room
 *
 * Eligibility is kept exact rather than checked at lease time: a node sits
 * in its shard's heap exactly when it has ready jobs, its tenant has a free
 * slot and its pair is under the queue's tenant cap; a shard sits in its
 * queue's heap exactly when it has such nodes.  So lease never walks past a
 * full tenant, whatever its backlog.  A job that names keys lives in a
 * group of its node: the group sits in its node's heap of groups exactly
 * when it has ready jobs and each of its keys has room, so a key at its
 * limit costs a lease nothing either.
 */
#ifndef TENQ_ENGINE_INTERNAL_H
#define TENQ_ENGINE_INTERNAL_H

#include "engine.h"

#include "base/avl.h"
#include "base/hash.h"
#include "base/heap.h"
#include "base/htab.h"
#include "base/idtab.h"
#include "base/xalloc.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FAIR_STRIDE (1u << 20)

/* Counters per state (resident states only) and monotonic totals. */
typedef struct counters {
    uint64_t n[ENGINE_NSTATES];
    uint64_t submitted, succeeded, failed, dead, cancelled, expired;
    uint64_t queued_bytes; /* args and payloads of the unfinished jobs (quota.c) */
} counters;

/* An intrusive doubly-linked list link. */
typedef struct dlink {
    struct dlink *prev, *next;
} dlink;

typedef struct dlist {
    dlink head; /* sentinel: head.next is first */
} dlist;

static inline void dlist_init(dlist *l)
{
    l->head.prev = l->head.next = &l->head;
}
static inline bool dlist_empty(const dlist *l)
{
    return l->head.next == &l->head;
}
static inline void dlist_push_back(dlist *l, dlink *x)
{
    x->prev = l->head.prev;
    x->next = &l->head;
    l->head.prev->next = x;
    l->head.prev = x;
}
static inline void dlist_remove(dlink *x)
{
    x->prev->next = x->next;
    x->next->prev = x->prev;
    x->prev = x->next = NULL;
}
#define DLIST_ITEM(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))
#define DLIST_FOREACH(it, l)          for (dlink *it = (l)->head.next; it != &(l)->head; it = it->next)
#define DLIST_FOREACH_SAFE(it, nx, l)                                                              \
    for (dlink *it = (l)->head.next, *nx = it->next; it != &(l)->head; it = nx, nx = it->next)

struct queue;
struct tenant;
struct engine_job;

/* Job heaps keep each job's sort key inline, so sifting compares without
 * touching the jobs themselves (at a large backlog every touch is a cache
 * miss).  4-ary: half the depth of a binary heap. */
typedef struct jheap_entry {
    uint64_t k;  /* primary key: packed priority+run_at, or a deadline */
    uint64_t id; /* ties break on id */
    struct engine_job *j;
} jheap_entry;

typedef struct jheap {
    jheap_entry *a;
    uint32_t n, cap;
} jheap;

/* A node's heap of groups (keys.c): each group's front inline, as a job
 * heap's, so that sifting touches no group but those it moves (a group's
 * sidx is its place).  4-ary. */
typedef struct gheap_entry {
    uint64_t k, kid;
    struct node *g;
} gheap_entry;

typedef struct gheap {
    gheap_entry *a;
    uint32_t n, cap;
} gheap;

/* A node's ready heap holds only (key, id): a queued job costs 16 bytes there
 * rather than 24 (4 entries to a cache line), and the one job a lease takes
 * is found by its id (the top is always live, so always in e->jobs). */
typedef struct ready_entry {
    uint64_t k;
    uint64_t id;
} ready_entry;

typedef struct ready_heap {
    ready_entry *a;
    uint32_t n, cap;
} ready_heap;

/* A rate limit's state (rate.c): one per tenant, queue and pair.  Keys
 * (keys.c) use the same heap of timers: a key's bucket (RB_KEY) holds its
 * rate, and its timer keeps a key no job names until its bucket is full
 * again; a group's (RB_GROUP) is only a timer: closed until its rate keys
 * allow its cost. */
typedef enum { RB_TENANT, RB_QUEUE, RB_PAIR, RB_KEY, RB_GROUP } rb_kind;
typedef struct rate_bucket {
    int64_t t, tau; /* its limit: emission interval and tolerance, us (t 0: none) */
    int64_t tat;    /* GCRA's theoretical arrival time, us; 0: unused since start */
    int64_t until;  /* closed until then (ms), in e->rate_timers; 0: open */
    uint32_t hidx;
    uint8_t kind; /* rb_kind */
} rate_bucket;

typedef struct tenant {
    char *name;
    uint64_t hash;
    engine_tenant_settings s;
    uint32_t active;   /* leased + running, all queues */
    rate_bucket rb;    /* s.rate (beside active: both read at every lease) */
    dlist ready_nodes; /* nodes with ready jobs */
    counters c;
    avl_tree dead_by_id, dead_by_fin;
    bool chg;
    dlist keys;          /* its tkeys (keys.c) */
    dlist key_settings;  /* its key settings */
    uint32_t n_prefixes; /* of which name a prefix */
} tenant;

typedef struct queue {
    engine_t *e; /* for engine_job_get, which has only the job (a spilled job's args) */
    char *name;
    uint64_t hash;
    engine_queue_settings s;
    heap shards;           /* shards with eligible nodes */
    uint64_t vclock;       /* fair: the pass of the last pick */
    dlist pairs;           /* every pair of this queue */
    dlist all_shards;      /* every shard of this queue */
    rate_bucket rb;        /* s.rate (s.tenant_rate: each pair's) */
    int64_t asked_at;      /* the last lease that named it without types; 0: none */
    bool pair_rates_fresh; /* tenant_rate was set in this engine's life, not loaded */
    counters c;
    bool chg, wake;
} queue;

typedef struct shard {
    queue *q;
    char *type;
    uint64_t hash;
    heap nodes;       /* eligible nodes */
    uint32_t qidx;    /* position in q->shards */
    int64_t asked_at; /* the last lease that named its type; 0: none */
    dlink in_queue;
} shard;

typedef struct pair {
    queue *q;
    tenant *t;
    uint64_t hash;
    uint32_t active;     /* leased + running in this queue */
    uint32_t n_eligible; /* nodes in shard heaps */
    uint64_t pass;       /* fair order */
    bool paused;         /* the queue is paused for this tenant */
    rate_bucket rb;      /* the queue's tenant_rate */
    dlist ready_nodes;
    dlink in_queue;
    counters c;
} pair;

typedef struct node {
    /* the node's key in its shard's heap, copied here when it changes */
    uint64_t k, kid, pass;
    bool fair;
    uint32_t sidx; /* position in sh->nodes, HEAP_NONE when not eligible */
    shard *sh;
    tenant *t;
    pair *p;
    uint64_t hash;
    ready_heap jobs; /* ready jobs, plus stale entries (see sched.c) */
    /* Priority aging (aging.c): ready jobs still rising to their queue's
     * aging_cap, by their rank, which time does not change (they come after
     * every job of `jobs`); the node waits in e->aging until its first
     * reaches the cap, at cap_at. */
    ready_heap rising;
    int64_t cap_at;
    uint32_t aidx;
    uint32_t n_ready; /* live entries in jobs */
    uint32_t refs;    /* jobs that point here */
    dlink in_tenant;  /* in t->ready_nodes while jobs.n > 0 */
    dlink in_pair;    /* in p->ready_nodes while jobs.n > 0 */
    uint16_t recent;  /* leases since its args were last read ahead (args.c) */
    bool args_dirty;  /* in e->args_dirty: its front to read ahead */
    /* Groups (keys.c).  A node (parent NULL): its groups with ready jobs and
     * keys with room, in `groups` by their front (k, kid), and how many
     * ready jobs all its groups hold.  A group: its node, its keys, and its
     * place in the node's `groups` (sidx). */
    struct node *parent;
    struct gkeys *keys;
    gheap groups;
    uint32_t n_grp_ready;
} node;

typedef struct lane {
    uint64_t hash;
    tenant *t;
    queue *q;
    struct engine_job *head, *tail;
    uint32_t len;  /* jobs in the list */
    uint32_t refs; /* jobs that point here (list, morgue, finished) */
    char key[];
} lane;

/* A laned job's lane and its neighbours there: only laned jobs carry one,
 * so every other job is 16 bytes smaller. */
typedef struct lane_link {
    lane *lane;
    struct engine_job *prev, *next;
} lane_link;

/* A key's settings (keys.c): for the key, or for a prefix ("account:*"). */
typedef struct key_setting {
    struct tenant *t;
    uint64_t hash;
    engine_key_settings s;
    bool prefix; /* key ends in '*': every key that begins with the rest */
    bool gone;   /* deleted: freed at engine_changes_clear */
    dlink in_tenant;
    char key[]; /* as set: "account:*" for a prefix */
} key_setting;

/* A keyed limit (keys.c): a key of a tenant that resident jobs name. */
typedef struct tkey {
    struct tenant *t;
    uint64_t hash;
    uint32_t limit;         /* concurrency in force; ENGINE_UNLIMITED: none */
    uint32_t job_limit;     /* what its last submit (or load) said */
    uint32_t active;        /* leased or running jobs that name it */
    uint32_t refs;          /* groups that name it */
    uint32_t live;          /* of those, groups not idle (jobs point there) */
    const key_setting *set; /* the setting in force, or NULL */
    /* rate: rb.t a unit and rb.tau (us; t 0: none), rb.tat; rb.until: a key
     * no group names, kept until its bucket is full again (its timer) */
    rate_bucket rb;
    uint32_t burst;               /* units */
    uint32_t job_rate, job_burst; /* what its last submit said (0: nothing) */
    int64_t job_period;
    const key_setting *rate_set; /* the setting whose rate is in force */
    dlist groups;                /* gkey links of its groups */
    dlink in_tenant;             /* in t->keys */
    uint32_t klen;
    char key[];
} tkey;

/* One key of a group: a concurrency key, or a rate key. */
typedef struct gkey {
    tkey *k;
    struct node *g;        /* its group */
    dlink link;            /* in k->groups */
    bool rate;             /* a rate key (else a concurrency key) */
    uint32_t limit;        /* concurrency, as the jobs gave it (0: not given) */
    engine_rate_key given; /* rate, as the jobs gave it (its key unused) */
} gkey;

/* A group's keys, after the group's node in its allocation: its
 * concurrency keys (nc of them), then its rate keys, each in their text's
 * order. */
typedef struct gkeys {
    uint64_t hash; /* of the node and the keys */
    uint8_t n, nc;
    uint8_t full;   /* keys at their limit: the group is eligible when 0 */
    rate_bucket rb; /* RB_GROUP: closed until its rate keys allow its costs */
    /* the keys as engine_job_get shows them, in the same allocation after v
     * (a submit's lookup reads only the head and v) */
    engine_limit_key *cout;
    engine_rate_key *rout;
    gkey v[];
} gkeys;

/* Worker names, interned: many jobs share a few workers. */
typedef struct worker_name {
    uint64_t hash;
    uint32_t refs;
    char name[];
} worker_name;

typedef struct payload_vec {
    engine_payload *v; /* data owned, sorted by score */
    uint64_t *hashes;  /* of the data, to find identical payloads fast */
    uint32_t n, cap;
    uint64_t bytes; /* of the data, all payloads together */
} payload_vec;

/* Morgue links: only dead jobs carry them. */
typedef struct dead_links {
    avl_node g_id, g_fin, t_id, t_fin;
    struct engine_job *j;
} dead_links;

/* Dependencies (deps.c): only jobs that have parents or children carry
 * them, in their extra, so that every other job stays as it was. */
typedef struct job_deps {
    engine_t *e;       /* for engine_job_wait, which has only the job */
    uint64_t *parents; /* as submitted (child side) */
    uint32_t n_parents;
    uint32_t pending;   /* parents still unfinished, while the job waits */
    uint64_t *children; /* jobs that named this one (parent side) */
    uint32_t n_children, cap_children;
    uint8_t policy; /* engine_deps_policy */
} job_deps;

/* Durable steps (steps.c): only jobs that stored a step, or a child that
 * a job awaits, carry them, in their extra.  Results are the store's. */
enum { PARK_NONE, PARK_SLEEP, PARK_EVENT, PARK_CHILD };
struct ev_key;
typedef struct job_steps {
    uint64_t *names; /* a hash of each stored step's name, in the order stored */
    uint32_t n, cap;
    uint32_t n_before;   /* stored before the current lease (its own are after) */
    uint64_t bytes;      /* of their results */
    uint8_t park;        /* PARK_*: what the job, not leased, waits for */
    uint32_t wait_pos;   /* PARK_EVENT, PARK_CHILD: the step waited for */
    int64_t until;       /* PARK_SLEEP: its time; PARK_EVENT: its timeout (0: none) */
    uint64_t child;      /* PARK_CHILD: the job awaited */
    uint64_t awaited_by; /* a child: the job that awaits it (0: none) */
    struct ev_key *ek;   /* PARK_EVENT: its key's waiters */
    dlink in_key;        /* PARK_EVENT: in ek->waiters */
    struct engine_job *j;
} job_steps;

/* Fields most queued jobs never need: allocated on first use. */
typedef struct job_extra {
    int64_t leased_at, started_at, finished_at, deadline;
    uint64_t token;     /* fencing token of the current (or last) lease */
    const char *worker; /* interned */
    char *error, *result, *stats, *progress;
    char *unique_key;
    char *idem_key;
    char *traceparent;
    int64_t timeout_ms; /* the job's own; 0: its queue's */
    payload_vec pl;
    uint64_t merged_into;
    uint64_t lane_seq; /* 0: same as id */
    dead_links *dl;
    job_deps *deps;         /* NULL: no parents, no children */
    struct batch *batch;    /* its batch (batches.c), or NULL */
    uint8_t batch_role;     /* ENGINE_BATCH_MEMBER, or 1 + engine_callback_kind */
    bool debounced;         /* made by a debounced submit (debounce.c) */
    int64_t debounce_until; /* ... its latest start (0: none) */
    int64_t expire_at;      /* never leased at or after it (expiry.c); 0: none */
    job_steps *steps;       /* NULL: no step, not awaited */
} job_extra;

/* A batch (batches.c): counters of its jobs, its callbacks. */
typedef struct batch {
    uint64_t id;
    tenant *t;
    int64_t created_at, closed_at;
    uint64_t total, deleted;
    uint64_t deaths; /* deaths of its jobs, ever (stored): a requeue takes none back */
    uint64_t n[ENGINE_NSTATES];
    engine_submit_req *cb[ENGINE_NCALLBACKS]; /* owned copies, NULL: none */
    uint64_t cb_id[ENGINE_NCALLBACKS];
    bool chg;   /* listed in the changes */
    bool due;   /* in e->batch_due: to settle at the end of the call */
    bool death; /* its first job died: on_death is due */
} batch;

#define JF_CANCEL_REQ   1u
#define JF_HAS_PAYLOADS 2u /* carries extra->pl instead of args */
#define JF_IN_UNIQ      4u /* the dedup table points at this job */
#define JF_IN_BATCH     8u /* one of a batch's jobs (extra->batch): its state changes count there */
#define JF_ARGS_OUT     16u /* its args are spilled (args.c): args[0..2] hold their length */
#define JF_ARGS_ASKED   32u /* spilled, and read ahead already (engine_args_wanted) */
#define JF_CAPPED       64u /* ready, aged to its queue's aging_cap (aging.c) */

struct engine_job {
    uint64_t id;
    node *node;         /* the tenant's ready jobs of its queue and type */
    lane_link *in_lane; /* NULL: not laned */
    int64_t run_at, created_at, ready_at;
    job_extra *extra;
    uint32_t hidx; /* position in the timer or lease heap */
    int16_t priority;
    uint8_t state;
    uint8_t flags;
    uint16_t attempts, max_attempts;
    uint8_t noted; /* JOB_NOTED | ENGINE_JF_*: in the change list, with these fields */
    char args[];   /* JSON text (no NUL inside) + NUL; "" when JF_HAS_PAYLOADS */
};
typedef struct engine_job job;
/* A job is the bulk of a backlog's memory: a blank one ("{}") is one 80-byte
 * malloc chunk (72 usable bytes on 64-bit glibc), not 96 or 112. */
_Static_assert(offsetof(struct engine_job, args) + sizeof("{}") <= 72,
               "a blank job no longer fits an 80-byte malloc chunk");
#define JOB_NOTED 0x80u
_Static_assert((ENGINE_JF_NEW | ENGINE_JF_PAYLOADS | ENGINE_JF_RESULT | ENGINE_JF_LANE |
                ENGINE_JF_RELEASED | ENGINE_JF_STEPS | ENGINE_JF_ARGS) < JOB_NOTED,
               "change fields must fit beside JOB_NOTED");

typedef struct idem_entry {
    tenant *t;
    uint64_t hash;
    engine_idem_info info; /* info.key owned */
    dlink in_order;        /* by created_at, for expiry */
    bool in_chg;
} idem_entry;

typedef struct change_vec {
    engine_change *v;
    size_t n, cap;
} change_vec;

typedef struct ptr_vec {
    void **v;
    size_t n, cap;
} ptr_vec;

struct engine {
    engine_config cfg;
    hash_key hk;
    uint64_t rng;
    uint64_t next_id;
    idtab jobs;
    htab tenants, queues, shards, pairs, nodes, lanes, uniq, idem, workers;
    htab tkeys, groups, key_settings; /* keys.c */
    size_t keys_full;                 /* tkeys at their limit */
    size_t keys_dormant;              /* tkeys named by idle groups only */
    dlist idle_groups;                /* groups no job points to, oldest first (keys.c) */
    size_t n_idle_groups;
    ptr_vec key_setting_graveyard; /* deleted settings listed in changes */
    htab stale;                    /* (id, key) of node-heap entries whose job left */
    jheap timers;                  /* scheduled jobs by run_at */
    jheap leases;                  /* leased/running jobs by deadline */
    jheap waits;                   /* jobs waiting for an event, by its timeout (steps.c) */
    heap rate_timers;              /* closed rate buckets by the time they open */
    heap aging;                    /* nodes by when their first rising job reaches the cap */
    ready_heap expiry;             /* (expire_at, id) of jobs that may expire (expiry.c; lazy) */
    dlist idem_order;
    avl_tree dead_by_id, dead_by_fin;
    change_vec changes;
    ptr_vec graveyard;      /* finished jobs, freed at changes_clear */
    ptr_vec idem_graveyard; /* expired idempotency entries listed in changes */
    ptr_vec attempt_recs;   /* ended attempts listed in changes (attempts.c) */
    ptr_vec deps_work;      /* parents whose end their children have yet to see (deps.c) */
    bool deps_busy;
    ptr_vec batches;   /* every batch, by id (batches.c) */
    ptr_vec batch_due; /* batches whose callbacks may be due */
    ptr_vec batch_chg; /* batches listed in the changes */
    size_t batches_open;
    uint64_t callbacks_made;
    uint64_t next_batch_id;
    counters c;
    bool loading;      /* engine_loading: jobs loaded are not noted as changed */
    size_t data_bytes; /* args and payloads */
    size_t mem_bytes;  /* what the jobs take in memory, as mem_chunk counts it */
    /* args out of memory (args.c) */
    htab args_cache;         /* args_entry by id: spilled jobs' args in memory */
    dlist args_lru;          /* unpinned entries, the next to evict first */
    size_t args_cache_bytes; /* what the entries take */
    ptr_vec args_pinned;     /* entries of jobs whose rows are not collected yet */
    ptr_vec args_dirty;      /* nodes whose front to read ahead */
    size_t n_spilled;        /* jobs in memory whose args are spilled */
    int64_t args_timers_at;  /* when to look at the timers again */
    size_t n_jobs;
    /* durable steps (steps.c) */
    htab evkeys;      /* ev_key by (tenant, key): jobs waiting, events kept */
    dlist kept_order; /* kept events by expires_at */
    size_t n_kept, n_ev_waiting;
    uint64_t event_id;  /* the last kept event's id */
    ptr_vec step_recs;  /* steps listed in changes */
    ptr_vec event_recs; /* kept events listed in changes */
    ptr_vec steps_work; /* children whose parent ended: to cancel */
    bool steps_busy;
    /* scratch for lease */
    ptr_vec scratch;
};

/* Allocation: the engine aborts when memory runs out (see base/xalloc.h). */
#define engine_oom xalloc_die

/* What the jobs take in memory (e->mem_bytes, engine_memory_usage): each
 * allocation a job owns counted as the malloc chunk it takes (glibc on
 * 64-bit: 8 bytes of header, rounded up to 16, 32 at least), and what
 * every job costs in the indexes (its id-table slot, a heap entry, their
 * arrays' room to grow) as one figure a job. */
static inline size_t mem_chunk(size_t n)
{
    size_t c = (n + 8 + 15) & ~(size_t)15;
    return c < 32 ? 32 : c;
}
#define MEM_JOB_INDEXES 40
static inline size_t mem_job(size_t args_len)
{
    return mem_chunk(offsetof(struct engine_job, args) + args_len + 1) + MEM_JOB_INDEXES;
}
/* A payload: its data, and its entry and hash in the vectors. */
static inline size_t mem_payload(size_t len)
{
    return mem_chunk(len) + sizeof(engine_payload) + sizeof(uint64_t);
}

static inline void ptr_vec_push(ptr_vec *v, void *p)
{
    if (v->n == v->cap) {
        size_t nc = v->cap ? v->cap * 2 : 64;
        void **nv = realloc(v->v, nc * sizeof(void *));
        if (!nv) engine_oom();
        v->v = nv;
        v->cap = nc;
    }
    v->v[v->n++] = p;
}

/* ---- lookups (engine.c) */
tenant *engine_tenant_find(engine_t *e, const char *name);
tenant *engine_tenant_get_or_create(engine_t *e, const char *name);
/* A (queue, tenant) pair: found (NULL: none yet), or made on first use. */
pair *engine_pair_find(engine_t *e, const queue *q, const tenant *t);
pair *engine_pair_get(engine_t *e, queue *q, tenant *t);
queue *engine_queue_find(engine_t *e, const char *name);
queue *engine_queue_get_or_create(engine_t *e, const char *name);
shard *engine_shard_find(engine_t *e, queue *q, const char *type);
node *engine_node_get_or_create(engine_t *e, queue *q, const char *type, tenant *t);
void engine_node_unref(engine_t *e, node *n);
lane *engine_lane_find(engine_t *e, tenant *t, queue *q, const char *key);
lane *engine_lane_get_or_create(engine_t *e, tenant *t, queue *q, const char *key);
void engine_lane_unref(engine_t *e, lane *l);
/* Puts a job in a lane for good (its lane link; the lane counts it). */
void engine_lane_join(engine_t *e, lane *l, struct engine_job *j);
job *engine_job_find(engine_t *e, uint64_t id);

/* ---- changes (engine.c) */
engine_change *engine_change_push(engine_t *e);
void engine_note_job(engine_t *e, job *j, uint32_t fields);
void engine_note_tenant(engine_t *e, tenant *t);
void engine_note_queue(engine_t *e, queue *q);
void engine_note_wake(engine_t *e, queue *q);
void engine_note_pause(engine_t *e, pair *p);

/* ---- scheduling (sched.c) */
static inline lane *job_lane(const job *j)
{
    return j->in_lane ? j->in_lane->lane : NULL;
}

static inline job *lane_next(const job *j)
{
    return j->in_lane ? j->in_lane->next : NULL;
}

static inline queue *job_queue(const job *j)
{
    return j->node->sh->q;
}
static inline tenant *job_tenant(const job *j)
{
    return j->node->t;
}
static inline pair *job_pair(const job *j)
{
    return j->node->p;
}
static inline bool tenant_has_room(const tenant *t)
{
    return t->active < t->s.slots && !t->rb.until;
}
/* Whether the pair may start a job: room under the queue's per-tenant
 * cap, and neither the queue nor the pair paused. */
static inline bool pair_room_under(const pair *p, const engine_queue_settings *qs)
{
    return !qs->paused && !p->paused && p->active < qs->tenant_cap && !p->rb.until;
}
static inline bool pair_has_room(const pair *p)
{
    return pair_room_under(p, &p->q->s);
}
static inline bool key_has_room(const tkey *k)
{
    return k->active < k->limit;
}
/* The node (shard, tenant) a job's node or group belongs to. */
static inline node *node_base(node *n)
{
    return n->parent ? n->parent : n;
}
job_extra *engine_extra(engine_t *e, job *j);
void engine_set_state(engine_t *e, job *j, engine_state s);
/* The job is its lane's head (or keyless) and not running: make it
 * scheduled or ready according to its run_at. */
void engine_make_runnable(engine_t *e, job *j, int64_t now);
/* Takes the job out of whatever heap/list its state keeps it in. */
void engine_unplace(engine_t *e, job *j);
void engine_node_update(engine_t *e, node *n);
void engine_tenant_room_changed(engine_t *e, tenant *t);
void engine_pair_room_changed(engine_t *e, pair *p);
void engine_queue_reorder(engine_t *e, queue *q);
/* Slot accounting when a job enters or leaves leased/running. */
void engine_take_slot(engine_t *e, job *j);
void engine_release_slot(engine_t *e, job *j);
/* Lanes. */
void engine_lane_append(engine_t *e, lane *l, job *j);
/* Removes the job from its lane's list; if it was the head, the next job
 * becomes runnable. */
void engine_lane_unlink(engine_t *e, job *j, int64_t now);
void engine_lease_heap_push(engine_t *e, job *j);
void engine_lease_heap_fix(engine_t *e, job *j);
void engine_timer_push(engine_t *e, job *j);
void jheap_free(jheap *h);
void ready_heap_free(ready_heap *h);
const char *engine_worker_intern(engine_t *e, const char *name);
void engine_worker_release(engine_t *e, const char *name);
void engine_ready_fix(engine_t *e, job *j, int64_t old_run_at);
void engine_stale_free(engine_t *e);
/* Pops the next scheduled job whose run_at has come, or NULL. */
job *engine_timer_due(engine_t *e, int64_t now);
/* The leased job whose deadline passed first (still in the heap), or NULL. */
job *engine_lease_due(engine_t *e, int64_t now);
bool engine_heap_check_jobs(const jheap *h, int kind); /* 1 timer, 2 lease, 3 waits */
/* Checks a node heap: live entries are ready jobs of the node, the rest are
 * marked stale; returns the live count or -1. */
long engine_heap_check_node(engine_t *e, node *n);
bool engine_heap_check_nodes(const heap *h);
bool engine_gheap_ordered(const gheap *h);
long engine_heap_check_entries(engine_t *e, node *n, const ready_heap *h, bool rising);

/* Ready order: higher priority first, then earlier run_at, packed into one
 * word (run_at below 2^48 ms, about 8,900 years). */
static inline uint64_t engine_pack_key(int priority, int64_t run_at)
{
    uint64_t run = run_at < 0 ? 0 : (uint64_t)run_at;
    if (run > 0xffffffffffffULL) run = 0xffffffffffffULL;
    return ((uint64_t)(ENGINE_PRIORITY_MAX - priority) << 48) | run;
}

/* A node's front among its ready jobs: its own heap's top, else its rising
 * heap's (aging.c); NULL when it has none.  Both tops are live. */
static inline const ready_entry *node_top(const node *n)
{
    return n->jobs.n ? &n->jobs.a[0] : n->rising.n ? &n->rising.a[0] : NULL;
}

/* ---- aging.c ---- */
/* The key j waits under in its node (the static key, or, while it rises,
 * its rank in `rising`: *rising true). */
uint64_t engine_heap_key(const job *j, bool *rising);
/* What j ranks as at `now` against jobs of other queues: its priority,
 * raised by its wait (ready_key's packing). */
uint64_t engine_aging_rank(const job *j, int64_t now);
/* n's first rising job changed: its place in e->aging. */
void engine_aging_watch(engine_t *e, node *n);
size_t engine_aging_tick(engine_t *e, int64_t now);
int64_t engine_aging_next(const engine_t *e);
/* q's aging settings changed: every ready job of q re-keyed. */
void engine_aging_rekey(engine_t *e, queue *q);
bool engine_aging_check(engine_t *e, char *why, size_t len);
/* sched.c's ready heaps, for aging.c */
void engine_ready_entry_push(engine_t *e, ready_heap *h, ready_entry x);
void engine_ready_entry_pop(ready_heap *h);
bool engine_stale_take(engine_t *e, uint64_t id, uint64_t k);
void engine_node_prune(engine_t *e, node *n);
bool engine_heap_check_shards(const heap *h);
int engine_dead_cmp_id(const avl_node *a, const avl_node *b);
int engine_dead_cmp_fin(const avl_node *a, const avl_node *b);
int engine_dead_cmp_tid(const avl_node *a, const avl_node *b);
int engine_dead_cmp_tfin(const avl_node *a, const avl_node *b);

/* ---- job life (jobs.c) */
/* Ends a job in a final state: out of every index but the id table, onto
 * the graveyard. */
void engine_finish(engine_t *e, job *j, engine_state s, int64_t now);
void engine_uniq_remove(engine_t *e, job *j);
void engine_uniq_add(engine_t *e, job *j);
int64_t engine_backoff_ms(engine_t *e, const queue *q, uint32_t attempt);
/* A lease's deadline from now: the queue's lease length, cut at the
 * attempt's timeout (the job's, else its queue's; counted from leased_at). */
int64_t engine_lease_deadline(const job *j, int64_t now);
/* Payload vectors. */
void engine_payload_add(engine_t *e, payload_vec *pv, double score, const char *data, uint32_t len);
void engine_payload_free(engine_t *e, payload_vec *pv);
void engine_payload_move_all(engine_t *e, payload_vec *to, payload_vec *from);
void engine_ensure_payloads(engine_t *e, job *j);
/* A submit (or requeue) into this lane may join its tail job. */
bool engine_can_merge_into(const job *tail, const node *home);
job *engine_job_alloc(engine_t *e, uint64_t id, node *home, const char *args, uint32_t args_len);
void engine_job_free(engine_t *e, job *j);
uint64_t engine_take_id(engine_t *e);

/* ---- quotas (quota.c) */
static inline bool state_unfinished(engine_state s)
{
    return s < ENGINE_DEAD;
}
/* Bytes of a job's args, or of its payloads on a merging queue: what the
 * quotas count. */
uint64_t engine_job_data_bytes(const struct engine_job *j);
/* The job's data changed from `before` bytes (a payload joined or left it):
 * an unfinished job's tenant, queue and pair count the difference. */
void engine_job_data_changed(engine_t *e, struct engine_job *j, uint64_t before);
/* engine_set_state's part: a job entering or leaving the unfinished states
 * adds or takes its bytes. */
void engine_quota_moved(engine_t *e, struct engine_job *j, engine_state old, engine_state s);

/* ---- args out of memory (args.c) */
/* Whether a new job's args of len bytes go out of memory (the budget). */
bool engine_args_spill(engine_t *e, const node *home, uint32_t len);
/* j was allocated spilled: keeps len; text (when given, outside a load)
 * stays in the cache, pinned until the job's row is collected. */
void engine_args_spilled(engine_t *e, struct engine_job *j, const char *text, uint32_t len);
uint32_t engine_args_spilled_len(const struct engine_job *j);
/* A spilled job's args in the cache, or NULL. */
const char *engine_args_cached(engine_t *e, const struct engine_job *j, uint32_t *len);
void engine_args_job_freed(engine_t *e, struct engine_job *j);
/* engine_changes_clear's part: the rows collected, their entries unpinned. */
void engine_args_changes_cleared(engine_t *e);
/* A node's front changed (leased: a lease took from it). */
void engine_args_node_busy(engine_t *e, node *n, bool leased);
/* A job was leased: its entry is the first to evict. */
void engine_args_consumed(engine_t *e, const struct engine_job *j);
void engine_args_free(engine_t *e);
/* For engine_check: the cache's memory as counted, checked against its
 * entries; false with why. */
bool engine_args_check(engine_t *e, size_t *mem, char *why, size_t len);
/* The bytes of args a job keeps inline (2 for a spilled one: its length's
 * room, as a blank job's "{}"). */
static inline size_t job_inline_len(const struct engine_job *j)
{
    return (j->flags & JF_ARGS_OUT) ? 2 : strlen(j->args);
}

/* ---- keyed limits (keys.c, key_rate.c, key_settings.c) */
/* Checks a submit's keys (fields named "concurrency_keys[i].key"...). */
int engine_keys_check(const engine_submit_req *r, engine_err *err);
/* The checks of a submit's keys against the settings of tenant t: a rate
 * key's cost above the burst its setting gives (t NULL: none yet). */
int engine_keys_check_settings(engine_t *e, const tenant *t, const engine_submit_req *r,
                               engine_err *err);
/* The group of `home` for a submit's keys (made on first use), its keys'
 * limits updated by what the submit says; home itself when it names none. */
node *engine_group_for(engine_t *e, int64_t now, node *home, const engine_queue_settings *qs,
                       const engine_limit_key *ck, uint32_t n_ck, const engine_rate_key *rk,
                       uint32_t n_rk);
/* A group no job points at any more (engine_node_unref's part). */
void engine_group_free(engine_t *e, node *g);
/* No job points to g: it waits, idle, for the next job of its keys (a key
 * that comes and goes makes no group nor key each time); the oldest idle
 * groups are freed past a bound. */
void engine_group_idle(engine_t *e, node *g);
/* A group's eligibility changed (ready jobs, keys' room): in or out of its
 * node's heap of groups, and the node's place after it. */
void engine_group_update(engine_t *e, node *g);
/* A job took a slot or gave it back: its concurrency keys count it. */
void engine_keys_take(engine_t *e, const struct engine_job *j);
void engine_keys_release(engine_t *e, const struct engine_job *j);
/* Why a ready job of a group waits: its first concurrency key at its
 * limit, or the rate key that closes its group. */
bool engine_keys_wait(engine_t *e, const struct engine_job *j, engine_wait *out);
void engine_keys_free(engine_t *e);
/* For engine_check: every key's and group's counts agree with the jobs;
 * the memory they take in *mem. */
bool engine_keys_check_all(engine_t *e, int64_t now, size_t *mem, char *why, size_t len);
/* Nodes and groups compare by their front job (and a fair queue's pass). */
bool engine_node_before(const node *a, const node *b);
tkey *engine_tkey_find(engine_t *e, const tenant *t, const char *key);
/* Reads a key's limits again (its settings, its jobs'): its groups follow. */
void engine_key_resolve(engine_t *e, int64_t now, tkey *k);
/* key_settings.c: the setting in force for a field of key (klen bytes)
 * of tenant t (its own, else the longest prefix's that sets it), or NULL. */
typedef enum { KEY_CONCURRENCY, KEY_RATE } engine_key_field;
const key_setting *engine_key_setting_for(engine_t *e, const tenant *t, const char *key,
                                          size_t klen, engine_key_field f);
bool engine_key_settings_sets(const engine_key_settings *s, engine_key_field f);
void engine_keys_changes_clear(engine_t *e);
void engine_key_settings_free(engine_t *e);
/* key_rate.c: a key's rate in force read again (true when it changed: its
 * groups must be worked out again, engine_key_rate_changed). */
bool engine_key_rate_resolve(engine_t *e, int64_t now, tkey *k);
void engine_key_rate_changed(engine_t *e, int64_t now, tkey *k);
/* When a group's rate keys allow its costs: closed until then, or open. */
void engine_group_rate_eval(engine_t *e, int64_t now, node *g);
/* A job started: its rate keys take its cost (their groups worked out
 * again). */
void engine_keys_rate_take(engine_t *e, int64_t now, const struct engine_job *j);
bool engine_keys_rate_wait(const struct engine_job *j, engine_wait *out);
/* A key no group names: kept (its timer) while its bucket is not full
 * (true), or to be freed; and named again. */
bool engine_key_rate_retire(engine_t *e, tkey *k);
void engine_key_rate_unretire(engine_t *e, tkey *k);
/* When a key's next start of one unit may come (ms; 0: now). */
int64_t engine_key_rate_until(const tkey *k, int64_t now);
bool engine_keys_rate_check(engine_t *e, int64_t now, const node *g, char *why, size_t len);
/* rate.c's timers of keys and groups came due. */
void engine_key_rate_opened(engine_t *e, tkey *k);
void engine_group_rate_opened(engine_t *e, node *g);

/* ---- expiry (expiry.c) and debounce (debounce.c) */
/* The job carries an expire_at (set in its extra): watched until then. */
void engine_expiry_watch(engine_t *e, struct engine_job *j);
/* Whether the job, not leased, has passed its expire_at (then ends it
 * `expired` and returns true). */
bool engine_expire_if_due(engine_t *e, struct engine_job *j, int64_t now);
size_t engine_expiry_tick(engine_t *e, int64_t now);
int64_t engine_expiry_next(const engine_t *e);
void engine_expiry_free(engine_t *e);
bool engine_expiry_check(engine_t *e, char *why, size_t len);
/* The checks of a submit's expiry and debounce fields. */
int engine_timing_check(int64_t now, const engine_submit_req *r, engine_err *err);
/* A debounced submit whose lane's tail is pending, debounced and of the
 * same node: takes its args (or payload) and moves its start; false when
 * the tail may not take it (a new job is made). */
bool engine_debounce_into(engine_t *e, int64_t now, struct engine_job *tail,
                          const engine_submit_req *r, const char *args, uint32_t args_len,
                          double score);
/* The job's args become these (inline or out of memory, as a new job's
 * by the budget): returns the job, moved when its allocation changed.
 * The job must be in no heap (scheduled or ready: unplaced first). */
struct engine_job *engine_job_set_args(engine_t *e, struct engine_job *j, const char *args,
                                       uint32_t len);
/* args.c: a spilled job's args are let go (its entry detached). */
void engine_args_forget(engine_t *e, struct engine_job *j);

/* ---- rate limits (rate.c) */
void engine_rate_init(rate_bucket *b, rb_kind kind);
/* Reads the bucket's limit from its owner's settings again (a new pair). */
void engine_rate_refresh(rate_bucket *b);
/* Whether the job's queue, tenant and pair allow a start now; those that do
 * not are closed (the job is then no longer a lease's candidate). */
bool engine_rate_allows(engine_t *e, int64_t now, const struct engine_job *j);
/* The job started: each of its limits counts it, closing when full. */
void engine_rate_take(engine_t *e, int64_t now, const struct engine_job *j);
/* A bucket's limit changed (had_limit: from another limit, not from none).
 * None opens it.  A limit loaded from the store is used up at the engine's
 * start (cfg.start_ms); one set from none in the engine's life begins full
 * (nothing started under it before); a changed one counts the starts made,
 * at most as a used-up bucket of it (so a faster rate opens sooner). */
void engine_rate_changed(engine_t *e, rate_bucket *b, int64_t now, bool had_limit);
/* Opens the buckets whose time came; when the next opens (INT64_MAX: none). */
size_t engine_rate_tick(engine_t *e, int64_t now);
/* A timer of keys.c (RB_KEY, RB_GROUP): set to until_ms, or cleared. */
void engine_rate_timer_set(engine_t *e, rate_bucket *b, int64_t until_ms);
void engine_rate_timer_clear(engine_t *e, rate_bucket *b);
int64_t engine_rate_next(const engine_t *e);
/* The bucket's place in the heap agrees with its state. */
bool engine_rate_check(const engine_t *e, const rate_bucket *b);

/* ---- attempt history (attempts.c) */
/* An attempt of j (leased or running, still holding its lease fields) ended
 * with this outcome and left the job in state `after`: noted as an
 * ENGINE_CH_ATTEMPT change holding a copy.  stats: the attempt's own (NULL:
 * none reported). */
void engine_attempt_ended(engine_t *e, const job *j, int64_t now, engine_attempt_outcome outcome,
                          engine_state after, const char *stats);
/* Frees the copies of engine_changes_clear's list. */
void engine_attempts_clear(engine_t *e);

/* ---- dependencies (deps.c) */
/* Checks a submit's depends_on (index refs already resolved into ids[]):
 * 0, or the refusal naming the field; *pending gets the parents unfinished. */
int engine_deps_check(engine_t *e, const tenant *t, const uint64_t *ids, uint32_t n,
                      engine_deps_policy policy, uint32_t *pending, engine_err *err);
/* Records the edges of a new job (ids checked and without repeats). */
void engine_deps_attach(engine_t *e, job *j, const uint64_t *ids, uint32_t n,
                        engine_deps_policy policy, uint32_t pending);
/* The job left the unfinished states (succeeded, cancelled, merged, dead):
 * its waiting children count it done or are cancelled, by their policy. */
void engine_deps_ended(engine_t *e, job *j, int64_t now);
/* The job came back from the morgue: its waiting children wait for it again. */
void engine_deps_requeued(engine_t *e, job *j);
/* A waiting job whose last parent ended goes on (its lane, its run_at). */
void engine_deps_release(engine_t *e, job *j, int64_t now);
void engine_deps_free(job_deps *d);
/* Whether a job may leave WAITING by itself: it is not waiting, or has
 * nothing pending. */
static inline bool job_waits_for_parents(const job *j)
{
    return j->extra && j->extra->deps && j->extra->deps->pending > 0;
}
/* For engine_check: the job's pending count agrees with its parents. */
bool engine_deps_consistent(engine_t *e, const job *j, char *why, size_t len);
/* ---- durable steps (steps.c) */
/* The job is parked (a sleep, a wait for an event or a child), not leased. */
static inline bool job_parked(const job *j)
{
    return j->extra && j->extra->steps && j->extra->steps->park != PARK_NONE;
}
/* A leased (or running) job under this token, or NULL with the refusal. */
job *engine_leased_job(engine_t *e, uint64_t id, uint64_t token, engine_err *err);
/* A lease of a job with steps: those stored before it are an earlier
 * attempt's; the job is no longer parked. */
void engine_steps_leased(engine_t *e, job *j);
/* The job left the unfinished states: a wait of its own ends (a child it
 * awaited is cancelled), and a job that awaited it goes on. */
void engine_steps_ended(engine_t *e, job *j, int64_t now);
/* Timeouts of waits for events that came; kept events past their window. */
size_t engine_steps_tick(engine_t *e, int64_t now);
int64_t engine_steps_next(const engine_t *e);
void engine_steps_free_job(engine_t *e, job_steps *s);
/* PARK_EVENT: the key waited for. */
const char *engine_steps_event_key(const job_steps *s);
void engine_steps_free(engine_t *e);
void engine_steps_changes_clear(engine_t *e);
/* What a job's steps take in memory (engine_check) and the events' table. */
size_t engine_steps_mem(const job_steps *s);
bool engine_steps_check(engine_t *e, size_t *mem, char *why, size_t len);
/* The waits heap (sched.c). */
void engine_wait_heap_push(engine_t *e, job *j, int64_t until);
void engine_wait_heap_remove(engine_t *e, job *j);
job *engine_wait_due(engine_t *e, int64_t now);

/* ---- batches (batches.c) */
/* A job of a batch moved from state `old` to `s` (ENGINE_NSTATES: deleted);
 * called by engine_set_state for jobs with a batch. */
void engine_batch_job_moved(engine_t *e, job *j, engine_state old, engine_state s);
/* Submits the callbacks that came due in this call (at the end of every
 * call that may finish or kill a job): a test of a count when none did. */
void engine_batches_settle_due(engine_t *e, int64_t now);
static inline void engine_batches_settle(engine_t *e, int64_t now)
{
    if (e->batch_due.n) engine_batches_settle_due(e, now);
}
void engine_batches_free(engine_t *e);
void engine_batches_changes_clear(engine_t *e);

/* ---- morgue (morgue.c) */
void engine_morgue_insert(engine_t *e, job *j);
void engine_morgue_remove(engine_t *e, job *j);
/* Sends a job to the morgue (merge rule: only the lowest-scored payload). */
void engine_kill(engine_t *e, job *j, int64_t now, const char *error);

/* ---- misc */
static inline uint64_t engine_rand(engine_t *e)
{
    uint64_t z = (e->rng += 0x9e3779b97f4a7c15ULL);
    return hash_u64(z);
}

#endif
