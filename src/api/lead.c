// SPDX-License-Identifier: Apache-2.0
/* The leadership of the store, for `tenq serve`.
 *
 * One server leads a store at a time (store.h, "leadership"): the leader
 * has an engine loaded from the store and serves; a standby has none and
 * sends every request to the leader (API.md, "Several servers").  Its own
 * thread (never the event loop, which must not wait on the store) runs the
 * campaigns, the renewals and the terms; a loader thread loads each new
 * engine, so that renewals go on during a long load.  They tell the loop
 * through an eventfd, and the loop installs the engine, or stops serving:
 *
 *   standby --campaign won, term T, engine loaded--> leader (term T)
 *   leader  --a commit failed--> reloading: reads from the old engine,
 *           writes answered 503; a new term, a new engine --> leader
 *   leader  --its control connection lost (PostgreSQL away)--> detached:
 *           as reloading, until it wins again (then reloads) or hears of
 *           another leader (then standby)
 *   leader  --a write refused by the fence, or another leader seen--> standby
 *
 * A leader serves only while its leadership is certain: until the send time
 * of its last renewal plus the TTL less a guard (valid_until), which comes
 * before any standby may take over (the row expires a TTL after the
 * database ran the renewal).  A process paused past that (SIGSTOP) refuses
 * everything the moment it runs again, before its thread has looked.
 *
 * What a term loads is lead_hooks.load's (term_load.c), and what the loop
 * does with the news lead_hooks.news's (lead_loop.c). */
#include "lead.h"

#include "api.h"
#include "server.h"

#include "base/clock.h"
#include "base/xalloc.h"

#include <errno.h>
#include <event2/event.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#define CAMPAIGN_MS 200 /* a standby asks this often whether it may lead */
#define RETRY_MS    250 /* after a failed term or load */

typedef struct lead {
    server *srv; /* the threads read only what never changes: cfg, st, the clock's origin */
    store_t *st;
    lead_hooks hooks;
    store_node me;
    char node[24], advertise[256], host[128];
    int64_t ttl_ms, guard_ms;
    bool forever; /* SQLite: the file's lock is the leadership; no TTL */
    int wake_fd;  /* the loop wakes the thread */
    int news_fd;  /* the threads tell the loop */
    struct event *news_ev;
    pthread_t thread, loader;
    bool thread_on, loader_on;

    pthread_mutex_t mu; /* guards the fields below */
    uint64_t leading;   /* the term this server leads under; 0: none */
    bool loading, load_failed;
    void *loaded; /* what hooks.load made for loaded_term, not yet taken by the loop */
    uint64_t loaded_term;
    store_leader known; /* who leads, as last seen */
    bool want_reload;
    bool inbox_news; /* an application's transaction committed to the inbox */
    uint64_t reload_from;
    bool stop, resign;
    char why[300]; /* why the leadership was lost */

    int64_t valid_until_ns; /* atomic: see the top */
} lead;

/* ---- shared ------------------------------------------------------------------------------ */

static void poke(int fd)
{
    uint64_t one = 1;
    ssize_t w = write(fd, &one, sizeof one);
    (void)w; /* an eventfd only fails when its counter would overflow */
}

static void drain(int fd)
{
    uint64_t n;
    ssize_t r = read(fd, &n, sizeof n);
    (void)r;
}

/* What was loaded and not taken (under mu, or with the threads ended). */
static void drop_loaded(lead *L)
{
    if (L->loaded) L->hooks.load_free(L->loaded);
    L->loaded = NULL;
}

static void set_valid(lead *L, int64_t until_ns)
{
    if (L->forever && until_ns) until_ns = INT64_MAX;
    __atomic_store_n(&L->valid_until_ns, until_ns, __ATOMIC_RELEASE);
}

bool lead_valid(const server *s)
{
    const lead *L = s->lead.thread;
    return tq_mono_ns() < __atomic_load_n(&L->valid_until_ns, __ATOMIC_ACQUIRE);
}

/* ---- the threads --------------------------------------------------------------------------- */

typedef struct load_job {
    lead *L;
    uint64_t term;
} load_job;

/* The loader: what the term serves with (hooks.load), left for the loop
 * (or dropped, if the term ended meanwhile). */
static void *loader_main(void *arg)
{
    load_job *j = arg;
    lead *L = j->L;
    uint64_t term = j->term;
    free(j);
    pthread_setname_np(pthread_self(), "tenq-loader");
    int rc = 0;
    void *loaded = L->hooks.load(L->srv, term, &rc);
    if (rc)
        log_event(LOG_WARN, "leader", "loading term %llu failed: %s", (unsigned long long)term,
                  store_errmsg(L->st));
    pthread_mutex_lock(&L->mu);
    L->loading = false;
    if (rc == 0 && L->leading == term) {
        drop_loaded(L);
        L->loaded = loaded;
        L->loaded_term = term;
        loaded = NULL;
    } else {
        L->load_failed = rc != 0;
    }
    pthread_mutex_unlock(&L->mu);
    if (loaded) L->hooks.load_free(loaded);
    poke(L->news_fd);
    poke(L->wake_fd);
    return NULL;
}

/* Starts loading an engine for the term (the thread; under no lock).  The
 * loader before it, if any, is finished first. */
static void start_load(lead *L, uint64_t term)
{
    if (L->loader_on) pthread_join(L->loader, NULL);
    L->loader_on = false;
    load_job *j = xcalloc(1, sizeof(*j));
    j->L = L;
    j->term = term;
    pthread_mutex_lock(&L->mu);
    L->loading = true;
    L->load_failed = false;
    pthread_mutex_unlock(&L->mu);
    int e = pthread_create(&L->loader, NULL, loader_main, j);
    if (e != 0) {
        log_event(LOG_ERROR, "leader", "cannot start a loader thread: %s", strerror(e));
        free(j);
        pthread_mutex_lock(&L->mu);
        L->loading = false;
        L->load_failed = true;
        pthread_mutex_unlock(&L->mu);
        return;
    }
    L->loader_on = true;
}

/* The leadership under `term` begins (or goes on, after a new term): the
 * clock of its validity starts at sent_ns (when its term or renewal was
 * asked for), and an engine is loaded for it. */
static void begin_term(lead *L, uint64_t term, int64_t sent_ns)
{
    set_valid(L, sent_ns + (L->ttl_ms - L->guard_ms) * 1000000);
    pthread_mutex_lock(&L->mu);
    L->leading = term;
    L->known.node[0] = 0;
    pthread_mutex_unlock(&L->mu);
    start_load(L, term);
}

/* The leadership is over (why: for the log and the loop). */
static void lose(lead *L, const char *why)
{
    set_valid(L, 0);
    pthread_mutex_lock(&L->mu);
    uint64_t term = L->leading;
    L->leading = 0;
    snprintf(L->why, sizeof L->why, "%s", why);
    pthread_mutex_unlock(&L->mu);
    log_event(LOG_WARN, "leader", "term %llu is over: %s", (unsigned long long)term, why);
    poke(L->news_fd);
}

/* One campaign of a standby: 1 when it now leads. */
static int campaign(lead *L, bool *quiet)
{
    uint64_t term = 0;
    store_leader who;
    int64_t sent = tq_mono_ns();
    int rc = store_campaign(L->st, &L->me, &term, &who);
    if (rc == 1) {
        log_event(LOG_INFO, "leader", "this server leads, term %llu (node %s)",
                  (unsigned long long)term, L->node);
        *quiet = false;
        begin_term(L, term, sent);
        return 1;
    }
    if (rc < 0) {
        /* the store is away: said once, until it answers again */
        if (!*quiet)
            log_event(LOG_WARN, "leader", "cannot campaign: %s; trying every %d ms",
                      store_errmsg(L->st), CAMPAIGN_MS);
        *quiet = true;
        return 0;
    }
    *quiet = false;
    if (who.evicted)
        log_event(LOG_WARN, "leader",
                  "the leader %s (%s, pid %d) stopped renewing: its connections were ended",
                  who.node, who.host, who.pid);
    pthread_mutex_lock(&L->mu);
    bool changed = strcmp(L->known.node, who.node) != 0 || L->known.term != who.term ||
                   (L->known.expires_in_ms > 0) != (who.expires_in_ms > 0);
    L->known = who;
    pthread_mutex_unlock(&L->mu);
    if (changed) poke(L->news_fd);
    return 0;
}

static void *lead_main(void *arg)
{
    lead *L = arg;
    pthread_setname_np(pthread_self(), "tenq-leader");
    int64_t renew_at = 0, retry_at = 0;
    bool quiet = false;
    for (;;) {
        pthread_mutex_lock(&L->mu);
        bool stop = L->stop, resign = L->resign, reload = L->want_reload;
        bool loading = L->loading, load_failed = L->load_failed;
        uint64_t term = L->leading, from = L->reload_from;
        L->want_reload = false;
        pthread_mutex_unlock(&L->mu);
        if (stop) {
            if (term && resign) {
                /* the time a start after this one goes on from, kept while
                 * the term can still write */
                store_keep_clock(L->st);
                store_resign(L->st, &L->me, term);
                log_event(LOG_INFO, "leader", "gave up the leadership (term %llu)",
                          (unsigned long long)term);
            }
            break;
        }
        int64_t now = tq_mono_ns();
        if (!term) {
            if (!loading && campaign(L, &quiet)) {
                renew_at = now + L->ttl_ms * 1000000 / 4;
                continue;
            }
            store_leader_wait(L->st, L->wake_fd, CAMPAIGN_MS);
            drain(L->wake_fd);
            continue;
        }
        if (reload && from == term) {
            uint64_t next = 0;
            int rc = store_new_term(L->st, &L->me, term, &next);
            if (rc == 0) {
                log_event(LOG_INFO, "leader", "reloading under term %llu",
                          (unsigned long long)next);
                begin_term(L, next, now);
                renew_at = now + L->ttl_ms * 1000000 / 4;
                continue;
            }
            if (rc == TENQ_ENOT_LEADER) {
                lose(L, store_errmsg(L->st));
                continue;
            }
            log_event(LOG_WARN, "leader", "cannot count a new term yet: %s", store_errmsg(L->st));
            pthread_mutex_lock(&L->mu);
            L->want_reload = true; /* again, after a pause */
            pthread_mutex_unlock(&L->mu);
            retry_at = now + RETRY_MS * 1000000LL;
        }
        if (load_failed && !loading && now >= retry_at) {
            start_load(L, term);
            retry_at = now + RETRY_MS * 1000000LL;
        }
        if (now >= renew_at) {
            int rc = store_renew(L->st, &L->me, term);
            if (rc != 0) {
                lose(L, store_errmsg(L->st));
                continue;
            }
            set_valid(L, now + (L->ttl_ms - L->guard_ms) * 1000000);
            renew_at = now + L->ttl_ms * 1000000 / 4;
        }
        int64_t until = renew_at;
        if ((load_failed || reload) && retry_at < until) until = retry_at;
        int64_t ms = (until - tq_mono_ns()) / 1000000;
        if (ms < 1) ms = 1;
        /* news: the control connection lost, or a notification: renew now */
        if (store_leader_wait(L->st, L->wake_fd, (int)ms) == 1) renew_at = 0;
        if (store_inbox_news(L->st)) {
            pthread_mutex_lock(&L->mu);
            L->inbox_news = true;
            pthread_mutex_unlock(&L->mu);
            poke(L->news_fd);
        }
        drain(L->wake_fd);
    }
    if (L->loader_on) pthread_join(L->loader, NULL);
    L->loader_on = false;
    return NULL;
}

/* ---- the loop's side ------------------------------------------------------------------------- */

void lead_take_news(server *s, lead_news *n)
{
    lead *L = s->lead.thread;
    drain(L->news_fd);
    pthread_mutex_lock(&L->mu);
    n->leading = L->leading;
    n->loaded = NULL;
    if (L->loaded && L->loaded_term == n->leading) {
        n->loaded = L->loaded;
        L->loaded = NULL;
    } else {
        drop_loaded(L);
    }
    store_leader known = L->known;
    n->inbox = L->inbox_news;
    L->inbox_news = false;
    snprintf(n->why, sizeof n->why, "%s", L->why);
    pthread_mutex_unlock(&L->mu);
    n->other = known.node[0] && strcmp(known.node, L->node) != 0 && known.expires_in_ms > 0;
}

static void on_news(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    server *s = arg;
    s->lead.thread->hooks.news(s);
}

void lead_reload(server *s)
{
    lead *L = s->lead.thread;
    pthread_mutex_lock(&L->mu);
    L->want_reload = true;
    L->reload_from = s->lead.term;
    pthread_mutex_unlock(&L->mu);
    poke(L->wake_fd);
}

void lead_recheck(server *s)
{
    poke(s->lead.thread->wake_fd);
}

bool lead_leader(server *s, char *url, size_t len)
{
    lead *L = s->lead.thread;
    pthread_mutex_lock(&L->mu);
    bool known = L->known.node[0] && strcmp(L->known.node, L->node) != 0 &&
                 L->known.expires_in_ms > 0 && L->known.advertise[0];
    snprintf(url, len, "%s", known ? L->known.advertise : "");
    pthread_mutex_unlock(&L->mu);
    return known;
}

const char *lead_node(const server *s)
{
    return s->lead.thread->node;
}

const char *lead_advertise(const server *s)
{
    return s->lead.thread->advertise;
}

/* ---- start and stop ----------------------------------------------------------------------------
 */

/* The URL clients reach this server at: --advertise, else the address it
 * listens on (the host's name for a wildcard address). */
static void advertise_url(lead *L, const server *s, const char *host)
{
    if (s->cfg.advertise[0]) {
        snprintf(L->advertise, sizeof L->advertise, "%s", s->cfg.advertise);
        size_t n = strlen(L->advertise);
        while (n && L->advertise[n - 1] == '/') L->advertise[--n] = 0;
        return;
    }
    bool wildcard = !strcmp(host, "0.0.0.0") || !strcmp(host, "::") || !*host;
    const char *h = wildcard ? L->host : host;
    snprintf(L->advertise, sizeof L->advertise, strchr(h, ':') ? "%s://[%s]:%d" : "%s://%s:%d",
             s->tls ? "https" : "http", h, s->port);
}

void lead_node_name(char *out, size_t len)
{
    uint8_t rnd[8] = {0};
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) {
        uint64_t x = (uint64_t)tq_mono_ns() ^ ((uint64_t)getpid() << 32);
        memcpy(rnd, &x, sizeof rnd);
    }
    out[0] = 0;
    for (int i = 0; i < 8 && 2 * (size_t)i + 3 <= len; i++)
        snprintf(out + 2 * i, 3, "%02x", rnd[i]);
}

int lead_open(server *s, const char *node, const char *listen_host, const lead_hooks *hooks)
{
    lead *L = xcalloc(1, sizeof(*L));
    s->lead.thread = L;
    L->srv = s;
    L->st = s->st;
    L->hooks = *hooks;
    L->wake_fd = L->news_fd = -1;
    pthread_mutex_init(&L->mu, NULL);
    snprintf(L->node, sizeof L->node, "%s", node);
    if (gethostname(L->host, sizeof L->host) != 0) snprintf(L->host, sizeof L->host, "localhost");
    L->host[sizeof L->host - 1] = 0;
    advertise_url(L, s, listen_host);
    L->ttl_ms = s->cfg.leader_ttl_ms;
    L->forever = !strcmp(store_backend(s->st), "sqlite");
    L->guard_ms = L->ttl_ms / 5;
    L->me = (store_node){L->node, L->advertise, L->host, (int)getpid(), L->ttl_ms};
    L->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    L->news_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (L->wake_fd < 0 || L->news_fd < 0) {
        log_event(LOG_ERROR, "leader", "eventfd: %s", strerror(errno));
        return -1;
    }
    L->news_ev = event_new(s->base, L->news_fd, EV_READ | EV_PERSIST, on_news, s);
    if (!L->news_ev || event_add(L->news_ev, NULL) != 0) {
        log_event(LOG_ERROR, "leader", "cannot watch the leadership thread");
        return -1;
    }
    return 0;
}

/* The first campaign before serving, so that a server that can lead
 * answers its first request as the leader. */
bool lead_campaign_first(server *s)
{
    lead *L = s->lead.thread;
    bool quiet = false;
    if (!campaign(L, &quiet)) return false;
    pthread_join(L->loader, NULL);
    L->loader_on = false;
    return true;
}

int lead_run(server *s)
{
    lead *L = s->lead.thread;
    int e = pthread_create(&L->thread, NULL, lead_main, L);
    if (e != 0) {
        log_event(LOG_ERROR, "leader", "cannot start the leadership thread: %s", strerror(e));
        return -1;
    }
    L->thread_on = true;
    return 0;
}

void lead_stop(server *s, bool resign)
{
    lead *L = s->lead.thread;
    if (!L) return;
    if (L->thread_on) {
        pthread_mutex_lock(&L->mu);
        L->stop = true;
        L->resign = resign;
        pthread_mutex_unlock(&L->mu);
        poke(L->wake_fd);
        pthread_join(L->thread, NULL);
        L->thread_on = false;
    } else if (L->loader_on) {
        pthread_join(L->loader, NULL);
        L->loader_on = false;
    }
}

void lead_free(server *s)
{
    lead *L = s->lead.thread;
    if (!L) return;
    lead_stop(s, false);
    if (L->news_ev) event_free(L->news_ev);
    if (L->wake_fd >= 0) close(L->wake_fd);
    if (L->news_fd >= 0) close(L->news_fd);
    drop_loaded(L);
    pthread_mutex_destroy(&L->mu);
    free(L);
    s->lead.thread = NULL;
}
