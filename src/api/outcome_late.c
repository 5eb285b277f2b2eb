// SPDX-License-Identifier: Apache-2.0
/* Outcomes sent again, and worker calls of jobs no longer in hand.
 *
 * A worker that lost the answer to its ack (a broken connection, a takeover
 * by another server, a freeze) sends the outcome again.  It is the same
 * outcome when it carries the token of the job's last lease and that lease
 * ended with an outcome of its kind: an ack, and the job succeeded; a fail
 * with the same error, and the job did not succeed (an expired lease ends
 * with the error "lease expired", which the worker's own failure does not
 * carry).  The same outcome is answered as applied (200, the job's state),
 * which it was, and changes nothing; an ack's result is not compared (the
 * first one stays).  Anything else with a token that holds no lease is a
 * stale token (409 on "token").  Once the job is leased again, its earlier
 * tokens are stale, outcomes sent again included.
 *
 * A job no longer in memory (it finished, or the server restarted) is
 * answered from the store, once everything uncommitted before it is
 * committed (so the first copy's commit is seen).  No row (never made, or
 * deleted by retention or from the morgue) is 404.
 *
 * A batch of outcomes writes a placeholder (null) for each such outcome in
 * its results; late_resolve reads the rows and puts each answer in its
 * place before the caller goes on (answers, or leases). */
#include "outcome_late.h"

#include "commit.h"
#include "read_ctx.h"
#include "reply.h"
#include "server.h"

#include "base/xalloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { LATE_ACK, LATE_FAIL, LATE_CALL /* a start or heartbeat */ };

typedef struct late_item {
    uint64_t id, token;
    int kind;     /* LATE_ACK, LATE_FAIL, LATE_CALL */
    char *error;  /* a fail's error as it would be stored */
    size_t at;    /* the offset of its placeholder in the results' text */
    char *answer; /* its answer, once read */
} late_item;

struct late_set {
    late_item *v;
    size_t n, cap;
};

/* The error a failure stores (engine: "failed" when it names none). */
static const char *fail_error(const outcome_in *in)
{
    return in->error ? in->error : "failed";
}

static late_set *note(late_set *ls, jbuf *b, uint64_t id, uint64_t token, int kind,
                      const char *error)
{
    if (!ls) ls = xcalloc(1, sizeof(*ls));
    if (ls->n == ls->cap) {
        ls->cap = ls->cap ? ls->cap * 2 : 8;
        ls->v = xrealloc(ls->v, ls->cap * sizeof(*ls->v));
    }
    jb_null(b);
    ls->v[ls->n++] = (late_item){id, token, kind, error ? xstrdup(error) : NULL, b->n - 4, NULL};
    return ls;
}

late_set *late_note(late_set *ls, jbuf *b, uint64_t id, const outcome_in *in)
{
    return note(ls, b, id, in->token, in->ok ? LATE_ACK : LATE_FAIL,
                in->ok ? NULL : fail_error(in));
}

void late_free(late_set *ls)
{
    if (!ls) return;
    for (size_t i = 0; i < ls->n; i++) {
        free(ls->v[i].answer);
        free(ls->v[i].error);
    }
    free(ls->v);
    free(ls);
}

/* Did the lease of this token end with this outcome (kind, and a fail's
 * error)? */
static bool same_outcome(const engine_job_info *j, uint64_t token, int kind, const char *error)
{
    if (kind == LATE_CALL || j->token != token || j->state == ENGINE_LEASED ||
        j->state == ENGINE_RUNNING)
        return false;
    if (kind == LATE_ACK) return j->state == ENGINE_SUCCEEDED;
    return j->state != ENGINE_SUCCEEDED && j->error && !strcmp(j->error, error);
}

bool outcome_already_applied(server *s, uint64_t id, const outcome_in *in)
{
    engine_job *j = engine_find(s->e, id);
    if (!j) return false;
    engine_job_info info;
    engine_job_get(j, &info);
    return same_outcome(&info, in->token, in->ok ? LATE_ACK : LATE_FAIL,
                        in->ok ? NULL : fail_error(in));
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
        snprintf(msg, len, "no job %llu (never made, or no longer kept)",
                 (unsigned long long)it->id);
        return TENQ_ENOT_FOUND;
    }
    *state = engine_state_name(j->state);
    if (same_outcome(j, it->token, it->kind, it->error)) return 0;
    bool same = j->token == it->token;
    snprintf(msg, len, "stale token %llu: job %llu is %s%s", (unsigned long long)it->token,
             (unsigned long long)it->id, *state,
             !same                   ? " under another lease"
             : it->kind == LATE_CALL ? ""
                                     : " by another outcome");
    return TENQ_ECONFLICT;
}

typedef struct late_ctx {
    read_ctx held; /* the request, while the rows are read */
    server *srv;
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
    http_req *req = read_ctx_take(&lc->held);
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
        http_req *req = read_ctx_take(&lc->held);
        if (req && drc) {
            reply_error(req, drc, drc == TENQ_ECONFLICT ? "token" : "id", "%s", msg);
        } else if (req) {
            jbuf b;
            jb_init(&b);
            jb_obj(&b);
            jb_kint(&b, "id", (long long)it->id);
            jb_kstr(&b, "state", state);
            jb_obj_end(&b);
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
    if (!req || rc != 0) { /* the client left, or the commit failed (answered already) */
        lc->left = 0;
        finish(lc);
        return;
    }
    read_ctx_hold(&lc->held, req);
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

void late_refuse_call(server *s, http_req *req, const principal *who, uint64_t id, uint64_t token)
{
    jbuf b;
    jb_init(&b);
    late_set *ls = note(NULL, &b, id, token, LATE_CALL, NULL);
    jb_free(&b);
    late_resolve(s, req, who, ls, NULL, single_done, NULL);
}
