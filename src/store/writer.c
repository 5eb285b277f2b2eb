// SPDX-License-Identifier: Apache-2.0
/* The writer thread: group commit.  It takes every batch waiting (of one
 * term), writes them in one transaction through the backend and reports
 * each one's outcome; after a failure every batch handed over before
 * store_clear_failure fails too.  Chains (store_commit_part) keep their
 * transaction open until their end.  While the server is quiet the writer
 * waits and commits at idle priority (writer_rest), and runs retention. */
#include "internal.h"

#include "base/clock.h"
#include "base/xalloc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

uint64_t store_committed_seq(const store_t *s)
{
    return __atomic_load_n(&s->committed_seq, __ATOMIC_ACQUIRE);
}

bool store_failed(const store_t *s)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    bool f = m->ok_epoch > m->epoch;
    pthread_mutex_unlock(&m->lock);
    return f;
}

void store_counters(const store_t *s, uint64_t *transactions, uint64_t *batches)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    if (transactions) *transactions = m->n_transactions;
    if (batches) *batches = m->n_batches;
    pthread_mutex_unlock(&m->lock);
}

const double store_hist_bounds_us[STORE_HIST_BUCKETS] = {100,  200,  300,   500,   1000,
                                                         2000, 5000, 10000, 50000, 1e30};

void store_commit_timing(const store_t *s, store_timing *out)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    *out = m->timing;
    pthread_mutex_unlock(&m->lock);
}

void store_fail_pending(store_t *s, int rc)
{
    pthread_mutex_lock(&s->lock);
    s->ok_epoch = s->epoch + 1;
    s->fail_rc = rc;
    pthread_mutex_unlock(&s->lock);
}

void store_use_term(store_t *s, uint64_t term)
{
    pthread_mutex_lock(&s->lock);
    s->term = term;
    pthread_mutex_unlock(&s->lock);
}

void store_clear_failure(store_t *s)
{
    pthread_mutex_lock(&s->lock);
    if (s->ok_epoch > s->epoch) s->epoch = s->ok_epoch;
    pthread_mutex_unlock(&s->lock);
}

/* ---- the writer: group commit ---------------------------------------------------- */

/* The leader keeps its clock's time in the store this often (clock.c). */
#define CLOCK_SAVE_EVERY_MS 10000

static int64_t mono_ms(void)
{
    return tq_mono_ns() / 1000000;
}

/* Keeps the clock's time in the store when CLOCK_SAVE_EVERY_MS have passed
 * since *last (monotonic), while leading and healthy.  Under s->lock,
 * released meanwhile. */
static void clock_save_due(store_t *s, int64_t *last)
{
    bool lead = s->ok_epoch <= s->epoch && (!s->opts.elect || s->term);
    if (!lead || mono_ms() - *last < CLOCK_SAVE_EVERY_MS) return;
    uint64_t term = s->term;
    pthread_mutex_unlock(&s->lock);
    pthread_mutex_lock(&s->db_lock);
    int rc = store_clock_save(s, term);
    pthread_mutex_unlock(&s->db_lock);
    pthread_mutex_lock(&s->lock);
    /* a failure is tried again at the next turn, not at once */
    *last = mono_ms() - (rc ? CLOCK_SAVE_EVERY_MS - 1000 : 0);
}

/* Reports each batch of arr[0..n) with its outcome (in the order handed
 * over) and frees them. */
static void post_batches(store_t *s, store_batch **arr, size_t n, size_t failed, int fail_rc,
                         int rc)
{
    for (size_t i = 0; i < n; i++) {
        store_result *r = xcalloc(1, sizeof(*r));
        r->kind = 0;
        r->seq = arr[i]->seq;
        r->rc = i < failed ? (fail_rc ? fail_rc : TENQ_EUNAVAILABLE) : rc;
        store_post_result(s, r);
        store_batch_free(arr[i]);
    }
}

/* ---- the writer's priority ---------------------------------------------------------
 * On a machine with few cores the writer's commit (SQLite's work, the
 * fsync's requests and their interrupts) lands beside whatever a commit's
 * own request woke: in the peer benchmark's pickup test, the worker that a
 * submit woke.  While the server is quiet the writer therefore waits for
 * work, and commits, at idle priority (SCHED_IDLE): any other thread that
 * wants the CPU runs first and a woken thread preempts it at once, while
 * the commit still runs as soon as a CPU is free.  When work comes faster
 * (more than one batch waiting, a chain, or batches less than 1 ms
 * apart on a moving average) it runs at normal priority, so a busy
 * server's commits never wait behind its clients.  (A rule on the share
 * of time spent waiting instead cost W4 a fifth of its rate: there the
 * workers wait on each commit, so the writer waits half the time too.)
 * And since a thread at idle priority gets next to nothing of a CPU that
 * normal threads keep busy (measured: acknowledgements 212 ms at the
 * median with four spinning processes on 2 cores, against 0.9 ms), the
 * caller keeps a watchdog: a batch not committed a few ms after it was handed over, with
 * the writer waiting for a CPU, gets the writer normal priority back for a
 * second (store_writer_check).  Returning a thread from SCHED_IDLE needs
 * CAP_SYS_NICE or an RLIMIT_NICE of 20; without either the writer stays at
 * normal priority (probed once, by a thread of its own, at open). */

/* Quiet: the writer waited this long for each batch, on a moving average. */
#define WRITER_QUIET_NS 1000000

static void *probe_main(void *arg)
{
    bool *ok = arg;
    struct sched_param sp = {0};
    *ok = pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp) == 0 &&
          pthread_setschedparam(pthread_self(), SCHED_OTHER, &sp) == 0;
    return NULL;
}

/* Can this process return a thread from SCHED_IDLE to SCHED_OTHER? */
bool store_writer_may_leave_idle(void)
{
    bool ok = false;
    pthread_t t;
    if (pthread_create(&t, NULL, probe_main, &ok) != 0) return false;
    pthread_join(t, NULL);
    return ok;
}

/* Under s->lock; t: the writer (pthread_self() in the writer itself). */
static void writer_set_policy(store_t *s, pthread_t t, int policy)
{
    if (s->writer_policy == policy) return;
    struct sched_param sp = {0};
    if (pthread_setschedparam(t, policy, &sp) == 0)
        __atomic_store_n(&s->writer_policy, policy, __ATOMIC_RELAXED);
}

/* Under s->lock, with nothing to do: the priority to wait at. */
static void writer_rest(store_t *s)
{
    if (!s->writer_may_idle) return;
    bool quiet = s->writer_wait_ns > WRITER_QUIET_NS && tq_mono_ns() >= s->writer_normal_until_ns;
    writer_set_policy(s, pthread_self(), quiet ? SCHED_IDLE : SCHED_OTHER);
}

/* Is the writer thread runnable (waiting for a CPU, or on one)? */
static bool writer_runnable(const store_t *s)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", s->writer_tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return true;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return true;
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return !p || p[1] != ' ' || p[2] == 'R';
}

bool store_writer_may_idle(const store_t *s)
{
    return s->writer_may_idle;
}

bool store_writer_idle(const store_t *s)
{
    return __atomic_load_n(&s->writer_policy, __ATOMIC_RELAXED) == SCHED_IDLE;
}

bool store_writer_check(store_t *s, uint64_t seq)
{
    bool again = false;
    pthread_mutex_lock(&s->lock);
    /* (a batch that failed is not committed either, but no longer waits) */
    bool waiting = (s->pending || s->writer_busy) && store_committed_seq(s) < seq;
    if (s->writer_policy == SCHED_IDLE && waiting && s->writer_tid) {
        if (writer_runnable(s)) {
            writer_set_policy(s, s->writer, SCHED_OTHER);
            s->writer_normal_until_ns = tq_mono_ns() + 1000000000;
            s->n_writer_raised++;
        } else {
            again = true;
        }
    }
    pthread_mutex_unlock(&s->lock);
    return again;
}

uint64_t store_writer_raised(const store_t *s)
{
    store_t *m = (store_t *)s;
    pthread_mutex_lock(&m->lock);
    uint64_t n = m->n_writer_raised;
    pthread_mutex_unlock(&m->lock);
    return n;
}

void *store_writer_main(void *arg)
{
    store_t *s = arg;
    /* the clock's time is kept as soon as this server leads, then every
     * CLOCK_SAVE_EVERY_MS */
    int64_t last_prune = 0, last_clock = INT64_MIN / 2;
    /* A chain (store_commit_part) applied so far, in a transaction left
     * open, with the write connection kept (db_lock held) until its end. */
    store_batch **chain = NULL;
    size_t nchain = 0, capchain = 0;
    double chain_us = 0;
    pthread_setname_np(pthread_self(), "tenq-writer");
    pthread_mutex_lock(&s->lock);
    s->writer_tid = (int)gettid();
    for (;;) {
        if (!s->pending && !s->stopping && !nchain) writer_rest(s);
        int64_t waited_from = tq_mono_ns();
        while (!s->pending && !s->stopping && nchain) pthread_cond_wait(&s->cond, &s->lock);
        while (!s->pending && !s->stopping) {
            clock_save_due(s, &last_clock);
            if (s->pending || s->stopping) break;
            struct timespec until; /* s->cond waits by the monotonic clock */
            clock_gettime(CLOCK_MONOTONIC, &until);
            until.tv_sec += 1;
            int w = pthread_cond_timedwait(&s->cond, &s->lock, &until);
            if (w == ETIMEDOUT && !s->pending) {
                /* retention only while healthy, and only by the leader */
                bool prune = s->ok_epoch <= s->epoch && (!s->opts.elect || s->term);
                uint64_t term = s->term;
                pthread_mutex_unlock(&s->lock);
                if (prune && !s->opts.no_retention && mono_ms() - last_prune >= 1000) {
                    /* Prune in small steps; stop as soon as work comes in.
                     * By retention's clock, never the wall clock: finished_at
                     * is on the caller's clock, and a wall clock stepped
                     * ahead must delete nothing early. */
                    for (;;) {
                        pthread_mutex_lock(&s->db_lock);
                        long n = store_retention_step(s, store_retention_clock(s), term);
                        pthread_mutex_unlock(&s->db_lock);
                        if (n < s->opts.retention_batch) break;
                        pthread_mutex_lock(&s->lock);
                        bool busy = s->pending || s->stopping;
                        pthread_mutex_unlock(&s->lock);
                        if (busy) break;
                    }
                    last_prune = mono_ms();
                }
                pthread_mutex_lock(&s->lock);
            }
        }
        if (!s->pending && s->stopping) break;
        int64_t took_at = tq_mono_ns();
        /* The batches waiting, up to the first of another term: one
         * transaction checks one term. */
        store_batch *list = s->pending, *last = list;
        while (last->next && last->next->term == list->term) last = last->next;
        /* more than one batch waiting, or a chain: work comes faster than
         * one commit at a time, which a busy server's clients wait on */
        if (list->next || list->more || nchain) writer_set_policy(s, pthread_self(), SCHED_OTHER);
        s->pending = last->next;
        if (!s->pending) s->pending_tail = NULL;
        last->next = NULL;
        uint64_t ok_epoch = s->ok_epoch;
        int fail_rc = s->fail_rc;
        if (s->opts.elect && list->term == 0) { /* made by no leader: never written */
            ok_epoch = UINT64_MAX;
            fail_rc = TENQ_ENOT_LEADER;
        }
        s->writer_busy = true;
        pthread_mutex_unlock(&s->lock);

        /* Batches from before a failure fail; the rest go in one transaction,
         * left open when the last of them says more of its chain follows. */
        size_t n = 0;
        for (store_batch *b = list; b; b = b->next) n++;
        store_batch **arr = xmalloc((n ? n : 1) * sizeof(*arr));
        size_t k = 0, live = 0;
        for (store_batch *b = list; b; b = b->next) arr[k++] = b;
        while (live < n && arr[live]->epoch < ok_epoch) live++;
        bool more = live < n && arr[n - 1]->more;
        int rc = 0;
        double us = 0;
        if (live < n && s->opts.test_commit_delay_ms > 0 && !more)
            usleep((useconds_t)s->opts.test_commit_delay_ms * 1000);
        if (live < n) {
            struct timespec ta, tb;
            clock_gettime(CLOCK_MONOTONIC, &ta);
            store_group g;
            store_group_build(&g, arr + live, n - live);
            g.term = list->term;
            if (!nchain) pthread_mutex_lock(&s->db_lock);
            rc = s->be->apply(s, &g, nchain == 0, !more);
            if (rc || !more) pthread_mutex_unlock(&s->db_lock);
            store_group_free(&g);
            clock_gettime(CLOCK_MONOTONIC, &tb);
            us = (double)(tb.tv_sec - ta.tv_sec) * 1e6 + (double)(tb.tv_nsec - ta.tv_nsec) / 1e3;
        }
        if (more && !rc) {
            /* Applied, not committed: the chain's end reports them all. */
            post_batches(s, arr, live, live, fail_rc, 0);
            if (nchain + n - live > capchain) {
                capchain = (nchain + n - live) * 2;
                chain = xrealloc(chain, capchain * sizeof(*chain));
            }
            for (size_t i = live; i < n; i++) chain[nchain++] = arr[i];
            chain_us += us;
            free(arr);
            pthread_mutex_lock(&s->lock);
            continue;
        }
        us += chain_us;
        chain_us = 0;
        pthread_mutex_lock(&s->lock);
        if (rc != 0) {
            /* Everything handed over so far was built on changes that were
             * not kept: it all fails until the caller has reloaded. */
            s->ok_epoch = s->epoch + 1;
            s->fail_rc = rc;
        } else if (live < n) {
            __atomic_store_n(&s->committed_seq, arr[n - 1]->seq, __ATOMIC_RELEASE);
            s->n_transactions++;
            s->n_batches += nchain + n - live;
            int k = 0;
            while (k < STORE_HIST_BUCKETS - 1 && us > store_hist_bounds_us[k]) k++;
            s->timing.counts[k]++;
            s->timing.total_us += us;
        }
        s->writer_busy = false;
        pthread_mutex_unlock(&s->lock);
        post_batches(s, chain, nchain, 0, fail_rc, rc);
        nchain = 0;
        post_batches(s, arr, n, live, fail_rc, rc);
        free(arr);
        pthread_mutex_lock(&s->lock);
        s->writer_wait_ns = 0.8 * s->writer_wait_ns + 0.2 * (double)(took_at - waited_from);
        clock_save_due(s, &last_clock);
    }
    /* a clean stop keeps the time it stopped at */
    if (!nchain) clock_save_due(s, &(int64_t){INT64_MIN / 2});
    pthread_mutex_unlock(&s->lock);
    if (nchain) { /* stopped inside a chain (a caller that never ended it) */
        s->be->abandon(s);
        pthread_mutex_unlock(&s->db_lock);
        post_batches(s, chain, nchain, 0, 0, TENQ_EUNAVAILABLE);
    }
    free(chain);
    return NULL;
}

static uint64_t hand_over(store_t *s, store_batch *b, bool more)
{
    b->more = more;
    pthread_mutex_lock(&s->lock);
    uint64_t seq = b->seq = ++s->next_seq; /* b may be gone once unlocked */
    b->epoch = s->epoch;
    b->term = s->term;
    b->next = NULL;
    if (s->pending_tail)
        s->pending_tail->next = b;
    else
        s->pending = b;
    s->pending_tail = b;
    pthread_cond_signal(&s->cond);
    pthread_mutex_unlock(&s->lock);
    return seq;
}

uint64_t store_commit(store_t *s, store_batch *b)
{
    return hand_over(s, b, false);
}

uint64_t store_commit_part(store_t *s, store_batch *b)
{
    return hand_over(s, b, store_can_chain(s));
}

bool store_can_chain(const store_t *s)
{
    return s->be->abandon != NULL;
}

int store_commit_wait(store_t *s, store_batch *b)
{
    s->sync_done = false;
    s->sync_seq = store_commit(s, b);
    while (!s->sync_done) {
        struct pollfd p = {.fd = s->efd, .events = POLLIN};
        poll(&p, 1, 100);
        store_dispatch(s);
    }
    return s->sync_rc;
}
