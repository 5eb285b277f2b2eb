// SPDX-License-Identifier: Apache-2.0
/* Answers in the protocol's shape (reply.c): a JSON body, or an error
 * {"error": {"code", "message", "field"}} whose code and status come from
 * the error table (include/tenq/errors.h). */
#ifndef TENQ_API_REPLY_H
#define TENQ_API_REPLY_H

#include "http.h"
#include "jbuf.h"

#include "engine/engine.h"

/* Answers with b's text (taken). */
void reply_json(http_req *req, int status, jbuf *b);
/* An error; `field` may be NULL.  429s carry Retry-After (admit.h). */
void reply_error(http_req *req, int err, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* An error whose protocol word refines err's (409 "batch_closed" is a
 * conflict): the status, the shape and Retry-After are err's, as above. */
void reply_error_word(http_req *req, int err, const char *word, const char *field, const char *fmt,
                      ...) __attribute__((format(printf, 5, 6)));
void reply_engine_err(http_req *req, const engine_err *err);

#endif
