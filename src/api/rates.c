// SPDX-License-Identifier: Apache-2.0
/* Rates and counts as the API shows them: completed and failed jobs per
 * second over the last minute, sampled each second into a ring per queue,
 * per tenant and in all; and the counts of a queue or tenant as JSON. */
#include "rates.h"

#include "admit.h"
#include "clock.h"
#include "commit.h"
#include "history.h"
#include "server.h"
#include "serving.h"

#include "base/hash.h"
#include "base/xalloc.h"

#include <event2/event.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- rates: completed and failed per second over the last minute ----------------- */

static bool ring_eq(const void *item, const void *key)
{
    return strcmp(((const rate_ring *)item)->name, key) == 0;
}

static rate_ring *ring_get(server *s, bool queue, const char *name, bool create)
{
    htab *t = queue ? &s->rates.by_queue : &s->rates.by_tenant;
    uint64_t h =
        hash_u64(hash_combine(0, (uint64_t)strlen(name)) ^ (uint64_t)(unsigned char)name[0]);
    for (const char *p = name; *p; p++) h = hash_combine(h, (uint64_t)(unsigned char)*p);
    rate_ring *r = htab_find(t, h, ring_eq, name);
    if (r || !create) return r;
    r = xcalloc(1, sizeof(*r));
    r->hash = h;
    r->name = xstrdup(name);
    htab_insert(t, h, r);
    /* A queue or tenant first seen after start was born since the last
     * sample, at zero: without this, work done in its first second would
     * never show as a rate. */
    if (s->rates.samples > 0) r->filled = 1;
    return r;
}

static void ring_push(rate_ring *r, uint64_t ok, uint64_t bad)
{
    r->head = (r->head + 1) % 61;
    r->ok[r->head] = ok;
    r->bad[r->head] = bad;
    if (r->filled < 61) r->filled++;
}

static void sample_queue(void *ctx, const char *name, const engine_queue_settings *qs,
                         const engine_counts *c)
{
    (void)qs;
    ring_push(ring_get(ctx, true, name, true), c->succeeded_total, c->failed_total);
}

static void sample_tenant(void *ctx, const char *name, const engine_tenant_settings *ts,
                          const engine_counts *c)
{
    (void)ts;
    ring_push(ring_get(ctx, false, name, true), c->succeeded_total, c->failed_total);
}

void rates_sample(server *s)
{
    engine_foreach_queue(s->e, srv_now(s), sample_queue, s);
    engine_foreach_tenant(s->e, srv_now(s), sample_tenant, s);
    /* the totals: "" is no queue's name */
    engine_counts tot;
    engine_totals(s->e, srv_now(s), &tot);
    ring_push(ring_get(s, true, "", true), tot.succeeded_total, tot.failed_total);
    if (s->rates.samples % HISTORY_EVERY_S == 0) history_push(s, &tot);
    s->rates.samples++;
}

void rates_get(server *s, bool queue, const char *name, double *ok, double *bad)
{
    *ok = *bad = 0;
    rate_ring *r = ring_get(s, queue, name, false);
    if (!r || r->filled < 2) return;
    int span = r->filled - 1;
    int old = (r->head - span + 61) % 61;
    /* counters restart when the engine is rebuilt: never report negative */
    if (r->ok[r->head] >= r->ok[old]) *ok = (double)(r->ok[r->head] - r->ok[old]) / span;
    if (r->bad[r->head] >= r->bad[old]) *bad = (double)(r->bad[r->head] - r->bad[old]) / span;
}

void rates_free(server *s)
{
    htab *ts[2] = {&s->rates.by_queue, &s->rates.by_tenant};
    for (int k = 0; k < 2; k++) {
        for (size_t i = 0; i < htab_cap(ts[k]); i++) {
            rate_ring *r = ts[k]->slots[i].item;
            if (!r) continue;
            free(r->name);
            free(r);
        }
        htab_free(ts[k]);
    }
}

static void on_sample(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    rates_sample(s);
    /* what applications' transactions check their quotas against */
    if (srv_serving(s) && store_has_inbox(s->st) && admit_publish(&s->admit, s->e, s->commit.batch))
        srv_schedule_flush(s);
}

int srv_rates_start(server *s)
{
    s->rates.sample_ev = event_new(s->base, -1, EV_PERSIST, on_sample, s);
    struct timeval tv = {1, 0};
    if (!s->rates.sample_ev || event_add(s->rates.sample_ev, &tv) != 0) return -1;
    rates_sample(s);
    return 0;
}

/* ---- counts ----------------------------------------------------------------------- */

void api_json_counts(jbuf *b, const engine_counts *c, int64_t now)
{
#define COUNT_JSON_(name, word, abi, kind, finished, help)                                         \
    TENQ_STATE_IF_LIVE(kind, jb_kint(b, #word, (long long)c->word);)
    TENQ_STATE_TABLE(COUNT_JSON_)
#undef COUNT_JSON_
    jb_kint(b, "queued", (long long)c->queued);
    jb_kint(b, "queued_bytes", (long long)c->queued_bytes);
    jb_kint(b, "eligible", (long long)c->eligible);
    /* ready but held by a limit: slots, a cap, a pause, a rate */
    jb_kint(b, "held", (long long)(c->ready - c->eligible));
    if (c->rate_until) jb_kint(b, "rate_limited_until", c->rate_until);
    jb_kint(b, "lag_ms", c->oldest_eligible ? now - c->oldest_eligible : 0);
    jb_kint(b, "submitted_total", (long long)c->submitted_total);
    jb_kint(b, "succeeded_total", (long long)c->succeeded_total);
    jb_kint(b, "failed_total", (long long)c->failed_total);
    jb_kint(b, "dead_total", (long long)c->dead_total);
    jb_kint(b, "cancelled_total", (long long)c->cancelled_total);
    jb_kint(b, "expired_total", (long long)c->expired_total);
}

void api_json_rates(jbuf *b, server *s, bool queue, const char *name)
{
    double ok, bad;
    rates_get(s, queue, name, &ok, &bad);
    jb_key(b, "completed_per_s");
    jb_num(b, round(ok * 100) / 100);
    jb_key(b, "failed_per_s");
    jb_num(b, round(bad * 100) / 100);
}
