// SPDX-License-Identifier: Apache-2.0
/* Several servers: finding the leader and following a takeover.
 *
 * A handle knows a list of servers (tenq_options.servers, or TENQ_SERVER in
 * the CLI).  One of them leads; the others are standbys (API.md, "Several
 * servers").  A call goes to the server that answered last.  A standby
 * answers 307 naming the leader (or 503 not_leader when it knows none); a
 * leader whose leadership is not certain this instant, or that reloads,
 * answers 503; a leader that died refuses connections.  Each of those
 * changed nothing, so the call goes again: at once to a leader that was
 * named (added to the list when it is new), else to the next server after
 * a pause (50 ms doubling to 1 s), for up to tenq_options.failover_ms.
 *
 * A request whose connection broke after it was sent may have been
 * applied; it goes again only when doing it twice is harmless: reads;
 * submits (libtenq gives every job an idempotency key); a worker's lease
 * (a lost lease only means its jobs run again later), start, heartbeat,
 * ack, fail and outcomes (fenced by their token; an outcome sent again is
 * answered as applied); cancels; settings (PUT). */
#include "internal.h"

#include "base/jscan.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* May this request be applied twice without harm? */
static bool repeatable(const char *method, const char *path)
{
    if (!strcmp(method, "GET") || !strcmp(method, "HEAD") || !strcmp(method, "PUT")) return true;
    if (strcmp(method, "POST") != 0) return false;
    if (!strcmp(path, "/v1/jobs") || !strcmp(path, "/v1/lease") || !strcmp(path, "/v1/outcomes"))
        return true;
    static const char *const ops[] = {"/ack", "/fail", "/heartbeat", "/start", "/cancel"};
    if (strncmp(path, "/v1/jobs/", 9) != 0) return false;
    const char *slash = strrchr(path, '/');
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(slash, ops[i])) return true;
    return false;
}

/* The leader a standby named in its answer: error.leader (also in the
 * Location and Tenq-Leader headers of a 307). */
static bool named_leader(const tenq_client *c, char *url, size_t len)
{
    tq_span a, e;
    url[0] = 0;
    if (!tq_scan_object(c->body, c->body_len, &a) || !tq_obj_get(a, "error", &e)) return false;
    tq_obj_str_to(e, "leader", url, len);
    return url[0] != 0;
}

/* Makes the server at url (added when new) the one tried first; false
 * when the URL is not one this library can reach. */
static bool go_to(tenq_client *c, const char *url)
{
    tq_url u;
    const char *why;
    if (tq_url_parse(url, &u, &why) != 0) return false;
    for (size_t i = 0; i < c->nservers; i++)
        if (!strcmp(c->servers[i].hostport, u.hostport) && c->servers[i].tls == u.tls) {
            if (c->fd >= 0 && c->fd_server != i) tq_disconnect(c);
            c->cur = i;
            return true;
        }
    tq_url *more = realloc(c->servers, (c->nservers + 1) * sizeof(*more));
    if (!more) return false;
    c->servers = more;
    c->servers[c->nservers] = u;
    tq_disconnect(c);
    c->cur = c->nservers++;
    return true;
}

/* The next server in the list is tried first. */
static void next_server(tenq_client *c)
{
    tq_disconnect(c);
    c->cur = (c->fd_server + 1) % c->nservers;
}

tq_next tq_failover_next(tenq_client *c, int rc, const char *method, const char *path, int *hops)
{
    if (rc == TENQ_ECONNECT && !c->sent) return TQ_AGAIN_LATER; /* none took a connection */
    /* (a server that does not answer in time is left for another one, when
     * there is another: asked again, it would most likely be as slow) */
    if (rc == TENQ_ECONNECT || (rc == TENQ_ETIMEOUT && !c->interrupted && c->nservers > 1)) {
        if (!repeatable(method, path)) return TQ_DONE;
        next_server(c);
        return TQ_AGAIN_LATER;
    }
    if (rc != 0) return TQ_DONE;
    bool redirect = c->status == 307;
    if (!redirect && c->status != 503) return TQ_DONE;
    char url[512];
    if (named_leader(c, url, sizeof url) && go_to(c, url)) {
        /* a leader named by a standby that another standby disputes (a
         * takeover under way): not round and round at full speed */
        return ++*hops < 3 ? TQ_AGAIN_NOW : TQ_AGAIN_LATER;
    }
    if (redirect) return TQ_DONE; /* a 307 without a leader: not ours */
    next_server(c);
    return TQ_AGAIN_LATER;
}

bool tq_pause(tenq_client *c, int ms)
{
    struct pollfd p = {c->abort_set ? c->abort_fd : -1, POLLIN, 0};
    for (;;) {
        int r = poll(&p, 1, ms);
        if (r < 0 && errno == EINTR) continue;
        return r == 0;
    }
}
