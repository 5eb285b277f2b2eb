// SPDX-License-Identifier: Apache-2.0
/* lines handlers: --pool N long-lived processes, one per slot of the
 * worker.  A job goes to its slot's process as one JSON line on stdin (with
 * the steps stored by its earlier attempts); the process answers with one
 * line, after any progress lines and durable steps (a step stored, a sleep,
 * a wait for an event or a child: each answered on its stdin, docs/
 * WORKER.md).  A process that dies (or is stopped) fails its job and is
 * started again for the next. */
#include "work_cmd/work_cmd.h"

#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Room for an answer line beyond the result's bound (the id, the error). */
#define LINE_SLACK     (64 * 1024)
/* A process that dies this soon after it started is restarted only after
 * a pause that doubles up to RESTART_MAX_MS: a handler that cannot start
 * must not turn the worker into a fork loop. */
#define QUICK_DEATH_MS 1000
#define RESTART_MAX_MS 5000

#define DUMP (JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(17))

typedef struct lslot {
    work_proc p;
    bool alive;
    unsigned index;
    char *line; /* stdout not yet cut into lines */
    size_t len, cap;
    work_lines errl;
    unsigned quick_deaths;
} lslot;

struct work_pool {
    const work_cfg *cfg;
    char **env;
    unsigned n;
    lslot *slots;
};

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool slot_start(work_pool *pool, lslot *s)
{
    s->len = 0;
    s->errl.len = 0;
    if (work_spawn(pool->cfg, pool->env, false, &s->p) != 0) return false;
    s->alive = true;
    work_log(TENQ_LOG_DEBUG, "handler %u: started (pid %d)", s->index, (int)s->p.pid);
    return true;
}

/* The process of s ended: reaped, closed, logged. */
static void slot_dead(work_pool *pool, lslot *s, const char *prefix)
{
    (void)pool;
    work_lines_flush(&s->errl, prefix);
    work_proc_close(&s->p, 0);
    char st[96];
    work_status_text(s->p.status, st, sizeof st);
    work_log(TENQ_LOG_WARN, "handler %u (pid %d) ended: %s", s->index, (int)s->p.pid, st);
    if (mono_ms() - s->p.born_ms < QUICK_DEATH_MS)
        s->quick_deaths++;
    else
        s->quick_deaths = 0;
    s->alive = false;
}

work_pool *work_pool_start(const work_cfg *cfg, unsigned n)
{
    work_pool *pool = calloc(1, sizeof(*pool));
    if (!pool) goto oom;
    pool->cfg = cfg;
    pool->n = n;
    pool->env = work_env(NULL);
    pool->slots = calloc(n, sizeof(lslot));
    if (!pool->env || !pool->slots) goto oom;
    for (unsigned i = 0; i < n; i++) {
        pool->slots[i].index = i;
        if (!slot_start(pool, &pool->slots[i])) {
            work_pool_stop(pool);
            return NULL;
        }
    }
    return pool;
oom:
    work_log(TENQ_LOG_ERROR, "out of memory starting the handlers");
    work_pool_stop(pool);
    return NULL;
}

void work_pool_stop(work_pool *pool)
{
    if (!pool) return;
    /* EOF on stdin is how a lines handler learns to exit: tell all first */
    for (unsigned i = 0; pool->slots && i < pool->n; i++)
        if (pool->slots[i].alive && pool->slots[i].p.in >= 0) {
            close(pool->slots[i].p.in);
            pool->slots[i].p.in = -1;
        }
    int64_t until = mono_ms() + pool->cfg->grace_ms;
    for (unsigned i = 0; pool->slots && i < pool->n; i++) {
        lslot *s = &pool->slots[i];
        if (s->alive) {
            int64_t left = until - mono_ms();
            work_proc_close(&s->p, left > 0 ? left : 0);
        }
        free(s->line);
    }
    free(pool->slots);
    work_env_free(pool->env);
    free(pool);
}

/* Reads what the handler's stdout holds into s->line; false at EOF (or
 * *too_long when a line passes the bound). */
static bool read_out(const work_pool *pool, lslot *s, bool *too_long)
{
    size_t bound = pool->cfg->max_output + LINE_SLACK;
    for (;;) {
        if (s->cap - s->len < 65536) {
            size_t cap = s->cap ? s->cap * 2 : 65536 * 2;
            char *b = realloc(s->line, cap);
            if (!b) {
                *too_long = true;
                return true;
            }
            s->line = b;
            s->cap = cap;
        }
        size_t room = s->cap - s->len;
        ssize_t n = read(s->p.out, s->line + s->len, room);
        if (n > 0) {
            s->len += (size_t)n;
            if (s->len > bound && !memchr(s->line, '\n', s->len)) {
                *too_long = true;
                return true;
            }
            /* a short read emptied the pipe: no second read to hear EAGAIN */
            if ((size_t)n < room) return true;
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;
    }
}

typedef struct answer {
    bool done;
    tenq_result res;
    /* what goes to the handler's stdin: the job's line, then the replies
     * to its steps; written from off */
    char *out;
    size_t len, cap, off;
} answer;

/* A line (JSON text and a newline) queued for the handler's stdin. */
static void reply(answer *a, json_t *o)
{
    char *t = json_dumps(o, DUMP);
    json_decref(o);
    if (!t) return;
    size_t n = strlen(t);
    if (a->len + n + 1 > a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 4096;
        while (cap < a->len + n + 1) cap *= 2;
        char *b = realloc(a->out, cap);
        if (!b) {
            free(t);
            return;
        }
        a->out = b;
        a->cap = cap;
    }
    memcpy(a->out + a->len, t, n);
    a->out[a->len + n] = '\n';
    a->len += n + 1;
    free(t);
}

/* A reply to a step: {"id", verb: name, "ok": true|false, ...}. */
static json_t *step_reply(uint64_t id, const char *verb, const char *name, int rc, tenq_task *task)
{
    json_t *o = json_pack("{sIsssb}", "id", (json_int_t)id, verb, name, "ok", rc == 0);
    if (o && rc) json_object_set_new(o, "error", json_string(tenq_task_errmsg(task)));
    return o;
}

static json_t *json_or_null(const char *text)
{
    json_t *v = text ? json_loads(text, JSON_DECODE_ANY, NULL) : NULL;
    return v ? v : json_null();
}

/* A child job's fields (the subset a lines handler sends) as a submit. */
static void child_from(json_t *j, tenq_submit_req *r, char **args)
{
    memset(r, 0, sizeof(*r));
    *args = NULL;
    r->queue = json_string_value(json_object_get(j, "queue"));
    r->type = json_string_value(json_object_get(j, "type"));
    r->key = json_string_value(json_object_get(j, "key"));
    r->traceparent = json_string_value(json_object_get(j, "traceparent"));
    json_t *a = json_object_get(j, "args");
    if (a) r->args_json = *args = json_dumps(a, DUMP);
    json_t *p = json_object_get(j, "priority");
    if (json_is_integer(p)) {
        r->has_priority = true;
        r->priority = (int)json_integer_value(p);
    }
    json_t *m = json_object_get(j, "max_attempts");
    if (json_is_integer(m)) r->max_attempts = (uint32_t)json_integer_value(m);
    json_t *t = json_object_get(j, "run_at");
    if (json_is_integer(t)) r->run_at = json_integer_value(t);
}

/* A durable step the handler asked for (docs/WORKER.md, "lines,
 * precisely"): true when the line was one.  A step that parks the job ends
 * it: the handler is told so and gets its next job. */
static bool on_step(tenq_task *task, json_t *o, answer *a)
{
    uint64_t id = tenq_task_job(task)->id;
    const char *name;
    bool parked = false;
    int rc;
    if ((name = json_string_value(json_object_get(o, "step")))) {
        json_t *r = json_object_get(o, "result");
        char *text = r ? json_dumps(r, DUMP) : NULL;
        rc = tenq_task_step_put(task, name, text);
        free(text);
        reply(a, step_reply(id, "step", name, rc, task));
        return true;
    }
    if ((name = json_string_value(json_object_get(o, "sleep")))) {
        json_t *until = json_object_get(o, "until");
        rc = json_is_integer(until)
                 ? tenq_task_sleep_until(task, name, json_integer_value(until), &parked)
                 : tenq_task_sleep(task, name,
                                   json_integer_value(json_object_get(o, "duration_ms")), &parked);
        json_t *r = step_reply(id, "sleep", name, rc, task);
        json_object_set_new(r, "parked", json_boolean(parked));
        reply(a, r);
    } else if ((name = json_string_value(json_object_get(o, "wait_event")))) {
        const char *key = json_string_value(json_object_get(o, "event"));
        const char *payload = NULL;
        rc = tenq_task_wait_event(task, name, key,
                                  json_integer_value(json_object_get(o, "timeout_ms")), &payload,
                                  &parked);
        bool timed_out = rc == TENQ_ETIMEOUT;
        json_t *r = step_reply(id, "wait_event", name, timed_out ? 0 : rc, task);
        json_object_set_new(r, "parked", json_boolean(parked));
        if (!rc && !parked) json_object_set_new(r, "result", json_or_null(payload));
        if (timed_out) json_object_set_new(r, "timed_out", json_true());
        reply(a, r);
    } else if ((name = json_string_value(json_object_get(o, "run_child")))) {
        tenq_submit_req child;
        char *args;
        child_from(json_object_get(o, "job"), &child, &args);
        const char *result = NULL, *error = NULL;
        rc = tenq_task_run_child(task, name, &child, &result, &error, &parked);
        free(args);
        json_t *r = step_reply(id, "run_child", name, rc, task);
        json_object_set_new(r, "parked", json_boolean(parked));
        if (!rc && !parked) {
            json_object_set_new(r, "result", json_or_null(result));
            json_object_set_new(r, "error", error ? json_string(error) : json_null());
        }
        reply(a, r);
    } else {
        return false;
    }
    if (parked) { /* its lease ended: no answer is expected, the next job comes */
        a->done = true;
        a->res = tenq_result_parked();
    }
    return true;
}

/* One line from the handler: an answer, a progress, or noise. */
static void on_line(tenq_task *task, const char *text, size_t n, const char *prefix, answer *a)
{
    const tenq_job *job = tenq_task_job(task);
    json_t *o = json_loadb(text, n, 0, NULL);
    json_t *id = json_object_get(o, "id");
    if (!json_is_object(o) || !json_is_integer(id)) {
        work_log(TENQ_LOG_WARN, "%s: not an answer on stdout: %.*s", prefix, n > 300 ? 300 : (int)n,
                 text);
        goto out;
    }
    if ((uint64_t)json_integer_value(id) != job->id) {
        work_log(TENQ_LOG_WARN, "%s: answer for job %lld, which the handler was not given", prefix,
                 (long long)json_integer_value(id));
        goto out;
    }
    json_t *ok = json_object_get(o, "ok");
    if (!ok && on_step(task, o, a)) goto out;
    if (!ok) {
        json_t *p = json_object_get(o, "progress");
        if (!p) {
            work_log(TENQ_LOG_WARN, "%s: a line with neither ok, progress nor a step", prefix);
            goto out;
        }
        char *text_p = json_dumps(p, DUMP);
        if (text_p) tenq_task_progress(task, text_p);
        free(text_p);
        goto out;
    }
    json_t *stats = json_object_get(o, "stats");
    if (json_is_object(stats)) {
        char *st = json_dumps(stats, DUMP);
        if (st) tenq_task_stats(task, st);
        free(st);
    }
    a->done = true;
    if (json_is_true(ok)) {
        json_t *r = json_object_get(o, "result");
        char *rt = r && !json_is_null(r) ? json_dumps(r, DUMP) : NULL;
        if (r && !json_is_null(r) && !rt) {
            a->res = tenq_result_fail("out of memory in the worker", TENQ_RETRY_BACKOFF);
            goto out;
        }
        tenq_result res = {.ok = true, .result_json = rt, .retry_in_ms = TENQ_RETRY_BACKOFF};
        a->res = res;
        goto out;
    }
    json_t *e = json_object_get(o, "error");
    char *et = NULL;
    if (json_is_string(e))
        et = strdup(json_string_value(e));
    else if (e && !json_is_null(e))
        et = json_dumps(e, DUMP);
    json_t *retry = json_object_get(o, "retry"), *in = json_object_get(o, "retry_in_ms");
    if (json_is_false(retry))
        a->res = tenq_result_no_retry(et ? et : "failed");
    else
        a->res =
            tenq_result_fail(et ? et : "failed", json_is_integer(in) && json_integer_value(in) >= 0
                                                     ? json_integer_value(in)
                                                     : TENQ_RETRY_BACKOFF);
    free(et);
out:
    json_decref(o);
}

/* Cuts the complete lines out of s->line. */
static void take_lines(tenq_task *task, lslot *s, const char *prefix, answer *a)
{
    if (!s->len) return;
    size_t start = 0;
    char *nl;
    while (!a->done && (nl = memchr(s->line + start, '\n', s->len - start))) {
        size_t n = (size_t)(nl - (s->line + start));
        if (n) on_line(task, s->line + start, n, prefix, a);
        start += n + 1;
    }
    memmove(s->line, s->line + start, s->len - start);
    s->len -= start;
}

/* Logs what the handler wrote on stderr so far. */
static void drain_err(lslot *s, const char *prefix)
{
    char buf[65536];
    ssize_t n;
    while ((n = read(s->p.err, buf, sizeof buf)) > 0)
        work_lines_feed(&s->errl, prefix, buf, (size_t)n);
    if (n == 0) {
        close(s->p.err);
        s->p.err = -1;
    }
}

/* Before a job: the slot's process is alive, or started again (after a
 * pause when it keeps dying young).  False when it cannot be. */
static bool ensure_alive(work_pool *pool, lslot *s, tenq_task *task)
{
    char prefix[32];
    snprintf(prefix, sizeof prefix, "handler %u", s->index);
    /* One look at the process between jobs: did it end, did it say
     * anything (which belongs to no job)? */
    if (s->alive) {
        struct pollfd f[2] = {{s->p.pidfd, POLLIN, 0}, {s->p.err, POLLIN, 0}};
        int r = poll(f, 2, 0);
        if (r > 0 && f[1].revents) drain_err(s, prefix);
        if ((s->p.pidfd < 0 || (r > 0 && f[0].revents)) && work_proc_reap(&s->p)) {
            /* it ended: what it said on the way out is logged */
            bool too_long = false;
            if (s->p.err >= 0) drain_err(s, prefix);
            if (s->p.out >= 0) read_out(pool, s, &too_long);
            slot_dead(pool, s, prefix);
        }
    }
    if (s->alive) return true;
    if (s->quick_deaths) {
        int64_t pause = 100;
        for (unsigned i = 1; i < s->quick_deaths && pause < RESTART_MAX_MS; i++) pause *= 2;
        if (pause > RESTART_MAX_MS) pause = RESTART_MAX_MS;
        work_log(TENQ_LOG_WARN, "handler %u keeps dying: restarting in %lld ms", s->index,
                 (long long)pause);
        struct pollfd f = {tenq_task_stop_fd(task), POLLIN, 0};
        poll(&f, 1, (int)pause);
    }
    return slot_start(pool, s);
}

/* The job as the lease answered it, on one line; with "steps": the steps
 * its earlier attempts stored, when it has any.  False when the steps
 * cannot be read (the job then fails and is retried). */
static bool job_line(tenq_task *task, answer *a)
{
    const tenq_job *job = tenq_task_job(task);
    if (!job->steps) {
        size_t len = strlen(job->json);
        a->out = malloc(len + 1);
        if (!a->out) return false;
        memcpy(a->out, job->json, len);
        a->out[len] = '\n';
        a->len = a->cap = len + 1;
        return true;
    }
    const tenq_step *v;
    size_t n;
    if (tenq_task_steps(task, &v, &n) != 0) return false;
    json_t *o = json_loads(job->json, 0, NULL), *list = json_array();
    for (size_t i = 0; o && list && i < n; i++) {
        static const char *const kinds[] = {"step", "sleep", "event", "child"};
        json_t *x = json_pack("{sssssbso}", "name", v[i].name, "kind", kinds[v[i].kind & 3], "done",
                              v[i].done, "result", json_or_null(v[i].result_json));
        if (x && v[i].error) json_object_set_new(x, "error", json_string(v[i].error));
        json_array_append_new(list, x);
    }
    if (!o || !list) {
        json_decref(o);
        json_decref(list);
        return false;
    }
    json_object_set_new(o, "steps", list);
    reply(a, o);
    return a->len > 0;
}

tenq_result work_lines_handler(tenq_task *task, void *ctx)
{
    work_pool *pool = ctx;
    const tenq_job *job = tenq_task_job(task);
    lslot *s = &pool->slots[tenq_task_slot(task) % pool->n];
    char prefix[48];
    snprintf(prefix, sizeof prefix, "job %llu", (unsigned long long)job->id);
    answer a = {0};
    if (!ensure_alive(pool, s, task)) return tenq_result_fail("handler exited", TENQ_RETRY_BACKOFF);
    if (!job_line(task, &a)) {
        free(a.out);
        char why[600];
        snprintf(why, sizeof why, "reading the job's steps: %s", tenq_task_errmsg(task));
        return tenq_result_fail(why, TENQ_RETRY_BACKOFF);
    }
    work_guard g;
    work_guard_init(&g, pool->cfg, task, &s->p);
    bool died = false, too_long = false;
    int stop_fd = tenq_task_stop_fd(task);
    /* told to stop before it began: the stop fd is readable already */
    s->errl.last[0] = 0;
    for (;;) {
        struct pollfd f[5] = {
            {a.off < a.len ? s->p.in : -1, POLLOUT, 0},
            {s->p.out, POLLIN, 0},
            {s->p.err, POLLIN, 0},
            {s->p.pidfd, POLLIN, 0},
            {stop_fd, POLLIN, 0},
        };
        int cap = s->p.pidfd >= 0 ? 1000 : 20;
        if (poll(f, 5, work_guard_timeout(&g, cap)) < 0 && errno != EINTR) break;
        if (a.off < a.len && f[0].revents && !work_write_some(s->p.in, a.out, a.len, &a.off))
            a.off = a.len; /* the reader is gone: its end shows on the pidfd */
        if (s->p.out >= 0 && f[1].revents && !read_out(pool, s, &too_long)) {
            close(s->p.out);
            s->p.out = -1;
        }
        if (s->p.err >= 0 && f[2].revents) drain_err(s, prefix);
        if (s->p.pidfd < 0 || f[3].revents) died = work_proc_reap(&s->p);
        if (died && s->p.out >= 0) read_out(pool, s, &too_long);
        /* answers count only while the handler is not being stopped */
        if (!g.why) take_lines(task, s, prefix, &a);
        if (too_long && !g.why) {
            work_log(TENQ_LOG_ERROR, "%s: an answer line longer than %zu bytes", prefix,
                     pool->cfg->max_output + LINE_SLACK);
            g.why = "answer too long";
            work_proc_signal(&s->p, SIGKILL);
        }
        /* a parked job's handler is told so before it gets its next job */
        if (died || (a.done && !g.why && a.off >= a.len)) break;
        work_guard_check(&g, f[4].revents != 0);
    }
    free(a.out);
    /* A handler writes stderr before it answers, so what it said about
     * this job is in the pipe now: log it under this job's id. */
    if (s->p.err >= 0) drain_err(s, prefix);
    if (!died && !g.why && !a.done) {
        /* poll failed: this process cannot be trusted with another job */
        work_proc_signal(&s->p, SIGKILL);
        died = true;
    }
    if (died) slot_dead(pool, s, prefix);
    if (a.done && !g.why) {
        s->quick_deaths = 0;
        return a.res;
    }
    free(a.res.result_json);
    free(a.res.error);
    if (g.why) return tenq_result_fail(g.why, g.retry_in_ms);
    /* died without answering: a crash, an exit, a signal from outside */
    return tenq_result_fail("handler exited", TENQ_RETRY_BACKOFF);
}
