// SPDX-License-Identifier: Apache-2.0
/* The handle: its options, made and freed. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

static const char *const default_server = "http://127.0.0.1:7070";

void tenq_options_init(tenq_options *o)
{
    memset(o, 0, sizeof(*o));
    o->size = sizeof(*o);
    o->connect_timeout_ms = 5000;
    o->request_timeout_ms = 30000;
    o->failover_ms = 15000;
}

void tenq_free(void *p)
{
    free(p);
}

/* The options as this library knows them, whatever the caller's size. */
static void read_options(const tenq_options *in, tenq_options *o)
{
    tenq_options_init(o);
    if (!in) return;
    size_t n = in->size && in->size < sizeof(*o) ? in->size : sizeof(*o);
    size_t keep = o->size;
    memcpy(o, in, n);
    o->size = keep;
}

int tenq_client_new(const tenq_options *opts, tenq_client **out)
{
    *out = NULL;
    tenq_options o;
    read_options(opts, &o);
    tenq_client *c = calloc(1, sizeof(*c));
    if (!c) return TENQ_ENOMEM;
    c->fd = -1;
    c->connect_ms = o.connect_timeout_ms > 0 ? o.connect_timeout_ms : 5000;
    c->request_ms = o.request_timeout_ms > 0 ? o.request_timeout_ms : 30000;
    c->failover_ms = o.failover_ms > 0 ? o.failover_ms : o.failover_ms < 0 ? 0 : 15000;
    size_t n = o.servers && o.nservers ? o.nservers : 1;
    c->servers = calloc(n, sizeof(tq_url));
    if (!c->servers || (o.token && !(c->token = strdup(o.token)))) {
        tenq_client_free(c);
        return TENQ_ENOMEM;
    }
    *out = c;
    for (size_t i = 0; i < n; i++) {
        const char *url = o.servers && o.nservers ? o.servers[i] : default_server;
        const char *why;
        if (tq_url_parse(url, &c->servers[i], &why) != 0)
            return tq_seterr(c, TENQ_EINVALID, "bad server URL \"%s\": %s", url ? url : "", why);
        c->nservers++;
    }
    if (c->token && strpbrk(c->token, "\r\n"))
        return tq_seterr(c, TENQ_EINVALID, "the token holds a line break");
    if ((o.ca_file && !(c->ca_file = strdup(o.ca_file))) ||
        (o.cert_file && !(c->cert_file = strdup(o.cert_file))) ||
        (o.key_file && !(c->key_file = strdup(o.key_file))))
        return tq_seterr(c, TENQ_ENOMEM, "out of memory");
    /* the files are read now, so that a bad one is told at once */
    bool https = o.ca_file || o.cert_file || o.key_file;
    for (size_t i = 0; i < c->nservers; i++) https = https || c->servers[i].tls;
    if (https) return tq_tls_setup(c);
    return 0;
}

void tenq_client_free(tenq_client *c)
{
    if (!c) return;
    tq_disconnect(c);
    for (size_t i = 0; i < c->nservers; i++) tq_tls_session_free(c->servers[i].session);
    tq_tls_ctx_free(c->tls_ctx);
    free(c->ca_file);
    free(c->cert_file);
    free(c->key_file);
    free(c->servers);
    free(c->token);
    free(c->buf);
    free(c);
}
