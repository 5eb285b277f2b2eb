// SPDX-License-Identifier: Apache-2.0
/* What handlers see: their task, and the results they return. */
#include "internal.h"
#include "worker_int.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char oom[] = "out of memory in the worker";

tenq_result tenq_result_ok(const char *result_json)
{
    tenq_result r = {.ok = true, .retry_in_ms = TENQ_RETRY_BACKOFF};
    if (result_json && !(r.result_json = strdup(result_json)))
        return tenq_result_fail(oom, TENQ_RETRY_BACKOFF);
    return r;
}

tenq_result tenq_result_fail(const char *error, int64_t retry_in_ms)
{
    tenq_result r = {.ok = false,
                     .retry_in_ms = retry_in_ms < 0 ? TENQ_RETRY_BACKOFF : retry_in_ms};
    /* without memory the error goes unsaid; the failure itself still counts */
    if (error) r.error = strdup(error);
    return r;
}

tenq_result tenq_result_no_retry(const char *error)
{
    tenq_result r = tenq_result_fail(error, TENQ_RETRY_BACKOFF);
    r.no_retry = true;
    return r;
}

tenq_result tenq_result_parked(void)
{
    tenq_result r = {.ok = false, .retry_in_ms = TENQ_RETRY_BACKOFF, .parked = true};
    return r;
}

const tenq_job *tenq_task_job(const tenq_task *t)
{
    return &t->job;
}

unsigned tenq_task_slot(const tenq_task *t)
{
    return t->slot;
}

/* A malloc'd copy of JSON text (an object when `object`), checked; NULL
 * with *rc set when bad. */
static char *checked_json(const char *text, bool object, int *rc)
{
    tq_span o;
    if (object ? !tq_scan_object(text, strlen(text), &o) : !tq_scan_valid(text, strlen(text))) {
        *rc = TENQ_EINVALID;
        return NULL;
    }
    char *s = strdup(text);
    if (!s) *rc = TENQ_ENOMEM;
    return s;
}

int tenq_task_progress(tenq_task *t, const char *progress_json)
{
    if (!t || !progress_json) return TENQ_EINVALID;
    int rc = 0;
    char *p = checked_json(progress_json, false, &rc);
    if (!p) return rc;
    tenq_worker *w = t->w;
    pthread_mutex_lock(&w->mu);
    free(t->progress);
    t->progress = p;
    t->progress_dirty = true;
    pthread_cond_signal(&w->cv_report);
    pthread_mutex_unlock(&w->mu);
    return 0;
}

int tenq_task_stats(tenq_task *t, const char *stats_json)
{
    if (!t) return TENQ_EINVALID;
    int rc = 0;
    char *s = NULL;
    if (stats_json && !(s = checked_json(stats_json, true, &rc))) return rc;
    /* the stats belong to the running handler: no lock */
    free(t->stats);
    t->stats = s;
    return 0;
}

tenq_stop tenq_task_stopping(tenq_task *t)
{
    uint64_t v;
    while (read(t->w->slot_fds[t->slot], &v, sizeof v) > 0) continue;
    return (tenq_stop)atomic_load(&t->stop);
}

int tenq_task_stop_fd(const tenq_task *t)
{
    return t->w->slot_fds[t->slot];
}
