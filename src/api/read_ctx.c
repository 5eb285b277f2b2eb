// SPDX-License-Identifier: Apache-2.0
/* A request held while something runs for it elsewhere (read_ctx.h). */
#include "read_ctx.h"

#include <stddef.h>

static void read_abort(http_req *req)
{
    read_ctx *c = req->user;
    c->req = NULL;
}

void read_ctx_hold(read_ctx *c, http_req *req)
{
    c->req = req;
    req->user = c;
    req->on_abort = read_abort;
}

http_req *read_ctx_take(read_ctx *c)
{
    http_req *req = c->req;
    if (req) {
        req->on_abort = NULL;
        req->user = NULL;
    }
    c->req = NULL;
    return req;
}
