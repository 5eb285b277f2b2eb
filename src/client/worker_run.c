// SPDX-License-Identifier: Apache-2.0
/* The worker's runner threads: each takes queued tasks and runs their
 * handlers. */
#include "internal.h"
#include "base/clock.h"
#include "worker_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const wk_handler *handler_for(const tenq_worker *w, const char *type)
{
    for (size_t i = 0; i < w->nhandlers; i++)
        if (w->handlers[i].type && type && !strcmp(w->handlers[i].type, type))
            return &w->handlers[i];
    return w->any;
}

/* Makes the result safe to send: a result that is not JSON and an error
 * that is not UTF-8 would make the server refuse the whole batch.  (Stats
 * were checked when the handler set them: tenq_task_stats.) */
static void check_result(tenq_task *t)
{
    tenq_result *r = &t->res;
    if (r->parked && !t->parked) { /* tenq_result_parked() without a step that parked */
        *r = tenq_result_fail("the handler returned tenq_result_parked() but no step parked "
                              "the job",
                              TENQ_RETRY_BACKOFF);
    }
    if (r->ok && r->result_json) {
        if (!tq_scan_valid(r->result_json, strlen(r->result_json))) {
            free(r->result_json);
            *r = tenq_result_fail("invalid result JSON: the handler's result is not one JSON value",
                                  TENQ_RETRY_BACKOFF);
        }
    }
    if (!r->ok && r->error) {
        char *fixed = tq_utf8_fix(r->error, strlen(r->error));
        if (fixed) {
            free(r->error);
            r->error = fixed;
        }
    }
}

void *wk_runner_main(void *arg)
{
    wk_runner_arg *a = arg;
    tenq_worker *w = a->w;
    int fd = w->slot_fds[a->slot];
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->ready.head && !(w->stopping && w->leaser_done))
            pthread_cond_wait(&w->cv_run, &w->mu);
        tenq_task *t = wk_queue_pop(&w->ready);
        if (!t) break;
        t->state = TK_RUNNING;
        t->slot = a->slot;
        t->began_ms = tq_mono_ms();
        w->nrunning++;
        /* the reporter tells the server it began, if it runs long enough */
        if (w->report_wake > t->began_ms + WK_START_AFTER_MS) pthread_cond_signal(&w->cv_report);
        if (w->past_grace) wk_task_stop(t, TENQ_STOP_SHUTDOWN);
        pthread_mutex_unlock(&w->mu);

        /* a stop meant for the slot's previous task must not reach this one */
        uint64_t v;
        while (read(fd, &v, sizeof v) > 0) continue;
        if (atomic_load(&t->stop) != TENQ_STOP_NONE) {
            v = 1;
            if (write(fd, &v, sizeof v) < 0) (void)0;
        }
        const wk_handler *h = handler_for(w, t->job.type);
        if (h) {
            t->res = h->fn(t, h->ctx);
        } else {
            char msg[200];
            snprintf(msg, sizeof msg, "no handler for type %.150s", t->job.type);
            t->res = tenq_result_fail(msg, TENQ_RETRY_BACKOFF);
        }
        check_result(t);

        pthread_mutex_lock(&w->mu);
        t->state = TK_DONE;
        t->ended_ms = tq_mono_ms();
        w->nrunning--;
        wk_queue_push(&w->done, t);
        if (w->report_wake) pthread_cond_signal(&w->cv_report);
        /* wake the leaser only when it has what it waits for: a wake-up
         * costs more than the check */
        if (w->lease_want && wk_free_slots(w) >= w->lease_want) pthread_cond_signal(&w->cv_lease);
    }
    w->runners_alive--;
    pthread_cond_signal(&w->cv_report);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}
