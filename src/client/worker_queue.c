// SPDX-License-Identifier: Apache-2.0
/* Tasks in hand: the ready and done queues, a running task's stop, and
 * freeing a task. */
#include "internal.h"
#include "worker_int.h"

#include <stdlib.h>
#include <unistd.h>

void wk_queue_push(wk_queue *q, tenq_task *t)
{
    t->qnext = NULL;
    if (q->tail)
        q->tail->qnext = t;
    else
        q->head = t;
    q->tail = t;
    q->n++;
}

tenq_task *wk_queue_pop(wk_queue *q)
{
    tenq_task *t = q->head;
    if (!t) return NULL;
    q->head = t->qnext;
    if (!q->head) q->tail = NULL;
    t->qnext = NULL;
    q->n--;
    return t;
}

void wk_task_stop(tenq_task *t, tenq_stop why)
{
    int none = TENQ_STOP_NONE;
    if (!atomic_compare_exchange_strong(&t->stop, &none, (int)why)) return;
    if (t->state != TK_RUNNING) return;
    uint64_t one = 1;
    /* an eventfd write fails only when the counter would overflow */
    if (write(t->w->slot_fds[t->slot], &one, sizeof one) < 0) return;
}

void wk_task_free(tenq_task *t)
{
    if (!t) return;
    tq_job_clear(&t->job);
    free(t->progress);
    free(t->stats);
    free(t->res.result_json);
    free(t->res.error);
    tenq_steps_free(t->steps, t->nsteps);
    free(t);
}
