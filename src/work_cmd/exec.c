// SPDX-License-Identifier: Apache-2.0
/* exec handlers: a process per job, and the guard that stops a handler
 * process (cancel, lost lease, --timeout, --max-rss, the end of the grace
 * period) for both kinds of handler. */
#include "work_cmd/work_cmd.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How often the memory of a running handler is looked at. */
#define RSS_EVERY_MS 100
/* A handler over --max-rss is KILLed this soon after its TERM (at most):
 * memory that grows fast must not wait out a long grace. */
#define RSS_KILL_MS  1000

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the guard ---- */

void work_guard_init(work_guard *g, const work_cfg *cfg, tenq_task *task, work_proc *proc)
{
    memset(g, 0, sizeof(*g));
    g->cfg = cfg;
    g->task = task;
    g->proc = proc;
    g->began_ms = mono_ms();
    g->next_rss_ms = cfg->max_rss ? g->began_ms + RSS_EVERY_MS : 0;
    g->retry_in_ms = TENQ_RETRY_BACKOFF;
}

/* TERM now, KILL after kill_ms; the first reason is the one reported. */
static void stop_proc(work_guard *g, const char *why, int64_t retry_in_ms, int64_t kill_ms)
{
    if (g->why) return;
    g->why = why;
    g->retry_in_ms = retry_in_ms;
    g->kill_at = mono_ms() + kill_ms;
    work_log(TENQ_LOG_INFO, "job %llu: stopping its handler (%s): SIGTERM, SIGKILL in %lld ms",
             (unsigned long long)tenq_task_job(g->task)->id, why, (long long)kill_ms);
    work_proc_signal(g->proc, SIGTERM);
}

int work_guard_timeout(const work_guard *g, int cap_ms)
{
    int64_t now = mono_ms(), t = cap_ms;
    if (g->cfg->timeout_ms && !g->why) {
        int64_t d = g->began_ms + g->cfg->timeout_ms - now;
        if (d < t) t = d;
    }
    if (g->next_rss_ms && !g->why && g->next_rss_ms - now < t) t = g->next_rss_ms - now;
    if (g->kill_at && g->kill_at - now < t) t = g->kill_at - now;
    return t < 0 ? 0 : (int)t;
}

void work_guard_check(work_guard *g, bool stop_ready)
{
    int64_t now = mono_ms();
    const work_cfg *cfg = g->cfg;
    /* the stop fd says when to look: no syscall per wake-up otherwise */
    switch (stop_ready ? tenq_task_stopping(g->task) : TENQ_STOP_NONE) {
    case TENQ_STOP_CANCELLED: stop_proc(g, "cancelled", TENQ_RETRY_BACKOFF, cfg->grace_ms); break;
    case TENQ_STOP_LOST: stop_proc(g, "lease lost", TENQ_RETRY_BACKOFF, cfg->grace_ms); break;
    /* cut off by the worker, not failed by itself: another worker may
     * take it at once */
    case TENQ_STOP_SHUTDOWN: stop_proc(g, "worker stopped", 0, cfg->grace_ms); break;
    case TENQ_STOP_NONE: break;
    }
    if (cfg->timeout_ms && now >= g->began_ms + cfg->timeout_ms)
        stop_proc(g, "timeout", TENQ_RETRY_BACKOFF, cfg->grace_ms);
    if (g->next_rss_ms && now >= g->next_rss_ms) {
        long long rss = work_proc_rss(g->proc);
        if (rss > g->max_rss_seen) g->max_rss_seen = rss;
        g->next_rss_ms = now + RSS_EVERY_MS;
        if (rss > cfg->max_rss && !g->why) {
            work_log(TENQ_LOG_WARN, "job %llu: handler uses %lld KiB, over --max-rss (%lld KiB)",
                     (unsigned long long)tenq_task_job(g->task)->id, rss / 1024,
                     cfg->max_rss / 1024);
            stop_proc(g, "memory limit", TENQ_RETRY_BACKOFF,
                      cfg->grace_ms < RSS_KILL_MS ? cfg->grace_ms : RSS_KILL_MS);
        }
    }
    if (g->kill_at && now >= g->kill_at) {
        work_log(TENQ_LOG_WARN, "job %llu: handler still running after SIGTERM: SIGKILL",
                 (unsigned long long)tenq_task_job(g->task)->id);
        work_proc_signal(g->proc, SIGKILL);
        g->kill_at = 0;
    }
}

/* ---- exec ---- */

/* Reads what fd has now into out (stdout) or the line logger (stderr);
 * false at EOF or on an error (the fd is done). */
static bool drain(int fd, work_output *out, work_lines *lines, const char *prefix, bool *oom)
{
    char buf[65536];
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n > 0) {
            if (out && !work_output_add(out, buf, (size_t)n)) *oom = true;
            if (lines) work_lines_feed(lines, prefix, buf, (size_t)n);
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false;
    }
}

/* The args as the handler reads them on stdin: JSON and a newline. */
static char *stdin_text(const tenq_job *job, size_t *len)
{
    const char *a = job->args_json ? job->args_json : job->payloads_json;
    if (!a) a = "null";
    *len = strlen(a) + 1;
    char *s = malloc(*len + 1);
    if (s) snprintf(s, *len + 1, "%s\n", a);
    return s;
}

static void add_stats(tenq_task *task, const work_proc *p, const work_guard *g,
                      const work_output *out, bool truncated)
{
    char stats[256];
    int n;
    if (WIFEXITED(p->status))
        n = snprintf(stats, sizeof stats, "{\"exit_code\":%d", WEXITSTATUS(p->status));
    else
        n = snprintf(stats, sizeof stats, "{\"signal\":%d", WTERMSIG(p->status));
    n += snprintf(stats + n, sizeof stats - (size_t)n, ",\"ms\":%lld,\"stdout_bytes\":%zu%s",
                  (long long)(mono_ms() - g->began_ms), out->total,
                  truncated ? ",\"stdout_truncated\":true" : "");
    if (g->max_rss_seen)
        n += snprintf(stats + n, sizeof stats - (size_t)n, ",\"max_rss_bytes\":%lld",
                      g->max_rss_seen);
    snprintf(stats + n, sizeof stats - (size_t)n, "}");
    tenq_task_stats(task, stats);
}

/* The outcome of a process that ended by itself. */
static tenq_result exit_result(tenq_task *task, const work_proc *p, const work_guard *g,
                               const work_output *out, const work_lines *errl)
{
    const tenq_job *job = tenq_task_job(task);
    if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 0) {
        bool truncated, oom;
        char *result = work_output_result(out, &truncated, &oom);
        add_stats(task, p, g, out, truncated);
        if (oom) return tenq_result_fail("out of memory in the worker", TENQ_RETRY_BACKOFF);
        if (truncated)
            work_log(TENQ_LOG_WARN, "job %llu: stdout cut to %zu of %zu bytes for the result",
                     (unsigned long long)job->id, result ? strlen(result) : 0, out->total);
        /* handed over as is: the worker frees what a result holds */
        tenq_result r = {.ok = true, .result_json = result, .retry_in_ms = TENQ_RETRY_BACKOFF};
        return r;
    }
    add_stats(task, p, g, out, false);
    char st[96], msg[700];
    work_status_text(p->status, st, sizeof st);
    /* the handler's last words on stderr say more than a number */
    if (errl->last[0])
        snprintf(msg, sizeof msg, "%s: %s", st, errl->last);
    else
        snprintf(msg, sizeof msg, "%s", st);
    if (WIFEXITED(p->status) && WEXITSTATUS(p->status) == 65) return tenq_result_no_retry(msg);
    /* 75 (EX_TEMPFAIL), any other status, a signal: retry by the backoff */
    return tenq_result_fail(msg, TENQ_RETRY_BACKOFF);
}

tenq_result work_exec_handler(tenq_task *task, void *ctx)
{
    const work_cfg *cfg = ctx;
    const tenq_job *job = tenq_task_job(task);
    char prefix[48];
    snprintf(prefix, sizeof prefix, "job %llu", (unsigned long long)job->id);
    size_t in_len = 0, in_off = 0;
    char *in = stdin_text(job, &in_len);
    char **env = work_env(job);
    work_proc p;
    work_output out;
    work_lines errl = {0};
    work_output_init(&out, cfg->max_output);
    tenq_result res;
    if (!in || !env) {
        res = tenq_result_fail("out of memory in the worker", TENQ_RETRY_BACKOFF);
        goto out;
    }
    if (work_spawn(cfg, env, true, &p) != 0) {
        res = tenq_result_fail("cannot start the handler", TENQ_RETRY_BACKOFF);
        goto out;
    }
    work_guard g;
    work_guard_init(&g, cfg, task, &p);
    bool oom = false, exited = false;
    int stop_fd = tenq_task_stop_fd(task);
    /* told to stop before it began: the stop fd is readable already */
    while (!exited) {
        struct pollfd f[5] = {
            {p.in, POLLOUT, 0},   {p.out, POLLIN, 0},   {p.err, POLLIN, 0},
            {p.pidfd, POLLIN, 0}, {stop_fd, POLLIN, 0},
        };
        /* closed fds are skipped by poll (negative) */
        int cap = p.pidfd >= 0 ? 1000 : 20;
        if (poll(f, 5, work_guard_timeout(&g, cap)) < 0 && errno != EINTR) {
            work_log(TENQ_LOG_ERROR, "%s: poll: %s", prefix, strerror(errno));
            break;
        }
        if (p.in >= 0 && f[0].revents) {
            /* a handler that does not read its stdin is fine: EPIPE ends it */
            if (!work_write_some(p.in, in, in_len, &in_off) || in_off == in_len) {
                close(p.in);
                p.in = -1;
            }
        }
        if (p.out >= 0 && f[1].revents && !drain(p.out, &out, NULL, prefix, &oom)) {
            close(p.out);
            p.out = -1;
        }
        if (p.err >= 0 && f[2].revents && !drain(p.err, NULL, &errl, prefix, &oom)) {
            close(p.err);
            p.err = -1;
        }
        if (p.pidfd < 0 || f[3].revents) exited = work_proc_reap(&p);
        work_guard_check(&g, f[4].revents != 0);
    }
    /* What it wrote before it ended is in the pipes; a descendant that
     * keeps them open is not waited for. */
    if (p.out >= 0) drain(p.out, &out, NULL, prefix, &oom);
    if (p.err >= 0) drain(p.err, NULL, &errl, prefix, &oom);
    work_lines_flush(&errl, prefix);
    work_proc_close(&p, 0);
    if (g.why) {
        char st[96];
        work_status_text(p.status, st, sizeof st);
        work_log(TENQ_LOG_INFO, "%s: handler stopped (%s): %s", prefix, g.why, st);
        add_stats(task, &p, &g, &out, false);
        res = tenq_result_fail(g.why, g.retry_in_ms);
    } else if (oom) {
        res = tenq_result_fail("out of memory in the worker", TENQ_RETRY_BACKOFF);
    } else {
        res = exit_result(task, &p, &g, &out, &errl);
    }
out:
    work_output_free(&out);
    work_env_free(env);
    free(in);
    return res;
}
