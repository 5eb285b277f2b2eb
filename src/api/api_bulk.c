// SPDX-License-Identifier: Apache-2.0
/* POST /v1/jobs/bulk: an action on every job a filter matches (cancel,
 * retry now, set priority: in the engine; delete finished jobs: in the
 * store), or a dry run that counts them.  A tenant token acts on its own
 * jobs only. */
#include "internal.h"

#define BULK_MAX 100000

static const char *const actions[] = {"cancel", "retry_now", "set_priority", "delete", NULL};
enum { A_CANCEL, A_RETRY_NOW, A_PRIORITY, A_DELETE };

/* "state": one name or a list; each must be one the action applies to. */
static bool read_states(http_req *req, json_t *body, int action, uint32_t *out)
{
    *out = 0;
    json_t *v = json_object_get(body, "state");
    if (!v || json_is_null(v)) return true;
    json_t *list = json_is_array(v) ? json_incref(v) : json_pack("[O]", v);
    size_t i;
    json_t *x;
    bool ok = true;
    json_array_foreach(list, i, x)
    {
        int st = json_is_string(x) ? engine_state_parse(json_string_value(x)) : -1;
        bool finished = st >= 0 && engine_state_finished((engine_state)st);
        if (st < 0 || st == ENGINE_DEAD || finished != (action == A_DELETE)) {
            reply_error(req, TENQ_EINVALID, "state",
                        action == A_DELETE
                            ? "delete takes finished states: succeeded, cancelled, merged (dead "
                              "jobs: the morgue)"
                            : "this action takes unfinished states: waiting, scheduled, blocked, "
                              "ready, leased, running");
            ok = false;
            break;
        }
        *out |= 1u << st;
    }
    json_decref(list);
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
    if (!req_only_fields(req, body, fields) || !req_str(req, body, "action", &action_word, true))
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
        !req_str(req, body, "tenant", &f.tenant, false) ||
        !req_str(req, body, "queue", &f.queue, false) ||
        !req_str(req, body, "type", &f.type, false) || !req_str(req, body, "key", &f.key, false) ||
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
        if (!f.states)
            f.states = (1u << ENGINE_SUCCEEDED) | (1u << ENGINE_CANCELLED) | (1u << ENGINE_MERGED);
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
