// SPDX-License-Identifier: Apache-2.0
/* tenq work: lease jobs and run a handler process for each (exec), or hand
 * them to long-lived handler processes one line at a time (lines).
 *
 * Built on libtenq's worker (include/tenq/worker.h), which leases,
 * heartbeats and reports; this module supplies its handlers.  Each handler
 * call runs on one of the worker's runner threads and supervises its child
 * process with poll(): the child's pipes, its pidfd, the task's stop fd,
 * and the timers for --timeout, --max-rss and the TERM-to-KILL grace.
 * docs/WORKER.md ("How it works") tells why.
 *
 * Ownership: a work_proc belongs to the thread that spawned it (exec: the
 * runner, for one job; lines: the runner of its slot, for as long as the
 * process lives).  The registry of process groups (proc.c) is shared and
 * locked: the second SIGTERM kills them all from the signal thread. */
#ifndef TENQ_WORK_CMD_H
#define TENQ_WORK_CMD_H

#include "cli/cli.h"
#include "tenq/tenq.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* `tenq work`, for the CLI's table (src/cli/main.c). */
int cmd_work(cli *c, int argc, char **argv);

/* ---- settings shared by the handlers ---- */
typedef struct work_cfg {
    const char *path;   /* the handler program, resolved from PATH */
    char **argv;        /* its arguments (argv[0] as given); borrowed */
    int64_t timeout_ms; /* 0: none */
    long long max_rss;  /* bytes; 0: none */
    int64_t grace_ms;   /* TERM, then KILL this much later */
    size_t max_output;  /* bytes of stdout kept as the result */
} work_cfg;

/* ---- log.c: the worker's log on stderr ---- */
void work_log(tenq_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A tenq_log_fn for libtenq's worker. */
void work_log_sink(void *ctx, tenq_log_level level, const char *line);
void work_log_set_level(tenq_log_level level);

/* Cuts what a child writes on stderr into lines, each logged with a prefix
 * ("job 17"): a partial line waits for its end (or for 4 KiB). */
typedef struct work_lines {
    char buf[4096];
    size_t len;
    char last[512]; /* the last complete line: why a handler failed */
} work_lines;
void work_lines_feed(work_lines *l, const char *prefix, const char *data, size_t n);
/* Logs what is left (a line without its newline). */
void work_lines_flush(work_lines *l, const char *prefix);

/* ---- proc.c: handler processes ---- */
typedef struct work_proc {
    pid_t pid;        /* 0: none */
    int pidfd;        /* readable when the process ended; -1: none */
    int in, out, err; /* its stdin (ours to write), stdout, stderr; -1: closed */
    bool exited;      /* reaped: status below */
    int status;       /* as waitpid's */
    int64_t born_ms;
} work_proc;

/* Starts cfg's program in its own process group with stdin, stdout and
 * stderr on pipes (non-blocking on our side) and envp as its environment.
 * die_with_parent: SIGKILL when the spawning thread ends (exec handlers).
 * Returns 0, or -1 with the reason logged. */
int work_spawn(const work_cfg *cfg, char *const *envp, bool die_with_parent, work_proc *p);
/* Sends sig to the process's group (and the process). */
void work_proc_signal(work_proc *p, int sig);
/* Reaps the process if it ended (non-blocking): true when it has. */
bool work_proc_reap(work_proc *p);
/* Waits for the end of the process (KILL after grace_ms) and closes
 * everything. */
void work_proc_close(work_proc *p, int64_t grace_ms);
/* The resident memory of the process and its descendants, in bytes; 0 if
 * it cannot be read. */
long long work_proc_rss(const work_proc *p);
/* "exit status 3", "killed by signal 9 (Killed)". */
void work_status_text(int status, char *buf, size_t n);
/* SIGKILLs every process group a handler runs in (the second signal). */
void work_procs_kill_all(void);
/* The environment of a job's process: ours with the job's TENQ_* on top
 * (job NULL: ours without TENQ_TOKEN, for lines handlers).  NULL when out
 * of memory; the caller frees it with work_env_free. */
char **work_env(const tenq_job *job);
void work_env_free(char **env);
/* Writes what is left of buf to fd without blocking; false when the
 * reader is gone. */
bool work_write_some(int fd, const char *buf, size_t len, size_t *off);

/* ---- output.c: a handler's stdout as the job's result ---- */
typedef struct work_output {
    char *data; /* the first `max` bytes */
    size_t len, cap, max;
    size_t total; /* bytes seen */
} work_output;
void work_output_init(work_output *o, size_t max);
/* Keeps data up to the bound, counting the rest; false when out of memory. */
bool work_output_add(work_output *o, const char *data, size_t n);
/* The result as JSON text: the output when it is JSON, else a JSON string
 * of it, never longer than the bound (a string is cut to fit).  *truncated
 * tells whether anything was left out.  NULL for no output, or out of
 * memory (*oom). */
char *work_output_result(const work_output *o, bool *truncated, bool *oom);
void work_output_free(work_output *o);

/* ---- exec.c ---- */
tenq_result work_exec_handler(tenq_task *task, void *ctx /* const work_cfg * */);

/* ---- lines.c ---- */
typedef struct work_pool work_pool;
/* Starts n handler processes; NULL on failure (logged). */
work_pool *work_pool_start(const work_cfg *cfg, unsigned n);
tenq_result work_lines_handler(tenq_task *task, void *ctx /* work_pool * */);
/* Closes every handler's stdin, waits up to the grace for them to exit,
 * then KILLs, and frees the pool.  NULL is a no-op. */
void work_pool_stop(work_pool *pool);

/* ---- supervision (exec.c): how a handler's process is stopped ---- */
typedef struct work_guard {
    const work_cfg *cfg;
    tenq_task *task;
    work_proc *proc;
    int64_t began_ms;
    int64_t next_rss_ms;
    int64_t kill_at;     /* KILL then; 0: not stopping */
    const char *why;     /* why it was stopped: the job's error; NULL: not */
    int64_t retry_in_ms; /* with why: TENQ_RETRY_BACKOFF or 0 */
    long long max_rss_seen;
} work_guard;
void work_guard_init(work_guard *g, const work_cfg *cfg, tenq_task *task, work_proc *proc);
/* The poll() timeout until the guard's next timer, at most cap_ms. */
int work_guard_timeout(const work_guard *g, int cap_ms);
/* Checks the timers, and the task's stop reason when its stop fd polled
 * readable (stop_ready); stops the process when due (TERM, then KILL). */
void work_guard_check(work_guard *g, bool stop_ready);

#endif
