// SPDX-License-Identifier: Apache-2.0
/* Answers in the protocol's shape (reply.h). */
#include "reply.h"

#include "admit.h"

#include "tenq/errors.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void reply_json(http_req *req, int status, jbuf *b)
{
    size_t len;
    char *body = jb_take(b, &len);
    http_reply(req, status, "application/json", NULL, body, len);
    free(body);
}

static void error_body(jbuf *b, const char *word, const char *field, const char *msg)
{
    jb_obj(b);
    jb_key(b, "error");
    jb_obj(b);
    jb_kstr(b, "code", word);
    jb_kstr(b, "message", msg);
    if (field) jb_kstr(b, "field", field);
    jb_obj_end(b);
    jb_obj_end(b);
}

static void error_reply(http_req *req, int err, const char *word, const char *field,
                        const char *fmt, va_list ap) __attribute__((format(printf, 5, 0)));

static void error_reply(http_req *req, int err, const char *word, const char *field,
                        const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    jbuf b;
    jb_init(&b);
    error_body(&b, word, field, msg);
    int status = tenq_err_http_status(err);
    if (status == 429) { /* quota_exceeded, overloaded: come back (admit.h) */
        size_t len;
        char *body = jb_take(&b, &len), hdr[48];
        snprintf(hdr, sizeof hdr, "Retry-After: %d\r\n", ADMIT_RETRY_AFTER_S);
        http_reply(req, status, "application/json", hdr, body, len);
        free(body);
        return;
    }
    reply_json(req, status, &b);
}

void reply_error(http_req *req, int err, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_reply(req, err, tenq_err_word(err), field, fmt, ap);
    va_end(ap);
}

void reply_error_word(http_req *req, int err, const char *word, const char *field, const char *fmt,
                      ...)
{
    va_list ap;
    va_start(ap, fmt);
    error_reply(req, err, word, field, fmt, ap);
    va_end(ap);
}

void reply_engine_err(http_req *req, const engine_err *err)
{
    reply_error(req, err->code, err->field, "%s", err->message);
}
