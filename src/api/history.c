// SPDX-License-Identifier: Apache-2.0
/* The last hour of throughput and depth, kept by the server: every 10 s the
 * totals (rates_sample calls history_push), in a ring; GET /v1/stats/history
 * answers it, each sample's rates from the counters of the one before. */
#include "history.h"

#include "clock.h"
#include "handlers.h"
#include "jbuf.h"
#include "reply.h"
#include "server.h"

void history_push(server *s, const engine_counts *c)
{
    s->history.head = (s->history.head + 1) % HISTORY_N;
    history_sample *h = &s->history.v[s->history.head];
    h->t = srv_now(s);
    h->succeeded = c->succeeded_total;
    h->failed = c->failed_total;
#define HISTORY_PUSH_(name, word, abi, kind, finished, help)                                       \
    TENQ_STATE_IF_LIVE(kind, h->word = c->word;)
    TENQ_STATE_TABLE(HISTORY_PUSH_)
#undef HISTORY_PUSH_
    if (s->history.n < HISTORY_N) s->history.n++;
}

/* Per second between two samples; 0 when the counter went back (a reload
 * rebuilds the engine and its counters). */
static double per_s(uint64_t now, uint64_t before, int64_t ms)
{
    return now >= before && ms > 0 ? (double)(now - before) * 1000.0 / (double)ms : 0;
}

void h_stats_history(server *s, http_req *req, const principal *who, const char **args)
{
    (void)who;
    (void)args;
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "interval_ms", HISTORY_EVERY_S * 1000);
    jb_key(&b, "samples");
    jb_arr(&b);
    /* oldest first; the oldest has no sample before it: its rates are null */
    for (int i = s->history.n - 1; i >= 0; i--) {
        const history_sample *h = &s->history.v[(s->history.head - i + HISTORY_N) % HISTORY_N];
        const history_sample *p = &s->history.v[(s->history.head - i - 1 + HISTORY_N) % HISTORY_N];
        bool first = i == s->history.n - 1;
        jb_obj(&b);
        jb_kint(&b, "t", h->t);
        jb_key(&b, "completed");
        if (first)
            jb_null(&b);
        else
            jb_num(&b, per_s(h->succeeded, p->succeeded, h->t - p->t));
        jb_key(&b, "failed");
        if (first)
            jb_null(&b);
        else
            jb_num(&b, per_s(h->failed, p->failed, h->t - p->t));
#define HISTORY_JSON_(name, word, abi, kind, finished, help)                                       \
    TENQ_STATE_IF_LIVE(kind, jb_kint(&b, #word, (long long)h->word);)
        TENQ_STATE_TABLE(HISTORY_JSON_)
#undef HISTORY_JSON_
        jb_kint(&b, "inflight", (long long)(h->leased + h->running));
        jb_obj_end(&b);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    reply_json(req, 200, &b);
}
