// SPDX-License-Identifier: Apache-2.0
/* Periodic jobs: the leader's schedules and their ticks (docs/SEMANTICS.md,
 * "Periodic jobs").
 *
 * Schedules live in the store (table schedules) and, while this server
 * leads, here: by name, and the active ones in a heap by their next tick,
 * with one timer for the heap's top.  A tick submits the schedule's job
 * with engine_submit like any submit, its idempotency key
 * "cron:<name>:<tick ms>", and writes the schedule's next_tick (and
 * last_tick) into the batch being built, so the job and the schedule's
 * progress commit in one transaction: a tick is either submitted and
 * passed, or neither.  A failed commit, a takeover or a restart loads the
 * schedules again from the store (srv_cron_install, with the engine), and
 * the ticks due meanwhile are missed ticks, which the schedule's policy
 * makes up or not.  The engine knows nothing of schedules: 100,000 of them
 * cost it nothing. */
#include "cron.h"

#include "admit.h"
#include "api.h"
#include "clock.h"
#include "commit.h"
#include "server.h"
#include "serving.h"

#include "base/hash.h"
#include "base/heap.h"
#include "base/xalloc.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cron_set {
    htab by_name; /* schedule */
    heap due;     /* active schedules by next_tick */
    htab zones;   /* tq_zone by name, read once, kept until exit */
    struct event *timer;
    uint64_t ticks, refused; /* jobs submitted by ticks, ticks the engine refused */
};

static const hash_key name_key = {0x63726f6e6e616d65ULL, 0x7363686564756c65ULL};

static uint64_t name_hash(const char *name)
{
    return hash_bytes(&name_key, name, strlen(name));
}

static bool sched_eq(const void *item, const void *key)
{
    return strcmp(((const schedule *)item)->name, key) == 0;
}

static bool zone_eq(const void *item, const void *key)
{
    return strcmp(tq_zone_name(item), key) == 0;
}

static bool sched_less(const schedule *a, const schedule *b)
{
    return a->next_tick < b->next_tick || (a->next_tick == b->next_tick && a < b);
}
HEAP_DEFINE(sheap, schedule, hidx, sched_less)

const char *const cron_missed_words[] = {"skip", "once", "each", NULL};

int cron_missed_parse(const char *w)
{
    for (int i = 0; cron_missed_words[i]; i++)
        if (strcmp(w, cron_missed_words[i]) == 0) return i;
    return -1;
}

void cron_schedule_free(schedule *x)
{
    if (!x) return;
    free(x->name);
    free(x->tenant);
    free(x->cron_text);
    free(x->timezone);
    free(x->queue);
    free(x->type);
    free(x->args);
    free(x->key);
    free(x->unique_key);
    free(x->last_error);
    free(x);
}

/* ---- zones and expressions -------------------------------------------------------- */

const tq_zone *srv_cron_zone(server *s, const char *name, char *err, size_t errlen)
{
    cron_set *c = s->cron;
    uint64_t h = name_hash(name);
    tq_zone *z = htab_find(&c->zones, h, zone_eq, name);
    if (z) return z;
    z = tq_zone_load(name, NULL, err, errlen);
    if (z && htab_insert(&c->zones, h, z) != 0) abort();
    return z;
}

int cron_compile(server *s, schedule *x, char *err, size_t errlen)
{
    char why[300];
    if (tq_cron_parse(x->cron_text, &x->cron, why, sizeof why) != 0) {
        snprintf(err, errlen, "cron: %s", why);
        return -1;
    }
    if (!(x->zone = srv_cron_zone(s, x->timezone, why, sizeof why))) {
        snprintf(err, errlen, "timezone: %s", why);
        return -1;
    }
    return 0;
}

int64_t cron_next(const schedule *x, int64_t after)
{
    return tq_cron_next(&x->cron, x->zone, after);
}

/* The last `max` ticks (at most CRON_EACH_MAX + 1) from `from` to `now`,
 * oldest first, into out; how many.  A window back from now that grows
 * until it holds max ticks or reaches `from`, so a schedule stopped for a
 * year costs about as much as one stopped for a day. */
static size_t due_ticks(const schedule *x, int64_t from, int64_t now, size_t max, int64_t *out)
{
    if (max == 0 || from > now) return 0;
    if (x->cron.every_ms) {
        int64_t p = x->cron.every_ms, last = now / p * p, first = (from + p - 1) / p * p;
        if (first > last) return 0;
        int64_t k = (last - first) / p + 1;
        if (k > (int64_t)max) k = (int64_t)max;
        for (int64_t i = 0; i < k; i++) out[i] = last - (k - 1 - i) * p;
        return (size_t)k;
    }
    int64_t ring[CRON_EACH_MAX + 1], w = (int64_t)max * 60000;
    size_t n;
    for (;;) {
        int64_t lo = now - w < from ? from : now - w;
        n = 0;
        for (int64_t t = cron_next(x, lo - 1); t >= 0 && t <= now; t = cron_next(x, t))
            ring[n++ % max] = t;
        if (n >= max || lo == from) break;
        w *= 4;
    }
    size_t k = n < max ? n : max;
    for (size_t i = 0; i < k; i++) out[i] = ring[(n - k + i) % max];
    return k;
}

/* ---- the set ------------------------------------------------------------------------- */

#define RETRY_MS 100 /* while the leadership is not certain: look again this soon */

/* The timer for the heap's top (while leading: ticks wait, while the
 * leadership is not certain, in on_timer). */
static void arm_in(server *s, int64_t ms)
{
    cron_set *c = s->cron;
    if (!sheap_top(&c->due) || !s->lead.leading || s->stopping) {
        evtimer_del(c->timer);
        return;
    }
    if (ms < 0) ms = 0;
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)(ms % 1000 * 1000)};
    evtimer_add(c->timer, &tv);
}

static void arm(server *s)
{
    schedule *top = sheap_top(&s->cron->due);
    arm_in(s, top ? top->next_tick - srv_now(s) : 0);
}

/* Submits one tick's job: whether the engine took it (a duplicate or a
 * replay of the tick's key counts: the tick has its job). */
static bool submit_tick(server *s, schedule *x, int64_t tick, int64_t now)
{
    char ikey[ENGINE_NAME_MAX + 40];
    snprintf(ikey, sizeof ikey, "cron:%s:%lld", x->name, (long long)tick);
    engine_submit_req r = {
        .tenant = x->tenant,
        .queue = x->queue,
        .type = x->type,
        .key = x->key,
        .args = x->args,
        .args_len = (uint32_t)strlen(x->args),
        .has_priority = true,
        .priority = x->priority,
        .unique_key = x->unique_key,
        .unique = x->unique,
        .idempotency_key = ikey,
        .max_attempts = x->max_attempts,
        .timeout_ms = x->timeout_ms,
    };
    engine_submit_res res = {0};
    if ((res.code = admit_check(&s->admit, s->e, &r, NULL, 1, &res.err)) != 0 ||
        engine_submit(s->e, now, &r, &res) != 0) {
        s->cron->refused++;
        free(x->last_error);
        char msg[700];
        snprintf(msg, sizeof msg, "tick %lld refused: %s", (long long)tick, res.err.message);
        x->last_error = xstrdup(msg);
        log_event(LOG_WARN, "cron", "schedule %s: %s", x->name, msg);
        return false;
    }
    s->cron->ticks++;
    x->last_job = res.id;
    free(x->last_error);
    x->last_error = NULL;
    return true;
}

/* Submits what is due up to now and moves next_tick past now, writing the
 * schedule's progress into the batch being built.  Missed ticks are those
 * due before the latest, or every due one when catching up (after a load,
 * or a resume): the policy keeps none (skip), the latest (once) or the
 * latest CRON_EACH_MAX (each). */
static void fire(server *s, schedule *x, int64_t now, bool catchup)
{
    if (x->next_tick > now) return;
    size_t keep = x->missed == MISSED_EACH ? CRON_EACH_MAX : x->missed == MISSED_ONCE ? 1 : 0;
    int64_t ticks[CRON_EACH_MAX + 1];
    size_t n = due_ticks(x, x->next_tick, now, catchup ? keep : keep + 1, ticks);
    for (size_t i = 0; i < n; i++)
        if (submit_tick(s, x, ticks[i], now)) x->last_tick = ticks[i];
    int64_t next = cron_next(x, now);
    x->next_tick = next < 0 ? INT64_MAX : next;
    store_batch_schedule_tick(s->commit.batch, x->name, x->last_tick, x->next_tick);
}

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    cron_set *c = s->cron;
    if (s->stopping) return;
    if (!srv_serving(s)) {
        /* not certain now (a late renewal, a reload): no tick may be
         * written; a reload installs the schedules again anyway */
        arm_in(s, RETRY_MS);
        return;
    }
    int64_t now = srv_now(s);
    bool any = false;
    schedule *x;
    while ((x = sheap_top(&c->due)) && x->next_tick <= now) {
        fire(s, x, now, false);
        sheap_fix(&c->due, x);
        any = true;
    }
    if (any) srv_collect(s);
    arm(s);
}

int srv_cron_start(server *s)
{
    s->cron = xcalloc(1, sizeof(cron_set));
    s->cron->timer = evtimer_new(s->base, on_timer, s);
    return s->cron->timer ? 0 : -1;
}

void srv_cron_clear(server *s)
{
    cron_set *c = s->cron;
    if (!c) return;
    for (size_t i = 0; i < htab_cap(&c->by_name); i++)
        if (c->by_name.slots[i].item) cron_schedule_free(c->by_name.slots[i].item);
    htab_free(&c->by_name);
    heap_free(&c->due);
    evtimer_del(c->timer);
}

void srv_cron_free(server *s)
{
    cron_set *c = s->cron;
    if (!c) return;
    srv_cron_clear(s);
    for (size_t i = 0; i < htab_cap(&c->zones); i++)
        if (c->zones.slots[i].item) tq_zone_free(c->zones.slots[i].item);
    htab_free(&c->zones);
    if (c->timer) event_free(c->timer);
    free(c);
    s->cron = NULL;
}

schedule *srv_cron_find(server *s, const char *name)
{
    return htab_find(&s->cron->by_name, name_hash(name), sched_eq, name);
}

size_t srv_cron_all(server *s, schedule ***out)
{
    cron_set *c = s->cron;
    schedule **v = xcalloc(c->by_name.len + 1, sizeof(*v));
    size_t n = 0;
    for (size_t i = 0; i < htab_cap(&c->by_name); i++)
        if (c->by_name.slots[i].item) v[n++] = c->by_name.slots[i].item;
    *out = v;
    return n;
}

void srv_cron_counters(server *s, size_t *schedules, uint64_t *ticks, uint64_t *refused)
{
    *schedules = s->cron->by_name.len;
    *ticks = s->cron->ticks;
    *refused = s->cron->refused;
}

static store_schedule row_of(const schedule *x)
{
    return (store_schedule){
        .name = x->name,
        .tenant = x->tenant,
        .cron = x->cron_text,
        .timezone = x->timezone,
        .missed = cron_missed_words[x->missed],
        .queue = x->queue,
        .type = x->type,
        .args = x->args,
        .key = x->key,
        .unique_key = x->unique_key,
        .priority = x->priority,
        .max_attempts = x->max_attempts,
        .unique = x->unique,
        .paused = x->paused,
        .timeout_ms = x->timeout_ms,
        .last_tick = x->last_tick,
        .next_tick = x->next_tick,
        .created_at = x->created_at,
        .updated_at = x->updated_at,
    };
}

static void write_row(server *s, const schedule *x)
{
    store_schedule row = row_of(x);
    store_batch_schedule(s->commit.batch, &row);
}

void srv_cron_put(server *s, schedule *x, int64_t now)
{
    cron_set *c = s->cron;
    schedule *old = srv_cron_find(s, x->name);
    x->created_at = old ? old->created_at : now;
    x->updated_at = now;
    x->last_tick = old ? old->last_tick : 0;
    int64_t next = cron_next(x, now);
    x->next_tick = next < 0 ? INT64_MAX : next;
    x->hidx = HEAP_NONE;
    if (old) {
        if (old->hidx != HEAP_NONE) sheap_remove(&c->due, old);
        htab_remove(&c->by_name, name_hash(old->name), old);
        cron_schedule_free(old);
    }
    if (htab_insert(&c->by_name, name_hash(x->name), x) != 0) abort();
    if (!x->paused) sheap_push(&c->due, x);
    write_row(s, x);
    arm(s);
}

void srv_cron_delete(server *s, schedule *x)
{
    cron_set *c = s->cron;
    store_batch_schedule_delete(s->commit.batch, x->name);
    if (x->hidx != HEAP_NONE) sheap_remove(&c->due, x);
    htab_remove(&c->by_name, name_hash(x->name), x);
    cron_schedule_free(x);
    arm(s);
}

void srv_cron_pause(server *s, schedule *x, bool paused, int64_t now)
{
    cron_set *c = s->cron;
    if (x->paused == paused || x->broken) return;
    x->paused = paused;
    x->updated_at = now;
    if (paused) {
        sheap_remove(&c->due, x);
    } else {
        fire(s, x, now, true); /* the ticks missed while paused, by the policy */
        sheap_push(&c->due, x);
    }
    write_row(s, x);
    arm(s);
}

/* ---- loads ---------------------------------------------------------------------------- */

typedef struct cron_load {
    store_schedule *v;
    size_t n, cap;
} cron_load;

void *cron_load_new(void)
{
    return xcalloc(1, sizeof(cron_load));
}

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

void cron_collect(void *ctx, const store_schedule *x)
{
    cron_load *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
    }
    store_schedule *c = &l->v[l->n++];
    *c = *x;
    c->name = xstrdup(x->name);
    c->tenant = xstrdup(x->tenant);
    c->cron = xstrdup(x->cron);
    c->timezone = xstrdup(x->timezone);
    c->missed = xstrdup(x->missed);
    c->queue = xstrdup(x->queue);
    c->type = xstrdup(x->type);
    c->args = xstrdup(x->args);
    c->key = dup_or_null(x->key);
    c->unique_key = dup_or_null(x->unique_key);
}

void cron_load_free(void *loaded)
{
    cron_load *l = loaded;
    if (!l) return;
    for (size_t i = 0; i < l->n; i++) {
        store_schedule *c = &l->v[i];
        free((char *)c->name);
        free((char *)c->tenant);
        free((char *)c->cron);
        free((char *)c->timezone);
        free((char *)c->missed);
        free((char *)c->queue);
        free((char *)c->type);
        free((char *)c->args);
        free((char *)c->key);
        free((char *)c->unique_key);
    }
    free(l->v);
    free(l);
}

/* A loaded row as a schedule (its strings taken from the row). */
static schedule *from_row(store_schedule *r)
{
    schedule *x = xcalloc(1, sizeof(*x));
    x->name = (char *)r->name;
    x->tenant = (char *)r->tenant;
    x->cron_text = (char *)r->cron;
    x->timezone = (char *)r->timezone;
    x->queue = (char *)r->queue;
    x->type = (char *)r->type;
    x->args = (char *)r->args;
    x->key = (char *)r->key;
    x->unique_key = (char *)r->unique_key;
    int m = cron_missed_parse(r->missed);
    x->missed = m < 0 ? MISSED_SKIP : (cron_missed)m;
    free((char *)r->missed);
    memset(r, 0, sizeof(*r)); /* the strings are the schedule's now */
    return x;
}

void srv_cron_install(server *s, void *loaded)
{
    cron_load *l = loaded;
    srv_cron_clear(s);
    int64_t now = srv_now(s);
    cron_set *c = s->cron;
    size_t due = 0;
    for (size_t i = 0; l && i < l->n; i++) {
        store_schedule r = l->v[i];
        schedule *x = from_row(&l->v[i]);
        x->priority = r.priority;
        x->max_attempts = r.max_attempts;
        x->unique = r.unique;
        x->paused = r.paused;
        x->timeout_ms = r.timeout_ms;
        x->last_tick = r.last_tick;
        x->next_tick = r.next_tick;
        x->created_at = r.created_at;
        x->updated_at = r.updated_at;
        x->hidx = HEAP_NONE;
        char err[400];
        if (cron_compile(s, x, err, sizeof err) != 0) {
            /* a zone gone from the system since: kept, never ticks */
            x->broken = true;
            x->last_error = xstrdup(err);
            log_event(LOG_ERROR, "cron", "schedule %s does not tick: %s", x->name, err);
        }
        if (htab_insert(&c->by_name, name_hash(x->name), x) != 0) abort();
        if (x->paused || x->broken) continue;
        if (x->next_tick <= now) {
            fire(s, x, now, true);
            due++;
        }
        sheap_push(&c->due, x);
    }
    cron_load_free(l);
    if (due) srv_collect(s);
    if (c->by_name.len)
        log_event(LOG_INFO, "cron", "schedules=%zu caught_up=%zu", c->by_name.len, due);
    arm(s);
}
