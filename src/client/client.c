// SPDX-License-Identifier: Apache-2.0
/* The handle, its errors, and calls that turn answers into error codes. */
#include "internal.h"
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

const char *tenq_errmsg(const tenq_client *c)
{
    return c ? c->err : "no client handle";
}

const char *tenq_errfield(const tenq_client *c)
{
    return c && c->field[0] ? c->field : NULL;
}

int tenq_errstatus(const tenq_client *c)
{
    return c ? c->status : 0;
}

int tq_seterr(tenq_client *c, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    c->field[0] = 0;
    return code;
}

int tq_refuse(tenq_client *c, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->err, sizeof c->err, fmt, ap);
    va_end(ap);
    snprintf(c->field, sizeof c->field, "%s", field);
    return TENQ_EINVALID;
}

void tq_clearerr(tenq_client *c)
{
    c->err[0] = 0;
    c->field[0] = 0;
    c->status = 0;
}

/* A non-2xx answer: its error word, message and field. */
static int answer_error(tenq_client *c)
{
    tq_span a, e = {0};
    if (!tq_scan_object(c->body, c->body_len, &a) || !tq_obj_get(a, "error", &e)) e = (tq_span){0};
    char msg[sizeof c->err - 96], field[sizeof c->field];
    int code = tq_error_read(e, c->status, msg, sizeof msg, field, sizeof field);
    if (*msg) {
        /* a refused argument's field goes into the message too, unless it
         * already says it (for "no job 42" the field "id" would be noise) */
        bool name_field =
            code == TENQ_EINVALID || code == TENQ_ETOO_LARGE || code == TENQ_EFORBIDDEN;
        if (name_field && *field && !strstr(msg, field))
            snprintf(c->err, sizeof c->err, "%s (field %s)", msg, field);
        else
            snprintf(c->err, sizeof c->err, "%s", msg);
    } else {
        snprintf(c->err, sizeof c->err, "HTTP %d from the server%s%.200s", c->status,
                 c->body_len ? ": " : "", c->body);
    }
    snprintf(c->field, sizeof c->field, "%s", field);
    /* one line, whatever a proxy put in its page */
    for (char *p = c->err; *p; p++)
        if ((unsigned char)*p < 0x20) *p = ' ';
    return code;
}

int tq_call(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
            int64_t extra_ms)
{
    int64_t until = tq_mono_ms() + c->failover_ms;
    int pause_ms = 50, hops = 0;
    for (;;) {
        tq_clearerr(c);
        int rc = tq_exchange(c, method, path, body, len, extra_ms);
        tq_next next = tq_failover_next(c, rc, method, path, &hops);
        int64_t left = until - tq_mono_ms();
        if (next != TQ_DONE && left > 0) {
            if (next == TQ_AGAIN_NOW) continue;
            if (!tq_pause(c, (int)(pause_ms < left ? pause_ms : left)))
                return rc ? rc : answer_error(c);
            pause_ms = pause_ms * 2 > 1000 ? 1000 : pause_ms * 2;
            continue;
        }
        if (rc != 0) return rc;
        if (c->status >= 200 && c->status < 300) return 0;
        return answer_error(c);
    }
}

int tq_call_text(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
                 int64_t extra_ms, tq_span *answer)
{
    if (answer) *answer = (tq_span){0};
    int rc = tq_call(c, method, path, body, len, extra_ms);
    if (rc != 0 || !answer) return rc;
    if (!tq_scan_object(c->body, c->body_len, answer))
        return tq_seterr(c, TENQ_EPROTOCOL, "the server's answer is not a JSON object");
    return 0;
}

int tenq_request(tenq_client *c, const char *method, const char *path, const char *body, size_t len,
                 int *status, char **response)
{
    if (status) *status = 0;
    if (response) *response = NULL;
    if (!c) return TENQ_EINVALID;
    tq_clearerr(c);
    if (!method || !*method || strpbrk(method, " \r\n") || !path || path[0] != '/' ||
        strpbrk(path, " \r\n"))
        return tq_seterr(c, TENQ_EINVALID, "a request needs a method and a path starting with /");
    int rc = tq_call(c, method, path, body, body ? len : 0, 0);
    if (c->status == 0) return rc;
    if (status) *status = c->status;
    if (response) {
        char *r = malloc(c->body_len + 1);
        if (!r) return tq_seterr(c, TENQ_ENOMEM, "out of memory");
        memcpy(r, c->body, c->body_len + 1);
        *response = r;
    }
    return rc;
}

int tq_post_buf(tenq_client *c, const char *path, tq_buf *b, int64_t extra_ms, tq_span *a)
{
    if (a) *a = (tq_span){0};
    int rc = b->oom ? tq_seterr(c, TENQ_ENOMEM, "out of memory")
                    : tq_call_text(c, "POST", path, b->p, b->len, extra_ms, a);
    free(b->p);
    *b = (tq_buf){0};
    return rc;
}

int tq_post_walk(tenq_client *c, const char *path, tq_buf *b, int64_t extra_ms, tq_iter *top)
{
    int rc = tq_post_buf(c, path, b, extra_ms, NULL);
    tq_span a;
    if (rc == 0 && !(tq_obj_outline(c->body, c->body_len, &a) && tq_obj_begin(top, a)))
        rc = tq_seterr(c, TENQ_EPROTOCOL, "the server's answer is not a JSON object");
    return rc;
}
