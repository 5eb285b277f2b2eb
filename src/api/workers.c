// SPDX-License-Identifier: Apache-2.0
/* Workers as the server sees them: each name a lease came from, when it
 * last asked and for which queues, how many jobs it was handed; and, from
 * the engine, the jobs it holds now.  GET /v1/workers. */
#include "workers.h"

#include "clock.h"
#include "handlers.h"
#include "jbuf.h"
#include "reply.h"
#include "server.h"

#include "base/hash.h"
#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORKERS_MAX      10000
#define WORKER_FORGET_MS (3600 * 1000) /* not seen for an hour, nothing in hand */

typedef struct worker_seen {
    uint64_t hash;
    char *name;
    char queues[256]; /* as the last lease named them, comma-separated */
    int64_t first_seen, last_seen;
    uint64_t leased_total;
    uint32_t in_hand; /* counted for an answer */
} worker_seen;

static const hash_key wkey = {0x776f726b, 0x657273};

static bool seen_eq(const void *item, const void *key)
{
    return strcmp(((const worker_seen *)item)->name, key) == 0;
}

static worker_seen *find(server *s, const char *name, bool create)
{
    uint64_t h = hash_bytes(&wkey, name, strlen(name));
    worker_seen *w = htab_find(&s->workers.by_name, h, seen_eq, name);
    if (w || !create || s->workers.by_name.len >= WORKERS_MAX) return w;
    w = xcalloc(1, sizeof(*w));
    w->hash = h;
    w->name = xstrdup(name);
    w->first_seen = srv_now(s);
    htab_insert(&s->workers.by_name, h, w);
    return w;
}

void workers_seen(server *s, const char *name, char *const *queues, size_t nq)
{
    worker_seen *w = find(s, name, true);
    if (!w) return;
    w->last_seen = srv_now(s);
    size_t at = 0;
    for (size_t i = 0; i < nq && at + 1 < sizeof w->queues; i++)
        at += (size_t)snprintf(w->queues + at, sizeof w->queues - at, "%s%s", i ? "," : "",
                               queues[i]);
    if (at >= sizeof w->queues) at = sizeof w->queues - 1;
    w->queues[at] = 0;
}

void workers_leased(server *s, const char *name, size_t n)
{
    worker_seen *w = find(s, name, false);
    if (w) w->leased_total += n;
}

static void count_in_hand(void *ctx, const char *worker, uint64_t id)
{
    (void)id;
    worker_seen *w = find(ctx, worker ? worker : "", false);
    if (w) w->in_hand++;
}

static int by_last_seen(const void *a, const void *b)
{
    const worker_seen *x = *(worker_seen *const *)a, *y = *(worker_seen *const *)b;
    return x->last_seen < y->last_seen ? 1 : x->last_seen > y->last_seen ? -1 : 0;
}

void h_workers(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    size_t cap = htab_cap(&s->workers.by_name), n = 0;
    worker_seen **v = xmalloc((cap + 1) * sizeof(*v));
    for (size_t i = 0; i < cap; i++)
        if (s->workers.by_name.slots[i].item) {
            v[n] = s->workers.by_name.slots[i].item;
            v[n++]->in_hand = 0;
        }
    engine_foreach_leased(s->e, count_in_hand, s);
    int64_t now = srv_now(s);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        worker_seen *w = v[i];
        if (w->in_hand == 0 && now - w->last_seen > WORKER_FORGET_MS) {
            htab_remove(&s->workers.by_name, w->hash, w);
            free(w->name);
            free(w);
        } else {
            v[k++] = w;
        }
    }
    qsort(v, k, sizeof(*v), by_last_seen);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "workers");
    jb_arr(&b);
    for (size_t i = 0; i < k; i++) {
        jb_obj(&b);
        jb_kstr(&b, "name", v[i]->name);
        jb_kstr(&b, "queues", v[i]->queues);
        jb_kint(&b, "first_seen", v[i]->first_seen);
        jb_kint(&b, "last_seen", v[i]->last_seen);
        jb_kint(&b, "in_hand", v[i]->in_hand);
        jb_kint(&b, "leased_total", (long long)v[i]->leased_total);
        jb_obj_end(&b);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    free(v);
    reply_json(req, 200, &b);
}

void workers_free(server *s)
{
    for (size_t i = 0; i < htab_cap(&s->workers.by_name); i++) {
        worker_seen *w = s->workers.by_name.slots[i].item;
        if (!w) continue;
        free(w->name);
        free(w);
    }
    htab_free(&s->workers.by_name);
}
