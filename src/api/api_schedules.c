// SPDX-License-Identifier: Apache-2.0
/* Periodic jobs over HTTP: PUT, GET, DELETE /v1/schedules/{name}, GET
 * /v1/schedules, POST /v1/schedules/{name}/pause|resume (docs/API.md).
 * Admin tokens manage every schedule; a tenant token only its own tenant's
 * (within its queues), and sees no other. */
#include "auth.h"
#include "clock.h"
#include "commit.h"
#include "cron.h"
#include "handlers.h"
#include "http.h"
#include "jbuf.h"
#include "jobread.h"
#include "reply.h"
#include "request.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdio.h>

#define NEXT_RUNS 5 /* the next ticks GET shows */

static void json_schedule(jbuf *b, const schedule *x, int64_t now, int runs, bool hide)
{
    jb_obj(b);
    jb_kstr(b, "name", x->name);
    jb_kstr(b, "cron", x->cron_text);
    jb_kstr(b, "timezone", x->timezone);
    jb_kstr(b, "missed", cron_missed_words[x->missed]);
    jb_kbool(b, "paused", x->paused);
    jb_key(b, "job");
    jb_obj(b);
    jb_kstr(b, "tenant", x->tenant);
    jb_kstr(b, "queue", x->queue);
    jb_kstr(b, "type", x->type);
    if (hide)
        jb_kbool(b, "data_hidden", true);
    else
        jb_kraw(b, "args", x->args);
    if (x->key) jb_kstr(b, "key", x->key);
    jb_kint(b, "priority", x->priority);
    if (x->unique_key) jb_kstr(b, "unique_key", x->unique_key);
    jb_kbool(b, "unique", x->unique);
    if (x->max_attempts) jb_kint(b, "max_attempts", x->max_attempts);
    if (x->timeout_ms) jb_kint(b, "timeout_ms", x->timeout_ms);
    jb_obj_end(b);
    jb_key(b, "last_tick");
    if (x->last_tick)
        jb_int(b, x->last_tick);
    else
        jb_null(b);
    if (x->last_job) jb_kint(b, "last_job", (long long)x->last_job);
    jb_key(b, "next_tick");
    if (x->paused || x->broken || x->next_tick == INT64_MAX)
        jb_null(b);
    else
        jb_int(b, x->next_tick);
    if (runs >= 0) {
        jb_key(b, "next_runs");
        jb_arr(b);
        if (!x->paused && !x->broken) {
            int64_t t = x->next_tick > now ? x->next_tick - 1 : now;
            for (int i = 0; i < runs && (t = cron_next(x, t)) >= 0; i++) jb_int(b, t);
        }
        jb_arr_end(b);
    }
    if (x->last_error) jb_kstr(b, "last_error", x->last_error);
    jb_kint(b, "created_at", x->created_at);
    jb_kint(b, "updated_at", x->updated_at);
    jb_obj_end(b);
}

/* The schedule named by the path, if this principal may see it; else
 * answers 404 (another tenant's schedule is not there for a tenant token). */
static schedule *find_visible(server *s, http_req *req, const principal *who, const char *name)
{
    schedule *x = srv_cron_find(s, name);
    if (!x || !auth_may_see_job(who, x->tenant, x->queue)) {
        reply_error(req, TENQ_ENOT_FOUND, NULL, "no schedule named %.100s", name);
        return NULL;
    }
    return x;
}

static int by_name(const void *a, const void *b)
{
    return strcmp((*(schedule *const *)a)->name, (*(schedule *const *)b)->name);
}

void h_schedules(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tbuf[QUERY_NAME_BUF];
    const char *tenant;
    long long runs;
    if (!req_query_name(req, "tenant", ENGINE_NAME, tbuf, &tenant) ||
        !req_query_num(req, "runs", 1, 0, NEXT_RUNS, &runs))
        return;
    schedule **all;
    size_t n = srv_cron_all(s, &all);
    qsort(all, n, sizeof(*all), by_name);
    int64_t now = srv_now(s);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "schedules");
    jb_arr(&b);
    for (size_t i = 0; i < n; i++) {
        if (!auth_may_see_job(who, all[i]->tenant, all[i]->queue)) continue;
        if (tenant && strcmp(tenant, all[i]->tenant) != 0) continue;
        json_schedule(&b, all[i], now, (int)runs, who->hide_data);
    }
    jb_arr_end(&b);
    jb_obj_end(&b);
    free(all);
    reply_json(req, 200, &b);
}

void h_schedule_get(server *s, http_req *req, const principal *who, const char **args)
{
    schedule *x = find_visible(s, req, who, args[0]);
    if (!x) return;
    jbuf b;
    jb_init(&b);
    json_schedule(&b, x, srv_now(s), NEXT_RUNS, who->hide_data);
    reply_json(req, 200, &b);
}

static const char *const put_fields[] = {"cron", "timezone", "missed", "paused", "job", NULL};
static const char *const job_fields[] = {"tenant",       "queue",      "type",       "args",
                                         "key",          "priority",   "unique_key", "unique",
                                         "max_attempts", "timeout_ms", NULL};

static char *dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

/* The schedule a PUT body describes, checked whole (nothing changes on a
 * refusal, which names the field): NULL once answered. */
static schedule *read_schedule(server *s, http_req *req, const principal *who, const char *name,
                               json_t *body)
{
    const char *cron = NULL, *tz = "UTC", *missed = "skip";
    bool paused = false;
    if (!req_only_fields(req, body, put_fields) || !req_str(req, body, "cron", &cron, true) ||
        !req_str(req, body, "timezone", &tz, false) ||
        !req_str(req, body, "missed", &missed, false) ||
        !req_bool(req, body, "paused", &paused, NULL))
        return NULL;
    if (!tz) tz = "UTC";
    if (!missed) missed = "skip";
    int m = cron_missed_parse(missed);
    if (m < 0) {
        reply_error(req, TENQ_EINVALID, "missed", "missed must be skip, once or each");
        return NULL;
    }
    json_t *job = json_object_get(body, "job");
    if (!json_is_object(job)) {
        reply_error(req, TENQ_EINVALID, "job",
                    "job is required: an object with the job's fields (tenant, queue, type, "
                    "args, ...)");
        return NULL;
    }
    const char *unknown = obj_unknown_field(job, job_fields);
    if (unknown) {
        char field[80];
        snprintf(field, sizeof field, "job.%.60s", unknown);
        reply_error(req, TENQ_EINVALID, field, "job: unknown field \"%s\"", unknown);
        return NULL;
    }
    engine_submit_req r;
    char *args = NULL;
    engine_err err;
    int64_t now = srv_now(s);
    char field[80];
    if (!read_job(job, who, &r, &args, &err) ||
        (err.code = engine_submit_check(s->e, now, &r, &err)) != 0) {
        snprintf(field, sizeof field, "job.%s", err.field ? err.field : "");
        reply_error(req, err.code, field, "job: %s", err.message);
        free(args);
        return NULL;
    }
    schedule *old = srv_cron_find(s, name);
    if (old && !auth_may_see_job(who, old->tenant, old->queue)) {
        reply_error(req, TENQ_ECONFLICT, NULL, "the name %s is taken by another tenant's schedule",
                    name);
        free(args);
        return NULL;
    }
    schedule *x = xcalloc(1, sizeof(*x));
    x->name = xstrdup(name);
    x->cron_text = xstrdup(cron);
    x->timezone = xstrdup(tz);
    x->missed = (cron_missed)m;
    x->paused = paused;
    x->tenant = xstrdup(r.tenant);
    x->queue = xstrdup(r.queue);
    x->type = xstrdup(r.type);
    x->args = args ? args : xstrdup("{}");
    x->key = dup_or_null(r.key);
    x->unique_key = dup_or_null(r.unique_key);
    x->priority = r.priority;
    x->unique = r.unique;
    x->max_attempts = r.max_attempts;
    x->timeout_ms = r.timeout_ms;
    char why[400];
    if (cron_compile(s, x, why, sizeof why) != 0) {
        bool tz_bad = strncmp(why, "timezone", 8) == 0;
        reply_error(req, TENQ_EINVALID, tz_bad ? "timezone" : "cron", "%s", why);
        cron_schedule_free(x);
        return NULL;
    }
    return x;
}

void h_schedule_put(server *s, http_req *req, const principal *who, const char **args)
{
    const char *name = args[0];
    if (!req_name_ok(req, ENGINE_NAME, "name", name)) return;
    json_t *body = req_body(req);
    if (!body) return;
    schedule *x = read_schedule(s, req, who, name, body);
    json_decref(body);
    if (!x) return;
    bool created = srv_cron_find(s, name) == NULL;
    int64_t now = srv_now(s);
    srv_cron_put(s, x, now);
    jbuf b;
    jb_init(&b);
    json_schedule(&b, x, now, NEXT_RUNS, false);
    srv_commit_reply(s, req, created ? 201 : 200, &b);
}

void h_schedule_delete(server *s, http_req *req, const principal *who, const char **args)
{
    schedule *x = find_visible(s, req, who, args[0]);
    if (!x) return;
    srv_cron_delete(s, x);
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kbool(&b, "deleted", true);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}

static void pause_resume(server *s, http_req *req, const principal *who, const char *name,
                         bool paused)
{
    schedule *x = find_visible(s, req, who, name);
    if (!x) return;
    if (x->broken) {
        reply_error(req, TENQ_ECONFLICT, NULL, "schedule %s does not tick: %s", x->name,
                    x->last_error ? x->last_error : "");
        return;
    }
    int64_t now = srv_now(s);
    srv_cron_pause(s, x, paused, now);
    jbuf b;
    jb_init(&b);
    json_schedule(&b, x, now, NEXT_RUNS, false);
    srv_commit_reply(s, req, 200, &b);
}

void h_schedule_pause(server *s, http_req *req, const principal *who, const char **args)
{
    pause_resume(s, req, who, args[0], true);
}

void h_schedule_resume(server *s, http_req *req, const principal *who, const char **args)
{
    pause_resume(s, req, who, args[0], false);
}
