// SPDX-License-Identifier: Apache-2.0
/* A request held while something runs for it elsewhere (read_ctx.c): a
 * read on the store's reader thread, a commit to wait for.  The client may
 * leave meanwhile, and http.c then calls on_abort: the request must not be
 * touched after.  So a context that outlives the handler embeds a
 * read_ctx, holds the request in it, and takes it back when its callback
 * runs: NULL when the client left (the context is then only freed). */
#ifndef TENQ_API_READ_CTX_H
#define TENQ_API_READ_CTX_H

#include "http.h"

typedef struct read_ctx {
    http_req *req; /* NULL once the client left, or once taken */
} read_ctx;

/* Holds req in c until read_ctx_take (req->user is c). */
void read_ctx_hold(read_ctx *c, http_req *req);
/* Detaches the request from c: the request, or NULL when the client left. */
http_req *read_ctx_take(read_ctx *c);

#endif
