// SPDX-License-Identifier: Apache-2.0
/* POST /v1/jobs/bulk: an action on every job a filter matches (cancel,
 * retry now, set priority: in the engine; delete finished jobs: in the
 * store), or a dry run that counts them.  A tenant token acts on its own
 * jobs only. */
#include "audit.h"
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BULK_MAX 100000

static const char *const actions[] = {"cancel", "retry_now", "set_priority", "delete", NULL};
enum { A_CANCEL, A_RETRY_NOW, A_PRIORITY, A_DELETE };

/* The states each action applies to: the engine's table for its own
 * actions; delete takes finished jobs (dead ones are the morgue's). */
static uint32_t action_states(int action)
{
    static const engine_bulk_action kinds[] = {ENGINE_BULK_CANCEL, ENGINE_BULK_RETRY_NOW,
                                               ENGINE_BULK_PRIORITY};
    if (action == A_DELETE)
        return (1u << ENGINE_SUCCEEDED) | (1u << ENGINE_CANCELLED) | (1u << ENGINE_MERGED) |
               (1u << ENGINE_EXPIRED);
    return engine_bulk_states(kinds[action]);
}

/* "state": one name or a non-empty list; each must be one the action
 * applies to (400 naming state, with the ones it takes, otherwise). */
static bool read_states(http_req *req, json_t *body, int action, uint32_t *out)
{
    *out = 0;
    json_t *v = json_object_get(body, "state");
    if (!v) return true;
    uint32_t takes = action_states(action);
    json_t *list = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
    size_t i;
    json_t *x;
    bool ok = json_array_size(list) > 0;
    json_array_foreach(list, i, x)
    {
        int st = json_is_string(x) ? engine_state_parse(json_string_value(x)) : -1;
        if (st < 0 || !(takes & (1u << st))) ok = false;
        if (!ok) break;
        *out |= 1u << st;
    }
    json_decref(list);
    if (!ok) {
        char words[200];
        size_t n = 0;
        for (int st = 0; st < ENGINE_NSTATES && n < sizeof words; st++)
            if (takes & (1u << st))
                n += (size_t)snprintf(words + n, sizeof words - n, "%s%s", n ? ", " : "",
                                      engine_state_name((engine_state)st));
        reply_error(req, TENQ_EINVALID, "state", "%s applies to jobs %s (one, or a list of them)",
                    actions[action], words);
    }
    return ok;
}

void h_jobs_bulk(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    json_t *body = req_body(req);
    if (!body) return;
    static const char *const fields[] = {"action",        "dry_run",        "limit", "priority",
                                         "tenant",        "queue",          "type",  "key",
                                         "created_after", "created_before", "state", NULL};
    engine_job_filter f = {0};
    const char *action_word = NULL;
    long long limit = BULK_MAX, priority = 0, after = 0, before = 0;
    bool dry_run = false, has_priority = false;
    int action = -1;
    /* every member is a filter or a choice whose absence widens the action
     * (any tenant, every job, not a dry run): none may be null */
    if (!req_only_fields(req, body, fields) || !req_no_null(req, body) ||
        !req_str(req, body, "action", &action_word, true))
        goto out;
    for (int i = 0; actions[i]; i++)
        if (strcmp(action_word, actions[i]) == 0) action = i;
    if (action < 0) {
        reply_error(req, TENQ_EINVALID, "action",
                    "action must be cancel, retry_now, set_priority or delete");
        goto out;
    }
    if (!req_bool(req, body, "dry_run", &dry_run, NULL) ||
        !req_int(req, body, "limit", &limit, NULL, 1, BULK_MAX) ||
        !req_int(req, body, "priority", &priority, &has_priority, ENGINE_PRIORITY_MIN,
                 ENGINE_PRIORITY_MAX) ||
        !req_name(req, body, "tenant", ENGINE_NAME, &f.tenant) ||
        !req_name(req, body, "queue", ENGINE_NAME, &f.queue) ||
        !req_name(req, body, "type", ENGINE_TYPE, &f.type) ||
        !req_name(req, body, "key", ENGINE_KEY, &f.key) ||
        !req_int(req, body, "created_after", &after, NULL, 0, INT64_MAX) ||
        !req_int(req, body, "created_before", &before, NULL, 0, INT64_MAX) ||
        !read_states(req, body, action, &f.states))
        goto out;
    f.created_after = after;
    f.created_before = before;
    if ((action == A_PRIORITY) != has_priority) {
        reply_error(req, TENQ_EINVALID, "priority",
                    has_priority ? "priority goes with set_priority only"
                                 : "set_priority needs a priority");
        goto out;
    }
    if (who->role == ROLE_TENANT && who->tok) {
        if (f.tenant && strcmp(f.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token acts on its own jobs only");
            goto out;
        }
        f.tenant = who->tok->tenant;
    }
    if (who->tok && who->tok->queues && !f.queue) {
        reply_error(req, TENQ_EINVALID, "queue", "this token is limited to queues: name one");
        goto out;
    }
    if (f.queue && who->tok && !token_allows_queue(who->tok, f.queue)) {
        reply_error(req, TENQ_EFORBIDDEN, "queue", "this token may not use queue %s", f.queue);
        goto out;
    }
    long long matched, changed;
    if (action == A_DELETE) {
        if (!f.states) f.states = action_states(A_DELETE);
        store_audit audit;
        char *mem[3];
        const store_audit *a = dry_run ? NULL : srv_audit_take(s, req, 200, &audit, mem);
        long n = store_purge_finished(s->st, &f, dry_run, (long)limit, a); /* a: in its commit */
        if (!dry_run)
            for (int i = 0; i < 3; i++) free(mem[i]);
        if (n < 0) {
            reply_error(req, (int)n, NULL, "%s", store_errmsg(s->st));
            goto out;
        }
        matched = n;
        changed = dry_run ? 0 : n;
    } else {
        static const engine_bulk_action kinds[] = {ENGINE_BULK_CANCEL, ENGINE_BULK_RETRY_NOW,
                                                   ENGINE_BULK_PRIORITY};
        size_t done = 0;
        matched = (long long)engine_bulk(s->e, srv_now(s), &f, kinds[action], (int32_t)priority,
                                         dry_run, (size_t)limit, &done);
        changed = (long long)done;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kstr(&b, "action", actions[action]);
    jb_kbool(&b, "dry_run", dry_run);
    jb_kint(&b, "matched", matched);
    jb_kint(&b, "changed", changed);
    jb_obj_end(&b);
    if (action == A_DELETE || dry_run)
        reply_json(req, 200, &b);
    else
        srv_commit_reply(s, req, 200, &b);
out:
    json_decref(body);
}
