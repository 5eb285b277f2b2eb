// SPDX-License-Identifier: Apache-2.0
/* Handler processes: spawning with pipes and a pidfd, signalling their
 * process group, reaping, memory, and the registry the second signal
 * kills from. */
#include "work_cmd/work_cmd.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the registry of running process groups ---- */

static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t *reg;
static size_t nreg, capreg;

static void reg_add(pid_t pid)
{
    pthread_mutex_lock(&reg_mu);
    if (nreg == capreg) {
        size_t cap = capreg ? capreg * 2 : 64;
        pid_t *v = realloc(reg, cap * sizeof(*v));
        if (v) {
            reg = v;
            capreg = cap;
        }
    }
    /* without room the group is not killed by a second signal: its
     * handler still dies with its runner (PDEATHSIG) or at its stdin's EOF */
    if (nreg < capreg) reg[nreg++] = pid;
    pthread_mutex_unlock(&reg_mu);
}

static void reg_remove(pid_t pid)
{
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nreg; i++)
        if (reg[i] == pid) {
            reg[i] = reg[--nreg];
            break;
        }
    pthread_mutex_unlock(&reg_mu);
}

void work_procs_kill_all(void)
{
    pthread_mutex_lock(&reg_mu);
    for (size_t i = 0; i < nreg; i++) {
        kill(-reg[i], SIGKILL);
        kill(reg[i], SIGKILL);
    }
    pthread_mutex_unlock(&reg_mu);
}

/* ---- spawning ---- */

static void close_fd(int *fd)
{
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

int work_spawn(const work_cfg *cfg, char *const *envp, bool die_with_parent, work_proc *p)
{
    memset(p, 0, sizeof(*p));
    p->pidfd = p->in = p->out = p->err = -1;
    int in[2] = {-1, -1}, out[2] = {-1, -1}, err[2] = {-1, -1};
    if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0) {
        work_log(TENQ_LOG_ERROR, "cannot make pipes: %s", strerror(errno));
        goto fail;
    }
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        work_log(TENQ_LOG_ERROR, "cannot fork: %s", strerror(errno));
        goto fail;
    }
    if (pid == 0) {
        /* the child: async-signal-safe calls only, then exec */
        setpgid(0, 0);
        if (die_with_parent) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(127);
        }
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL); /* ignored in the worker; exec would keep that */
        if (dup2(in[0], 0) < 0 || dup2(out[1], 1) < 0 || dup2(err[1], 2) < 0) _exit(127);
        execve(cfg->path, cfg->argv, envp);
        static const char msg[] = "tenq work: cannot run the handler\n";
        if (write(2, msg, sizeof msg - 1) < 0) _exit(127);
        _exit(127);
    }
    /* both sides set the group, so that it exists before any signal to it */
    setpgid(pid, pid);
    p->pid = pid;
    p->born_ms = mono_ms();
    reg_add(pid);
    p->pidfd = pidfd_open(pid, 0);
    if (p->pidfd < 0) work_log(TENQ_LOG_WARN, "pidfd_open: %s", strerror(errno));
    close(in[0]);
    close(out[1]);
    close(err[1]);
    p->in = in[1];
    p->out = out[0];
    p->err = err[0];
    fcntl(p->in, F_SETFL, O_NONBLOCK);
    fcntl(p->out, F_SETFL, O_NONBLOCK);
    fcntl(p->err, F_SETFL, O_NONBLOCK);
    return 0;
fail:
    for (int i = 0; i < 2; i++) {
        close_fd(&in[i]);
        close_fd(&out[i]);
        close_fd(&err[i]);
    }
    return -1;
}

void work_proc_signal(work_proc *p, int sig)
{
    if (!p->pid || p->exited) return;
    kill(-p->pid, sig);
    kill(p->pid, sig);
}

bool work_proc_reap(work_proc *p)
{
    if (!p->pid) return true;
    if (p->exited) return true;
    int st;
    pid_t r;
    do r = waitpid(p->pid, &st, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == 0) return false;
    p->exited = true;
    p->status = r == p->pid ? st : 0;
    reg_remove(p->pid);
    return true;
}

void work_proc_close(work_proc *p, int64_t grace_ms)
{
    close_fd(&p->in);
    if (p->pid && !work_proc_reap(p)) {
        int64_t kill_at = mono_ms() + grace_ms;
        bool killed = false;
        while (!work_proc_reap(p)) {
            int64_t left = kill_at - mono_ms();
            if (left <= 0 && !killed) {
                work_proc_signal(p, SIGKILL);
                killed = true;
            }
            if (p->pidfd >= 0) {
                struct pollfd f = {p->pidfd, POLLIN, 0};
                poll(&f, 1, killed ? 1000 : (int)(left > 1000 ? 1000 : left));
            } else {
                struct timespec ts = {0, 10 * 1000000};
                nanosleep(&ts, NULL);
            }
        }
    }
    close_fd(&p->out);
    close_fd(&p->err);
    close_fd(&p->pidfd);
}

/* ---- memory ---- */

static long long rss_of(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/statm", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return 0;
    long long size = 0, resident = 0;
    int n = fscanf(f, "%lld %lld", &size, &resident);
    fclose(f);
    return n == 2 ? resident * sysconf(_SC_PAGESIZE) : 0;
}

/* Adds the RSS of pid and its descendants (up to *budget processes). */
static long long tree_rss(pid_t pid, int *budget)
{
    if ((*budget)-- <= 0) return 0;
    long long total = rss_of(pid);
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) return total;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char cpath[300];
        snprintf(cpath, sizeof cpath, "/proc/%d/task/%s/children", (int)pid, e->d_name);
        FILE *f = fopen(cpath, "re");
        if (!f) continue;
        int child;
        while (fscanf(f, "%d", &child) == 1) total += tree_rss(child, budget);
        fclose(f);
    }
    closedir(d);
    return total;
}

long long work_proc_rss(const work_proc *p)
{
    if (!p->pid || p->exited) return 0;
    int budget = 256;
    return tree_rss(p->pid, &budget);
}

void work_status_text(int status, char *buf, size_t n)
{
    if (WIFEXITED(status))
        snprintf(buf, n, "exit status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, n, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        snprintf(buf, n, "ended (status %d)", status);
}

/* ---- environment ---- */

/* TRACEPARENT: the job's W3C trace context, where OpenTelemetry looks for
 * one in a process's environment */
static const char *const job_vars[] = {
    "TENQ_JOB_ID=", "TENQ_TENANT=",  "TENQ_QUEUE=", "TENQ_TYPE=",
    "TENQ_KEY=",    "TENQ_ATTEMPT=", "TENQ_TOKEN=", "TRACEPARENT="};
#define NJOBVARS (sizeof job_vars / sizeof job_vars[0])

static bool is_job_var(const char *e)
{
    for (size_t i = 0; i < NJOBVARS; i++)
        if (!strncmp(e, job_vars[i], strlen(job_vars[i]))) return true;
    return false;
}

char **work_env(const tenq_job *job)
{
    static const tenq_job none = {0};
    if (!job) job = &none;
    size_t n = 0;
    for (char **e = environ; *e; e++) n++;
    char **env = calloc(n + NJOBVARS + 1, sizeof(char *));
    if (!env) return NULL;
    size_t k = 0;
    /* the worker's own TENQ_TOKEN (a secret) is replaced by the job's
     * fencing token: handlers never see the worker's credentials */
    for (char **e = environ; *e; e++)
        if (!is_job_var(*e)) env[k++] = *e;
    size_t mine = k;
    char num[3][32];
    snprintf(num[0], sizeof num[0], "%llu", (unsigned long long)job->id);
    snprintf(num[1], sizeof num[1], "%u", job->attempt);
    snprintf(num[2], sizeof num[2], "%llu", (unsigned long long)job->token);
    const char *vals[NJOBVARS] = {num[0],   job->tenant, job->queue, job->type,
                                  job->key, num[1],      num[2],     job->traceparent};
    if (job == &none) memset(vals, 0, sizeof vals); /* the worker's own, minus the token */
    for (size_t i = 0; i < NJOBVARS; i++) {
        if (!vals[i]) continue; /* no key: TENQ_KEY unset */
        size_t l = strlen(job_vars[i]) + strlen(vals[i]) + 1;
        char *s = malloc(l);
        if (!s) {
            for (size_t j = mine; j < k; j++) free(env[j]);
            free(env);
            return NULL;
        }
        snprintf(s, l, "%s%s", job_vars[i], vals[i]);
        env[k++] = s;
    }
    env[k] = NULL;
    return env;
}

void work_env_free(char **env)
{
    if (!env) return;
    /* the job's variables are the only ones we allocated */
    for (char **e = env; *e; e++)
        if (is_job_var(*e)) free(*e);
    free(env);
}

bool work_write_some(int fd, const char *buf, size_t len, size_t *off)
{
    while (*off < len) {
        ssize_t w = write(fd, buf + *off, len - *off);
        if (w > 0) {
            *off += (size_t)w;
            continue;
        }
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
        return false; /* EPIPE: the reader closed its end */
    }
    return true;
}
