// SPDX-License-Identifier: Apache-2.0
/* `tenq work`: its flags, its signals, and the run of libtenq's worker
 * with the exec or lines handler. */
#include "work_cmd/work_cmd.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAX_NAMES 64

typedef struct work_args {
    const char *queues[MAX_NAMES], *types[MAX_NAMES];
    size_t nqueues, ntypes;
    const char *concurrency, *pool, *timeout, *max_rss, *grace, *name, *status_file, *max_output,
        *poll;
    bool lines, verbose;
    char **cmd; /* the handler's argv: borrowed from ours, NULL-terminated */
} work_args;

/* One row per flag: parsing and --help come from this table. */
typedef struct wflag {
    const char *name, *metavar, *help;
    size_t off; /* where in work_args: a const char * (value), a list, or a bool */
    char kind;  /* 'v' value, 'q' queue list, 't' type list, 'b' switch */
} wflag;

#define AT(f) offsetof(work_args, f)
static const wflag flags[] = {
    {"queue", "NAME", "a queue to lease from (repeat for several; required)", AT(queues), 'q'},
    {"type", "TYPE", "run only jobs of this type (repeat; default: every type)", AT(types), 't'},
    {"concurrency", "N", "exec: jobs run at once (default 1)", AT(concurrency), 'v'},
    {"lines", NULL, "long-lived handlers, one JSON line per job (see docs/WORKER.md)", AT(lines),
     'b'},
    {"pool", "N", "lines: handler processes, each one job at a time (default 1)", AT(pool), 'v'},
    {"timeout", "DURATION", "stop a handler that runs longer; the job fails \"timeout\"",
     AT(timeout), 'v'},
    {"max-rss", "SIZE", "stop a handler whose memory passes SIZE (\"memory limit\")", AT(max_rss),
     'v'},
    {"grace", "DURATION",
     "after SIGTERM: how long jobs may finish; after a handler's SIGTERM: its SIGKILL (10s)",
     AT(grace), 'v'},
    {"worker-name", "NAME", "the worker's name on its jobs (default HOST/pid-PID)", AT(name), 'v'},
    {"status-file", "PATH", "keep the jobs in hand, with their ages, in PATH (every second)",
     AT(status_file), 'v'},
    {"max-output", "SIZE", "stdout kept as a job's result (default 1MiB; the rest is cut)",
     AT(max_output), 'v'},
    {"poll", "DURATION", "the longest lease long poll (default 30s)", AT(poll), 'v'},
    {"verbose", NULL, "log every job's outcome", AT(verbose), 'b'},
    {NULL, NULL, NULL, 0, 0},
};

static void help(void)
{
    printf("usage: tenq work --queue NAME [flags] [--] COMMAND [ARGS...]\n\n"
           "Leases jobs and runs COMMAND for each: a process per job (exec, the default)\n"
           "with the job's args as JSON on stdin and TENQ_JOB_ID, TENQ_TENANT, TENQ_QUEUE,\n"
           "TENQ_TYPE, TENQ_KEY, TENQ_ATTEMPT, TENQ_TOKEN in its environment; stdout is the\n"
           "result; exit 0 succeeded, 75 retry by backoff, 65 no retry, else retry by\n"
           "backoff.  With --lines, --pool N processes run all along and get one job per\n"
           "line on stdin, answering one line each (docs/WORKER.md).\n\n"
           "SIGTERM or SIGINT: stop leasing, let running jobs finish (--grace), report,\n"
           "exit 0; a second one exits at once.  SIGTTIN: print the jobs in hand.\n\n"
           "flags:\n");
    for (const wflag *f = flags; f->name; f++) {
        char left[64];
        snprintf(left, sizeof left, "%s%s%s", f->name, f->metavar ? " " : "",
                 f->metavar ? f->metavar : "");
        printf("  --%-20s %s\n", left, f->help);
    }
    cli_global_help(stdout, 20);
    printf("  --%-20s %s\n", "help", "this help");
}

/* Parses argv; returns 0, CLI_HELP or CLI_USAGE. */
static int parse(cli *c, int argc, char **argv, work_args *a)
{
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i];
        if (!strcmp(arg, "--")) {
            a->cmd = argv + i + 1;
            break;
        }
        if (arg[0] != '-') {
            a->cmd = argv + i;
            break;
        }
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
            help();
            return CLI_HELP;
        }
        int g = cli_global_flag(c, argc, argv, &i);
        if (g == CLI_USAGE) return g;
        if (g == 1) continue;
        const wflag *f = NULL;
        size_t nl = 0;
        for (const wflag *k = flags; k->name && !f; k++) {
            nl = strlen(k->name);
            if (!strncmp(arg, "--", 2) && !strncmp(arg + 2, k->name, nl) &&
                (arg[2 + nl] == 0 || arg[2 + nl] == '='))
                f = k;
        }
        if (!f) return cli_usage(c, "unknown flag %s", arg);
        char *base = (char *)a + f->off;
        if (f->kind == 'b') {
            if (arg[2 + nl] == '=') return cli_usage(c, "--%s takes no value", f->name);
            *(bool *)base = true;
            continue;
        }
        const char *v;
        if (arg[2 + nl] == '=') {
            v = arg + 3 + nl;
        } else {
            if (i + 1 >= argc) return cli_usage(c, "--%s needs a value", f->name);
            v = argv[++i];
        }
        if (f->kind == 'v') {
            *(const char **)base = v;
            continue;
        }
        size_t *n = f->kind == 'q' ? &a->nqueues : &a->ntypes;
        if (*n == MAX_NAMES) return cli_usage(c, "at most %d --%s flags", MAX_NAMES, f->name);
        ((const char **)base)[(*n)++] = v;
    }
    if (!a->nqueues) return cli_usage(c, "--queue is required");
    if (!a->cmd || !a->cmd[0]) return cli_usage(c, "the handler's COMMAND is missing");
    if (a->pool && !a->lines) return cli_usage(c, "--pool goes with --lines");
    if (a->lines && a->concurrency)
        return cli_usage(c, "with --lines, --pool sets how many jobs run at once");
    return 0;
}

/* The program to run: COMMAND as a path, or found on PATH. */
static bool resolve(cli *c, const char *name, char *out, size_t n)
{
    struct stat st;
    if (strchr(name, '/')) {
        snprintf(out, n, "%s", name);
        if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return true;
        cli_usage(c, "cannot run %s: %s", name, strerror(errno ? errno : EACCES));
        return false;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path; *p;) {
        const char *e = strchr(p, ':');
        size_t dl = e ? (size_t)(e - p) : strlen(p);
        snprintf(out, n, "%.*s/%s", (int)dl, dl ? p : ".", name);
        if (access(out, X_OK) == 0 && stat(out, &st) == 0 && S_ISREG(st.st_mode)) return true;
        p += dl + (e ? 1 : 0);
    }
    cli_usage(c, "%s: not found on PATH", name);
    return false;
}

/* ---- signals ---- */

typedef struct sigctl {
    tenq_worker *w;
    const char *status_file;
    sigset_t set;
    pthread_t th;
    volatile sig_atomic_t done; /* the run is over: the thread ends */
} sigctl;

/* Writes the status atomically (temp file, rename): a reader never sees
 * half of it.  No fsync: it is rewritten every second and means nothing
 * after a crash. */
static void write_status(sigctl *s)
{
    char *text = NULL;
    if (tenq_worker_status(s->w, &text) != 0) return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", s->status_file);
    FILE *f = fopen(tmp, "we");
    if (!f) {
        work_log(TENQ_LOG_WARN, "cannot write %s: %s", tmp, strerror(errno));
        tenq_free(text);
        return;
    }
    bool ok = fputs(text, f) >= 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, s->status_file) != 0)
        work_log(TENQ_LOG_WARN, "cannot write %s: %s", s->status_file, strerror(errno));
    tenq_free(text);
}

static void *signal_main(void *arg)
{
    sigctl *s = arg;
    int stops = 0;
    while (!s->done) {
        struct timespec every = {1, 0};
        siginfo_t si;
        int sig = s->status_file ? sigtimedwait(&s->set, &si, &every) : sigwaitinfo(&s->set, &si);
        if (s->status_file && !s->done) write_status(s);
        if (sig < 0) continue;
        if (sig == SIGTERM || sig == SIGINT) {
            if (++stops == 1) {
                work_log(TENQ_LOG_INFO, "%s: stopping (a second signal stops at once)",
                         strsignal(sig));
                tenq_worker_stop(s->w);
                continue;
            }
            /* the server retries what this cuts off, when the leases expire */
            work_log(TENQ_LOG_WARN, "%s again: exiting now", strsignal(sig));
            work_procs_kill_all();
            fflush(stderr);
            _exit(1);
        }
        if (sig == SIGTTIN) {
            char *text = NULL;
            if (tenq_worker_status(s->w, &text) == 0) {
                fprintf(stderr, "%s", text);
                fflush(stderr);
            }
            tenq_free(text);
        }
    }
    return NULL;
}

/* ---- the command ---- */

static bool parse_values(cli *c, const work_args *a, work_cfg *cfg, unsigned *slots, int64_t *poll)
{
    long long n = 1;
    if (a->concurrency &&
        !cli_int(c, "concurrency", a->concurrency, 1, TENQ_WORKER_MAX_CONCURRENCY, &n))
        return false;
    if (a->pool && !cli_int(c, "pool", a->pool, 1, TENQ_WORKER_MAX_CONCURRENCY, &n)) return false;
    *slots = (unsigned)n;
    cfg->grace_ms = 10000;
    if (a->grace && !cli_duration(c, "grace", a->grace, &cfg->grace_ms)) return false;
    if (a->timeout && !cli_duration(c, "timeout", a->timeout, &cfg->timeout_ms)) return false;
    if (a->max_rss && !cli_bytes(c, "max-rss", a->max_rss, &cfg->max_rss)) return false;
    long long mo = 1 << 20;
    if (a->max_output && !cli_bytes(c, "max-output", a->max_output, &mo)) return false;
    if (mo < 64) {
        cli_usage(c, "--max-output is at least 64 bytes");
        return false;
    }
    cfg->max_output = (size_t)mo;
    *poll = 30000;
    if (a->poll && !cli_duration(c, "poll", a->poll, poll)) return false;
    return true;
}

int cmd_work(cli *c, int argc, char **argv)
{
    work_args a = {0};
    int rc = parse(c, argc, argv, &a);
    if (rc) return rc == CLI_HELP ? CLI_OK : rc;
    work_cfg cfg = {0};
    unsigned slots = 1;
    int64_t poll_ms = 30000;
    char path[4096];
    if (!parse_values(c, &a, &cfg, &slots, &poll_ms) || !resolve(c, a.cmd[0], path, sizeof path))
        return CLI_USAGE;
    cfg.path = path;
    cfg.argv = a.cmd;
    if (a.verbose) work_log_set_level(TENQ_LOG_DEBUG);

    /* Signals go to one thread, which every other inherits blocked from
     * here; handlers get them unblocked (proc.c). */
    sigctl sc = {0};
    sigemptyset(&sc.set);
    sigaddset(&sc.set, SIGTERM);
    sigaddset(&sc.set, SIGINT);
    sigaddset(&sc.set, SIGTTIN);
    sigaddset(&sc.set, SIGUSR2); /* the end of the run, from this thread */
    pthread_sigmask(SIG_BLOCK, &sc.set, NULL);
    signal(SIGPIPE, SIG_IGN); /* a handler that closed its stdin: EPIPE, not death */

    tenq_worker_options o;
    tenq_worker_options_init(&o);
    o.servers = c->nservers ? c->servers : NULL;
    o.nservers = c->nservers;
    o.token = c->token;
    o.ca_file = c->ca_file;
    o.cert_file = c->cert_file;
    o.key_file = c->key_file;
    o.name = a.name;
    o.queues = a.queues;
    o.nqueues = a.nqueues;
    o.concurrency = slots;
    o.poll_ms = poll_ms;
    o.grace_ms = cfg.grace_ms;
    o.log = work_log_sink;
    o.log_level = a.verbose ? TENQ_LOG_DEBUG : TENQ_LOG_INFO;
    tenq_worker *w = NULL;
    work_pool *pool = NULL;
    bool sig_up = false;
    rc = CLI_ERR;
    int wrc = tenq_worker_new(&o, &w);
    if (wrc != 0) {
        fprintf(stderr, "tenq work: %s\n", w ? tenq_worker_errmsg(w) : tenq_err_message(wrc));
        rc = wrc == TENQ_EINVALID ? CLI_USAGE : CLI_ERR;
        goto out;
    }
    if (a.lines && !(pool = work_pool_start(&cfg, slots))) goto out;
    tenq_handler_fn fn = a.lines ? work_lines_handler : work_exec_handler;
    void *ctx = a.lines ? (void *)pool : (void *)&cfg;
    for (size_t i = 0; i < a.ntypes || (i == 0 && !a.ntypes); i++) {
        wrc = tenq_worker_handle(w, a.ntypes ? a.types[i] : NULL, fn, ctx);
        if (wrc != 0) {
            fprintf(stderr, "tenq work: %s\n", tenq_worker_errmsg(w));
            rc = CLI_USAGE;
            goto out;
        }
    }
    sc.w = w;
    sc.status_file = a.status_file;
    if (pthread_create(&sc.th, NULL, signal_main, &sc) != 0) {
        fprintf(stderr, "tenq work: cannot start the signal thread\n");
        goto out;
    }
    sig_up = true;
    work_log(TENQ_LOG_INFO, "tenq work: %s handler%s %s, %u at once", a.lines ? "lines" : "exec",
             a.lines ? "s" : "", path, slots);
    wrc = tenq_worker_run(w);
    if (wrc != 0) {
        fprintf(stderr, "tenq work: %s\n", tenq_worker_errmsg(w));
        goto out;
    }
    tenq_worker_counts n;
    tenq_worker_counts_get(w, &n);
    work_log(TENQ_LOG_INFO,
             "tenq work: stopped; %llu job(s) leased, %llu succeeded, %llu failed, %llu refused",
             (unsigned long long)n.leased, (unsigned long long)n.succeeded,
             (unsigned long long)n.failed, (unsigned long long)n.refused);
    rc = CLI_OK;
out:
    if (sig_up) {
        sc.done = 1;
        pthread_kill(sc.th, SIGUSR2);
        pthread_join(sc.th, NULL);
    }
    work_pool_stop(pool);
    tenq_worker_free(w);
    return rc;
}
