// SPDX-License-Identifier: Apache-2.0
/* Calls: a request through failover (failover.c) and the exchange
 * (conn.c), its non-2xx answer turned into an error code with the
 * server's message and field. */
#include "internal.h"
#include "base/clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
