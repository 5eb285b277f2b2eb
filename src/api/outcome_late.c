// SPDX-License-Identifier: Apache-2.0
/* Outcomes of jobs no longer in hand.
 *
 * A worker that lost the answer to its ack (a broken connection, a takeover
 * by another server) sends the outcome again, and by then its job may have
 * finished and left memory.  Such an outcome is answered from the store,
 * once everything uncommitted before it is committed (so the first copy's
 * commit is seen): the same token and the state that outcome leads to
 * answer as if it were applied now, which it was; another token, or an ack
 * of a job that did not succeed, is a stale token (409); no row is 404.
 *
 * A batch of outcomes writes a placeholder (null) for each such outcome in
 * its results; late_resolve reads the rows and puts each answer in its
 * place before the caller goes on (answers, or leases). */
#include "internal.h"

typedef struct late_item {
    uint64_t id, token;
    bool ok;
    size_t at;    /* the offset of its placeholder in the results' text */
    char *answer; /* its answer, once read */
} late_item;

struct late_set {
    late_item *v;
    size_t n, cap;
};

late_set *late_note(late_set *ls, jbuf *b, uint64_t id, const outcome_in *in)
{
    if (!ls) ls = xcalloc(1, sizeof(*ls));
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? ls->cap * 2 : 8;
        ls->v = xrealloc(ls->v, ls->cap * sizeof(*ls->v));
    }
    jb_null(b);
    ls->v[ls->n++] = (late_item){id, in->token, in->ok, b->n - 4, NULL};
    return ls;
}

void late_free(late_set *ls)
{
    if (!ls) return;
    for (size_t i = 0; i < ls->n; i++) free(ls->v[i].answer);
    free(ls->v);
    free(ls);
}

bool outcome_already_applied(server *s, uint64_t id, const outcome_in *in)
{
    engine_job *j = engine_find(s->e, id);
    if (!j) return false;
    engine_job_info info;
    engine_job_get(j, &info);
    if (info.token != in->token || info.state == ENGINE_LEASED || info.state == ENGINE_RUNNING)
        return false;
    return in->ok ? info.state == ENGINE_SUCCEEDED : info.state != ENGINE_SUCCEEDED;
}

/* What the store says of a late outcome: 0 with *state, or an error with
 * its message. */
static int decide(const late_item *it, const principal *who, int rc, const store_rows *rows,
                  const char **state, char *msg, size_t len)
{
    if (rc != 0) {
        snprintf(msg, len, "reading job %llu failed", (unsigned long long)it->id);
        return rc;
    }
    const engine_job_info *j = rows->n == 1 ? &rows->jobs[0] : NULL;
    if (!j || !auth_may_see_job(who, j->tenant, j->queue)) {
        snprintf(msg, len, "no job %llu", (unsigned long long)it->id);
        return TENQ_ENOT_FOUND;
    }
    *state = engine_state_name(j->state);
    bool same = j->token == it->token;
    if (same && (it->ok ? j->state == ENGINE_SUCCEEDED : j->state != ENGINE_SUCCEEDED)) return 0;
    snprintf(msg, len, "stale token %llu: job %llu is %s%s", (unsigned long long)it->token,
             (unsigned long long)it->id, *state, same ? "" : " under another lease");
    return TENQ_ECONFLICT;
}

typedef struct late_ctx {
    server *srv;
    http_req *req; /* NULL once the client left */
    principal who;
    late_set *ls;
    char *text; /* the results with placeholders; NULL: a single outcome */
    size_t left;
    late_done done;
    void *ctx;
} late_ctx;

typedef struct late_read {
    late_ctx *lc;
    size_t i;
} late_read;

static void late_abort(http_req *req)
{
    late_ctx *lc = req->user;
    lc->req = NULL;
}

/* The results' text with every placeholder replaced by its answer. */
static char *splice(const char *text, const late_set *ls)
{
    size_t tl = strlen(text), need = tl + 1;
    for (size_t i = 0; i < ls->n; i++) need += strlen(ls->v[i].answer);
    char *out = xmalloc(need), *o = out;
    size_t from = 0;
    for (size_t i = 0; i < ls->n; i++) {
        memcpy(o, text + from, ls->v[i].at - from);
        o += ls->v[i].at - from;
        size_t al = strlen(ls->v[i].answer);
        memcpy(o, ls->v[i].answer, al);
        o += al;
        from = ls->v[i].at + 4; /* past "null" */
    }
    memcpy(o, text + from, tl - from + 1);
    return out;
}

static void finish(late_ctx *lc)
{
    http_req *req = lc->req;
    if (req) req->on_abort = NULL;
    char *text = req && lc->text ? splice(lc->text, lc->ls) : NULL;
    lc->done(lc->srv, req, text, lc->ctx);
    free(lc->text);
    late_free(lc->ls);
    free(lc);
}

static void on_late_row(void *ctx, int rc, const store_rows *rows)
{
    late_read *r = ctx;
    late_ctx *lc = r->lc;
    late_item *it = &lc->ls->v[r->i];
    free(r);
    const char *state = NULL;
    char msg[256];
    int drc = decide(it, &lc->who, rc, rows, &state, msg, sizeof msg);
    if (!lc->text) { /* a single outcome: its own answer */
        http_req *req = lc->req;
        if (req && drc) {
            req->on_abort = NULL;
            lc->req = NULL;
            reply_error(req, drc, drc == TENQ_ECONFLICT ? "token" : "id", "%s", msg);
        } else if (req) {
            jbuf b;
            jb_init(&b);
            jb_obj(&b);
            jb_kint(&b, "id", (long long)it->id);
            jb_kstr(&b, "state", state);
            jb_obj_end(&b);
            req->on_abort = NULL;
            lc->req = NULL;
            reply_json(req, 200, &b);
        }
    } else {
        jbuf b;
        jb_init(&b);
        jb_obj(&b);
        jb_kint(&b, "id", (long long)it->id);
        if (drc) {
            jb_key(&b, "error");
            jb_obj(&b);
            jb_kstr(&b, "code", tenq_err_word(drc));
            jb_kstr(&b, "message", msg);
            jb_kstr(&b, "field", drc == TENQ_ECONFLICT ? "token" : "id");
            jb_obj_end(&b);
        } else {
            jb_kstr(&b, "state", state);
        }
        jb_obj_end(&b);
        it->answer = jb_take(&b, NULL);
    }
    if (--lc->left == 0) finish(lc);
}

/* Everything uncommitted before the outcomes is in: read their rows. */
static void late_committed(server *s, http_req *req, void *ctx, int rc)
{
    late_ctx *lc = ctx;
    lc->req = rc == 0 ? req : NULL;
    if (!lc->req) { /* the client left, or the commit failed (answered already) */
        lc->left = 0;
        finish(lc);
        return;
    }
    req->user = lc;
    req->on_abort = late_abort;
    lc->left = lc->ls->n;
    for (size_t i = 0; i < lc->ls->n; i++) {
        late_read *r = xcalloc(1, sizeof(*r));
        r->lc = lc;
        r->i = i;
        store_get_job(s->st, lc->ls->v[i].id, on_late_row, r);
    }
}

void late_resolve(server *s, http_req *req, const principal *who, late_set *ls, char *text,
                  late_done done, void *ctx)
{
    late_ctx *lc = xcalloc(1, sizeof(*lc));
    lc->srv = s;
    lc->who = *who;
    lc->ls = ls;
    lc->text = text;
    lc->done = done;
    lc->ctx = ctx;
    srv_after_commit(s, req, late_committed, lc);
}

static void single_done(server *s, http_req *req, char *text, void *ctx)
{
    (void)s;
    (void)req; /* answered by on_late_row */
    (void)ctx;
    free(text);
}

void late_resolve_one(server *s, http_req *req, const principal *who, uint64_t id,
                      const outcome_in *in)
{
    jbuf b;
    jb_init(&b);
    late_set *ls = late_note(NULL, &b, id, in);
    jb_free(&b);
    late_resolve(s, req, who, ls, NULL, single_done, NULL);
}
