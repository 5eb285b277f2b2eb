// SPDX-License-Identifier: Apache-2.0
/* Expiry (docs/SEMANTICS.md, "Expiry"): a job with an expire_at is never
 * leased at or after it; one not leased by then (ready, scheduled, blocked
 * behind its lane, waiting for its parents, or waiting for a retry) ends in
 * the final state `expired`, counted and kept as any finished job.
 *
 * The jobs that may expire are watched in one heap of (expire_at, id),
 * kept lazily: an entry whose job has left, been leased or finished is
 * dropped when it surfaces (a job leased at its time and retried later is
 * watched again by the retry).  engine_tick expires what came due, and a
 * lease that finds a job past its time expires it instead of handing it
 * out, so that no tick's lateness ever lets one run. */
#include "internal.h"

static inline bool x_less(const ready_entry *a, const ready_entry *b)
{
    return a->k < b->k || (a->k == b->k && a->id < b->id);
}

static void x_push(ready_heap *h, ready_entry x)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 16;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(ready_entry));
    }
    uint32_t i = h->n++;
    while (i > 0 && x_less(&x, &h->a[(i - 1) / 2])) {
        h->a[i] = h->a[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->a[i] = x;
}

static void x_pop(ready_heap *h)
{
    ready_entry x = h->a[--h->n];
    uint32_t i = 0;
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && x_less(&h->a[c + 1], &h->a[c])) c++;
        if (!x_less(&h->a[c], &x)) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n) h->a[i] = x;
    if (h->cap > 64 && h->n < h->cap / 4) {
        h->cap /= 2;
        h->a = xrealloc(h->a, (size_t)h->cap * sizeof(ready_entry));
    }
}

void engine_expiry_watch(engine_t *e, job *j)
{
    x_push(&e->expiry, (ready_entry){(uint64_t)j->extra->expire_at, j->id});
}

static bool may_expire(const job *j)
{
    return j->state <= ENGINE_READY; /* scheduled, blocked, waiting, ready */
}

bool engine_expire_if_due(engine_t *e, job *j, int64_t now)
{
    if (!j->extra || !j->extra->expire_at || now < j->extra->expire_at || !may_expire(j))
        return false;
    char why[96];
    snprintf(why, sizeof why, "expired: not started by its expire_at (%lld)",
             (long long)j->extra->expire_at);
    free(j->extra->error);
    j->extra->error = xstrdup(why);
    engine_finish(e, j, ENGINE_EXPIRED, now);
    return true;
}

size_t engine_expiry_tick(engine_t *e, int64_t now)
{
    size_t n = 0;
    ready_heap *h = &e->expiry;
    while (h->n && (int64_t)h->a[0].k <= now) {
        ready_entry x = h->a[0];
        x_pop(h);
        job *j = engine_job_find(e, x.id);
        /* an entry whose job moved on (leased, finished, or watched again
         * at another time) is dropped */
        if (j && j->extra && (uint64_t)j->extra->expire_at == x.k)
            n += engine_expire_if_due(e, j, now);
    }
    return n;
}

int64_t engine_expiry_next(const engine_t *e)
{
    return e->expiry.n ? (int64_t)e->expiry.a[0].k : INT64_MAX;
}

void engine_expiry_free(engine_t *e)
{
    free(e->expiry.a);
    memset(&e->expiry, 0, sizeof(e->expiry));
}

typedef struct watched {
    uint64_t id, k;
} watched;

static bool watched_eq(const void *item, const void *key)
{
    const watched *a = item, *b = key;
    return a->id == b->id && a->k == b->k;
}

static void collect(void *ctx, uint64_t id, void *item)
{
    (void)id;
    ptr_vec_push(ctx, item);
}

bool engine_expiry_check(engine_t *e, char *why, size_t len)
{
    htab set = {0};
    watched *w = xcalloc(e->expiry.n + 1, sizeof(*w));
    for (uint32_t i = 0; i < e->expiry.n; i++) {
        w[i] = (watched){e->expiry.a[i].id, e->expiry.a[i].k};
        if (i > 0 && x_less(&e->expiry.a[i], &e->expiry.a[(i - 1) / 2])) {
            snprintf(why, len, "the expiry heap is out of order");
            free(w);
            htab_free(&set);
            return false;
        }
        htab_insert(&set, hash_u64(w[i].id ^ hash_u64(w[i].k)), &w[i]);
    }
    ptr_vec all = {0};
    idtab_foreach(&e->jobs, collect, &all);
    bool ok = true;
    for (size_t i = 0; i < all.n && ok; i++) {
        const job *j = all.v[i];
        if (!j->extra || !j->extra->expire_at || !may_expire(j)) continue;
        watched key = {j->id, (uint64_t)j->extra->expire_at};
        if (!htab_find(&set, hash_u64(key.id ^ hash_u64(key.k)), watched_eq, &key)) {
            snprintf(why, len, "%s job %llu may expire but is not watched",
                     engine_state_name((engine_state)j->state), (unsigned long long)j->id);
            ok = false;
        }
    }
    free(all.v);
    free(w);
    htab_free(&set);
    return ok;
}

/* ---- the checks of a submit --------------------------------------------------- */

int engine_timing_check(int64_t now, const engine_submit_req *r, engine_err *err)
{
    if (r->expire_at && r->start_within_ms) {
        engine_errf(err, TENQ_EINVALID, "start_within_ms",
                    "give expire_at or start_within_ms, not both");
        return TENQ_EINVALID;
    }
    if (r->expire_at < 0 || r->expire_at > now + ENGINE_RUN_AT_HORIZON_MS) {
        engine_errf(err, TENQ_EINVALID, "expire_at",
                    "expire_at must be milliseconds since the epoch, at most 10 years ahead");
        return TENQ_EINVALID;
    }
    if (r->start_within_ms < 0 || r->start_within_ms > ENGINE_RUN_AT_HORIZON_MS) {
        engine_errf(err, TENQ_EINVALID, "start_within_ms",
                    "start_within_ms must be from 1 ms to 10 years");
        return TENQ_EINVALID;
    }
    if (r->debounce_ms < 0 || r->debounce_ms > TQ_DAY_MS) {
        engine_errf(err, TENQ_EINVALID, "debounce_ms", "debounce_ms must be from 1 ms to a day");
        return TENQ_EINVALID;
    }
    if (r->debounce_max_ms &&
        (r->debounce_max_ms < r->debounce_ms || r->debounce_max_ms > 7 * TQ_DAY_MS)) {
        engine_errf(err, TENQ_EINVALID, "debounce_max_ms",
                    "debounce_max_ms must be from debounce_ms to 7 days, or 0 for none");
        return TENQ_EINVALID;
    }
    if (r->debounce_max_ms && !r->debounce_ms) {
        engine_errf(err, TENQ_EINVALID, "debounce_ms", "debounce_max_ms needs debounce_ms");
        return TENQ_EINVALID;
    }
    if (r->debounce_ms && !r->key) {
        engine_errf(err, TENQ_EINVALID, "debounce_ms",
                    "debounce_ms needs a key: the pending job of the key's lane is the one a "
                    "later submit replaces");
        return TENQ_EINVALID;
    }
    if (r->debounce_ms && r->n_depends_on) {
        engine_errf(err, TENQ_EINVALID, "debounce_ms",
                    "a debounced job may not depend on others (depends_on)");
        return TENQ_EINVALID;
    }
    return 0;
}
