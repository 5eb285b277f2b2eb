/* Jobs: submit, read, list, wait, cancel. */
#include "internal.h"

#include "base/hash.h"

/* ---- reads from the store on behalf of a request --------------------------------- */

static void read_abort(http_req *req)
{
    read_ctx *c = req->user;
    c->req = NULL;
}

read_ctx *read_ctx_new(server *s, http_req *req, const principal *who)
{
    read_ctx *c = xcalloc(1, sizeof(*c));
    c->srv = s;
    c->req = req;
    if (who) c->who = *who;
    req->user = c;
    req->on_abort = read_abort;
    return c;
}

http_req *read_ctx_take(read_ctx *c)
{
    http_req *req = c->req;
    if (req) req->on_abort = NULL;
    c->req = NULL;
    return req;
}

/* ---- submit ------------------------------------------------------------------------- */

static const char *const job_fields[] = {
    "tenant", "queue",           "type",         "args",  "key", "priority", "run_at", "unique_key",
    "unique", "idempotency_key", "max_attempts", "score", NULL};

/* A job's fields into req; strings point into the JSON or into *args_out
 * (malloc'd canonical args).  On error fills err and returns false. */
static bool read_job(json_t *o, const principal *who, engine_submit_req *r, char **args_out,
                     engine_err *err)
{
    memset(r, 0, sizeof(*r));
    *args_out = NULL;
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v)
    {
        bool known = false;
        for (const char *const *f = job_fields; *f && !known; f++) known = !strcmp(*f, k);
        if (!known) {
            engine_errf(err, TENQ_EINVALID, k, "unknown field \"%s\"", k);
            return false;
        }
    }
#define STR(name, dst)                                                                             \
    do {                                                                                           \
        json_t *x = json_object_get(o, name);                                                      \
        if (x && !json_is_null(x)) {                                                               \
            if (!json_is_string(x) || strlen(json_string_value(x)) != json_string_length(x)) {     \
                engine_errf(err, TENQ_EINVALID, name, name " must be a string");                   \
                return false;                                                                      \
            }                                                                                      \
            dst = json_string_value(x);                                                            \
        }                                                                                          \
    } while (0)
#define INT(name, dst, lo, hi, has)                                                                \
    do {                                                                                           \
        json_t *x = json_object_get(o, name);                                                      \
        if (x && !json_is_null(x)) {                                                               \
            if (!json_is_integer(x) || json_integer_value(x) < (lo) ||                             \
                json_integer_value(x) > (hi)) {                                                    \
                engine_errf(err, TENQ_EINVALID, name,                                              \
                            name " must be an integer from %lld to %lld", (long long)(lo),         \
                            (long long)(hi));                                                      \
                return false;                                                                      \
            }                                                                                      \
            dst = json_integer_value(x);                                                           \
            has;                                                                                   \
        }                                                                                          \
    } while (0)
    STR("tenant", r->tenant);
    STR("queue", r->queue);
    STR("type", r->type);
    STR("key", r->key);
    STR("unique_key", r->unique_key);
    STR("idempotency_key", r->idempotency_key);
    INT("priority", r->priority, ENGINE_PRIORITY_MIN, ENGINE_PRIORITY_MAX, r->has_priority = true);
    INT("run_at", r->run_at, 0, (1LL << 53), (void)0);
    INT("max_attempts", r->max_attempts, 1, ENGINE_ATTEMPTS_MAX, (void)0);
    json_t *u = json_object_get(o, "unique");
    if (u && !json_is_null(u)) {
        if (!json_is_boolean(u)) {
            engine_errf(err, TENQ_EINVALID, "unique", "unique must be true or false");
            return false;
        }
        r->unique = json_is_true(u);
    }
    json_t *sc = json_object_get(o, "score");
    if (sc && !json_is_null(sc)) {
        if (!json_is_number(sc)) {
            engine_errf(err, TENQ_EINVALID, "score", "score must be a number");
            return false;
        }
        r->has_score = true;
        r->score = json_number_value(sc);
    }
#undef STR
#undef INT
    /* the tenant comes from a tenant token */
    if (who->role == ROLE_TENANT && who->tok) {
        if (r->tenant && strcmp(r->tenant, who->tok->tenant) != 0) {
            engine_errf(err, TENQ_EFORBIDDEN, "tenant", "this token submits for tenant %s only",
                        who->tok->tenant);
            return false;
        }
        r->tenant = who->tok->tenant;
    }
    if (r->queue && who->tok && !token_allows_queue(who->tok, r->queue)) {
        engine_errf(err, TENQ_EFORBIDDEN, "queue", "this token may not use queue %s", r->queue);
        return false;
    }
    json_t *a = json_object_get(o, "args");
    if (a) {
        *args_out = canonical_json(a);
        r->args = *args_out;
        r->args_len = (uint32_t)strlen(*args_out);
    }
    return true;
}

static void submit_result(jbuf *b, const engine_submit_res *res)
{
    jb_obj(b);
    if (res->code) {
        jb_key(b, "error");
        jb_obj(b);
        jb_kstr(b, "code", tenq_err_word(res->code));
        jb_kstr(b, "message", res->err.message);
        if (res->err.field) jb_kstr(b, "field", res->err.field);
        jb_obj_end(b);
    } else {
        jb_kint(b, "id", (long long)res->id);
        jb_kstr(b, "state", engine_state_name(res->state));
        jb_kbool(b, "duplicate", res->duplicate);
        jb_kbool(b, "merged", res->merged);
        if (res->replayed) jb_kbool(b, "replayed", true);
    }
    jb_obj_end(b);
}

void h_submit(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    json_t *body = parse_body(req);
    if (!body) return;
    json_t *jobs = json_object_get(body, "jobs");
    int64_t now = srv_now(s);
    if (!jobs) {
        if ((long long)req->body_len > s->cfg.max_job_bytes) {
            json_decref(body);
            reply_error(
                req, TENQ_ETOO_LARGE, NULL,
                "a single job may be at most %lld bytes; send large batches as {\"jobs\": [...]}",
                s->cfg.max_job_bytes);
            return;
        }
        engine_submit_req r;
        engine_submit_res res;
        char *canon = NULL;
        memset(&res, 0, sizeof res);
        if (!read_job(body, who, &r, &canon, &res.err)) {
            reply_engine_err(req, &res.err);
        } else if (engine_submit(s->e, now, &r, &res) != 0) {
            reply_engine_err(req, &res.err);
        } else {
            jbuf b;
            jb_init(&b);
            submit_result(&b, &res);
            srv_commit_reply(s, req, res.created ? 201 : 200, &b);
        }
        free(canon);
        json_decref(body);
        return;
    }
    if (json_object_size(body) != 1) {
        const char *k;
        json_t *v;
        json_object_foreach(body, k, v) if (strcmp(k, "jobs") != 0) break;
        reply_error(req, TENQ_EINVALID, k, "a batch holds only \"jobs\" (found \"%s\")", k);
        json_decref(body);
        return;
    }
    if (!json_is_array(jobs) || json_array_size(jobs) == 0 || json_array_size(jobs) > 10000) {
        reply_error(req, TENQ_EINVALID, "jobs", "jobs must be an array of 1 to 10,000 jobs");
        json_decref(body);
        return;
    }
    size_t n = json_array_size(jobs);
    engine_submit_res *res = xcalloc(n, sizeof(*res));
    bool any_created = false;
    for (size_t i = 0; i < n; i++) {
        json_t *o = json_array_get(jobs, i);
        engine_submit_req r;
        char *canon = NULL;
        if (!json_is_object(o)) {
            engine_errf(&res[i].err, TENQ_EINVALID, NULL, "job %zu is not an object", i);
            res[i].code = TENQ_EINVALID;
        } else if (!read_job(o, who, &r, &canon, &res[i].err)) {
            res[i].code = res[i].err.code;
        } else {
            engine_submit(s->e, now, &r, &res[i]);
            any_created |= res[i].created;
        }
        free(canon);
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_key(&b, "jobs");
    jb_arr(&b);
    for (size_t i = 0; i < n; i++) submit_result(&b, &res[i]);
    jb_arr_end(&b);
    jb_obj_end(&b);
    free(res);
    json_decref(body);
    srv_commit_reply(s, req, any_created ? 201 : 200, &b);
}

/* ---- reading a job ---------------------------------------------------------------------- */

static void on_job_rows(void *ctx, int rc, const store_rows *rows)
{
    read_ctx *c = ctx;
    http_req *req = read_ctx_take(c);
    if (req) {
        if (rc != 0) {
            reply_error(req, rc, NULL, "reading the job failed: %s", store_errmsg(c->srv->st));
        } else if (rows->n != 1 ||
                   !may_see_job(&c->who, rows->jobs[0].tenant, rows->jobs[0].queue)) {
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
        } else {
            jbuf b;
            jb_init(&b);
            json_job(&b, &rows->jobs[0], JOB_FULL, shows_token(&c->who));
            reply_json(req, 200, &b);
        }
    }
    free(c);
}

void h_get_job(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = path_id(req, args[0]);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    if (j) {
        engine_job_info in;
        engine_job_get(j, &in);
        if (!may_see_job(who, in.tenant, in.queue)) {
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
            return;
        }
        jbuf b;
        jb_init(&b);
        json_job(&b, &in, JOB_FULL, shows_token(who));
        reply_json(req, 200, &b);
        return;
    }
    /* finished: its history is in the store */
    read_ctx *c = read_ctx_new(s, req, who);
    c->id = id;
    store_get_job(s->st, id, on_job_rows, c);
}

/* ---- listing ------------------------------------------------------------------------------ */

static void on_list_rows(void *ctx, int rc, const store_rows *rows)
{
    read_ctx *c = ctx;
    http_req *req = read_ctx_take(c);
    server *s = c->srv;
    if (req) {
        if (rc != 0) {
            reply_error(req, rc, NULL, "listing failed: %s", store_errmsg(s->st));
        } else {
            jbuf b;
            jb_init(&b);
            jb_obj(&b);
            jb_key(&b, "jobs");
            jb_arr(&b);
            uint64_t last = 0;
            for (size_t i = 0; i < rows->n; i++) {
                const engine_job_info *in = &rows->jobs[i];
                last = in->id;
                if (!may_see_job(&c->who, in->tenant, in->queue)) continue;
                /* an unfinished job's freshest state is in memory */
                engine_job *j = engine_find(s->e, in->id);
                engine_job_info live;
                if (j) {
                    engine_job_get(j, &live);
                    in = &live;
                }
                json_job(&b, in, JOB_FULL, shows_token(&c->who));
            }
            jb_arr_end(&b);
            jb_key(&b, "next");
            if (rows->n == c->limit && last)
                jb_uint(&b, last);
            else
                jb_null(&b);
            jb_obj_end(&b);
            reply_json(req, 200, &b);
        }
    }
    free(c);
}

void h_list_jobs(server *s, http_req *req, const principal *who, const char **args)
{
    (void)args;
    char tenant[128], queue[128], type[256], key[512], state[32], after[32];
    store_job_query q = {0};
    q.state = -1;
    q.tenant = http_query_get(req, "tenant", tenant, sizeof tenant);
    q.queue = http_query_get(req, "queue", queue, sizeof queue);
    q.type = http_query_get(req, "type", type, sizeof type);
    q.key = http_query_get(req, "key", key, sizeof key);
    if (http_query_get(req, "state", state, sizeof state)) {
        q.state = engine_state_parse(state);
        if (q.state < 0) {
            reply_error(req, TENQ_EINVALID, "state", "unknown state %s", state);
            return;
        }
    }
    if (http_query_get(req, "after_id", after, sizeof after)) {
        char *end;
        q.before_id = strtoull(after, &end, 10);
        if (*end || !q.before_id) {
            reply_error(req, TENQ_EINVALID, "after_id", "after_id must be a job id");
            return;
        }
    }
    long long lim;
    if (!query_num(req, "limit", 50, 1, 1000, &lim)) return;
    q.limit = (uint32_t)lim;
    if (who->role == ROLE_TENANT && who->tok) {
        if (q.tenant && strcmp(q.tenant, who->tok->tenant) != 0) {
            reply_error(req, TENQ_EFORBIDDEN, "tenant", "a tenant token lists only its own jobs");
            return;
        }
        q.tenant = who->tok->tenant;
    }
    read_ctx *c = read_ctx_new(s, req, who);
    c->limit = q.limit;
    store_list_jobs(s->st, &q, on_list_rows, c);
}

/* ---- waiting ------------------------------------------------------------------------------ */

static bool is_final(engine_state st)
{
    return st == ENGINE_SUCCEEDED || st == ENGINE_CANCELLED || st == ENGINE_MERGED ||
           st == ENGINE_DEAD;
}

static void wait_register(server *s, http_req *req, const principal *who, uint64_t id,
                          int64_t timeout_ms)
{
    job_waiter *w = xcalloc(1, sizeof(*w));
    w->req = req;
    w->id = id;
    w->who = *who;
    job_waiter_add(s, w, timeout_ms);
}

static void on_wait_rows(void *ctx, int rc, const store_rows *rows)
{
    read_ctx *c = ctx;
    server *s = c->srv;
    http_req *req = read_ctx_take(c);
    if (!req) {
        free(c);
        return;
    }
    if (rc != 0) {
        reply_error(req, rc, NULL, "reading the job failed: %s", store_errmsg(s->st));
    } else if (rows->n != 1 || !may_see_job(&c->who, rows->jobs[0].tenant, rows->jobs[0].queue)) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
    } else if (is_final(rows->jobs[0].state) || c->timeout_ms == 0) {
        jbuf b;
        jb_init(&b);
        json_job(&b, &rows->jobs[0], JOB_FULL, shows_token(&c->who));
        reply_json(req, 200, &b);
    } else if (engine_find(s->e, c->id)) {
        wait_register(s, req, &c->who, c->id, c->timeout_ms);
    } else if (store_committed_seq(s->st) != c->committed_before) {
        /* a commit landed while we read: it may hold the final state */
        c->committed_before = store_committed_seq(s->st);
        c->req = req;
        req->user = c;
        read_ctx_rearm(c, req);
        store_get_job(s->st, c->id, on_wait_rows, c);
        return;
    } else {
        /* its final state is on the way to the store */
        wait_register(s, req, &c->who, c->id, c->timeout_ms);
    }
    free(c);
}

void read_ctx_rearm(read_ctx *c, http_req *req)
{
    c->req = req;
    req->user = c;
    req->on_abort = read_abort;
}

void h_wait_job(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = path_id(req, args[0]);
    if (!id) return;
    long long timeout;
    if (!query_num(req, "timeout_ms", 30000, 0, 86400000, &timeout)) return;
    if (timeout > s->cfg.max_wait_ms) timeout = s->cfg.max_wait_ms;
    engine_job *j = engine_find(s->e, id);
    if (j) {
        engine_job_info in;
        engine_job_get(j, &in);
        if (!may_see_job(who, in.tenant, in.queue)) {
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
            return;
        }
        if (is_final(in.state) || timeout == 0) {
            jbuf b;
            jb_init(&b);
            json_job(&b, &in, JOB_FULL, shows_token(who));
            reply_json(req, 200, &b);
            return;
        }
        wait_register(s, req, who, id, timeout);
        return;
    }
    read_ctx *c = read_ctx_new(s, req, who);
    c->id = id;
    c->timeout_ms = timeout;
    c->committed_before = store_committed_seq(s->st);
    store_get_job(s->st, id, on_wait_rows, c);
}

/* ---- cancel ------------------------------------------------------------------------------- */

static void on_cancel_rows(void *ctx, int rc, const store_rows *rows)
{
    read_ctx *c = ctx;
    http_req *req = read_ctx_take(c);
    if (req) {
        if (rc != 0)
            reply_error(req, rc, NULL, "reading the job failed");
        else if (rows->n != 1 || !may_see_job(&c->who, rows->jobs[0].tenant, rows->jobs[0].queue))
            reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)c->id);
        else
            reply_error(req, TENQ_ECONFLICT, "state", "job %llu is %s and cannot be cancelled",
                        (unsigned long long)c->id, engine_state_name(rows->jobs[0].state));
    }
    free(c);
}

void h_cancel(server *s, http_req *req, const principal *who, const char **args)
{
    uint64_t id = path_id(req, args[0]);
    if (!id) return;
    engine_job *j = engine_find(s->e, id);
    if (!j) {
        read_ctx *c = read_ctx_new(s, req, who);
        c->id = id;
        store_get_job(s->st, id, on_cancel_rows, c);
        return;
    }
    if (!may_see_job(who, engine_job_tenant(j), engine_job_queue(j))) {
        reply_error(req, TENQ_ENOT_FOUND, "id", "no job %llu", (unsigned long long)id);
        return;
    }
    engine_state st;
    engine_err err;
    if (engine_cancel(s->e, srv_now(s), id, &st, &err) != 0) {
        reply_engine_err(req, &err);
        return;
    }
    jbuf b;
    jb_init(&b);
    jb_obj(&b);
    jb_kint(&b, "id", (long long)id);
    jb_kstr(&b, "state", engine_state_name(st));
    jb_kbool(&b, "cancel_requested", st != ENGINE_CANCELLED);
    jb_obj_end(&b);
    srv_commit_reply(s, req, 200, &b);
}
