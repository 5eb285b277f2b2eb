// SPDX-License-Identifier: Apache-2.0
/* Events: POST /v1/events (engine/steps.c, engine_event_send).
 *
 * An event of a tenant wakes every job of the tenant whose handler waits
 * for its key, its payload the result of that wait; when none waits it is
 * kept for --event-window for the first job that waits for it later.
 * Answered once committed (the steps it completed, or the kept event's
 * row); sent with an Idempotency-Key header (the client libraries send
 * one), a repeat is answered the first answer and delivers nothing again. */
#include "admit.h"
#include "auth.h"
#include "clock.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "reply.h"
#include "request.h"
#include "request_keys.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EVENT_JOBS_SHOWN 1000 /* job ids an answer lists at most */

static const char *const event_fields[] = {"tenant", "key", "payload", NULL};

void h_event_send(server *s, http_req *req, const principal *who, const char **args)
{
    rkey_ctx k;
    if (!srv_request_key_begin(s, req, who, args, h_event_send, &k)) return;
    json_t *body = req_body(req);
    if (!body) return;
    const char *tenant = NULL, *key = NULL;
    char *payload = NULL;
    if (!json_is_object(body)) {
        reply_error(req, TENQ_EINVALID, NULL, "the body must be a JSON object");
        goto out;
    }
    if (!req_only_fields(req, body, event_fields) ||
        !req_str(req, body, "tenant", &tenant, false) || !req_str(req, body, "key", &key, true))
        goto out;
    if (who->role == ROLE_TENANT && who->tok) {
        if (tenant && strcmp(tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant",
                        "this token sends events for tenant %s only", who->tok->tenant);
            goto out;
        }
        tenant = who->tok->tenant;
    } else if (!tenant) {
        reply_error(req, TENQ_EINVALID, "tenant", "tenant is required (an event is a tenant's)");
        goto out;
    }
    json_t *p = json_object_get(body, "payload");
    if (p) payload = canonical_json(p);
    uint32_t len = payload ? (uint32_t)strlen(payload) : 0;
    engine_err err;
    /* a kept event takes memory until a wait takes it or its window passes */
    if (admit_memory(&s->admit, s->e, len + strlen(key) + 128, &err) != 0) {
        reply_engine_err(req, &err);
        goto out;
    }
    uint64_t ids[EVENT_JOBS_SHOWN];
    engine_event_res res;
    if (engine_event_send(s->e, srv_now(s), tenant, key, payload, len, ids, EVENT_JOBS_SHOWN, &res,
                          &err) != 0) {
        reply_engine_err(req, &err);
        goto out;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kstr(&b, "tenant", tenant);
    jb_kstr(&b, "key", key);
    jb_kint(&b, "delivered", (long long)res.delivered);
    jb_key(&b, "jobs");
    jb_arr(&b);
    for (size_t i = 0; i < res.delivered && i < EVENT_JOBS_SHOWN; i++)
        jb_int(&b, (long long)ids[i]);
    jb_arr_end(&b);
    jb_kbool(&b, "kept", res.kept);
    jb_key(&b, "expires_at");
    if (res.kept)
        jb_int(&b, res.expires_at);
    else
        jb_null(&b);
    jb_obj_end(&b);
    srv_request_key_reply(s, req, &k, 200, &b, NULL);
out:
    free(payload);
    json_decref(body);
}
