// SPDX-License-Identifier: Apache-2.0
/* Batches: rows to write (store_batch_*), strings in one arena each: a
 * job's row from its columns (columns.h), and the rows of tenants, queues,
 * keys, tokens, attempts, schedules, edges, batches and the audit log, with
 * the parameters of their statements.  The engine's change list becomes a
 * batch in changes.c; batches are folded for one transaction in group.c. */
#include "internal.h"

#include "base/xalloc.h"

/* ---- batches ------------------------------------------------------------------ */

store_batch *store_batch_new(void)
{
    return xcalloc(1, sizeof(store_batch));
}

void store_batch_free(store_batch *b)
{
    if (!b) return;
    free(b->ops);
    free(b->arena);
    free(b);
}

size_t store_batch_ops(const store_batch *b)
{
    return b->n;
}

store_op *store_op_push(store_batch *b, op_kind k)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 16;
        b->ops = xrealloc(b->ops, b->cap * sizeof(store_op));
    }
    store_op *o = &b->ops[b->n++];
    memset(o, 0, sizeof(*o));
    o->kind = k;
    return o;
}

soff store_arena_put(store_batch *b, const char *s, size_t len)
{
    if (b->alen + len + 1 > b->acap) {
        size_t nc = b->acap ? b->acap * 2 : 1024;
        while (nc < b->alen + len + 1) nc *= 2;
        b->arena = xrealloc(b->arena, nc);
        b->acap = nc;
    }
    soff o = (soff)b->alen;
    memcpy(b->arena + b->alen, s, len);
    b->arena[b->alen + len] = 0;
    b->alen += len + 1;
    return o;
}

static soff astr(store_batch *b, const char *s)
{
    return s ? store_arena_put(b, s, strlen(s)) : SNULL;
}

/* The payload list as stored: [{"payload":...,"score":...},...] */
static soff payloads_text(store_batch *b, const engine_payload *p, uint32_t n)
{
    size_t need = 2;
    for (uint32_t i = 0; i < n; i++) need += p[i].len + 48;
    char *buf = xmalloc(need + 1);
    size_t at = 0;
    buf[at++] = '[';
    for (uint32_t i = 0; i < n; i++) {
        if (i) buf[at++] = ',';
        memcpy(buf + at, "{\"payload\":", 11);
        at += 11;
        memcpy(buf + at, p[i].data, p[i].len);
        at += p[i].len;
        at += (size_t)snprintf(buf + at, need + 1 - at, ",\"score\":%.17g}", p[i].score);
    }
    buf[at++] = ']';
    soff o = store_arena_put(b, buf, at);
    free(buf);
    return o;
}

/* A row's args (a new job's: args.c keeps them in memory until its row is
 * collected), and its payloads as stored ("[]" once a merging job has
 * none left). */
static soff args_of(store_batch *b, const engine_job_info *j)
{
    if (j->args_missing) {
        fprintf(stderr, "tenq: job %llu's row would be written without its args\n",
                (unsigned long long)j->id);
        abort();
    }
    return j->args ? store_arena_put(b, j->args, j->args_len) : SNULL;
}

static soff payloads_of(store_batch *b, const engine_job_info *j, uint32_t fields)
{
    if (j->payloads) return payloads_text(b, j->payloads, j->n_payloads);
    return !j->args && (fields & ENGINE_JF_PAYLOADS) ? store_arena_put(b, "[]", 2) : SNULL;
}

/* A new row's options (options.c): the keys it names, its expiry and
 * debounce, as JSON; none: NULL. */
static soff options_of(store_batch *b, const engine_job_info *j)
{
    if (!store_options_any(j)) return SNULL;
    char *text = store_options_text(j);
    soff o = store_arena_put(b, text, strlen(text));
    free(text);
    return o;
}

/* Each column of the row from the job (columns.h): a number as it is, a
 * string when the change carries it (`when`: NEW in the insert alone, KEPT
 * when the change's fields have its flag). */
#define CARRIED_KEY(flag)        true
#define CARRIED_NEW(flag)        all
#define CARRIED_ALWAYS(flag)     true
#define CARRIED_KEPT(flag)       (all || (fields & (flag)))
#define PUT_ID(f, carried)       r->f = j->f;
#define PUT_NUM(f, carried)      r->f = j->f;
#define PUT_TIME(f, carried)     r->f = j->f;
#define PUT_BOOL(f, carried)     r->f = j->f;
#define PUT_STATE(f, carried)    r->f = j->f;
#define PUT_TEXT(f, carried)     r->f = (carried) ? astr(b, j->f) : SNULL;
#define PUT_ARGS(f, carried)     r->f = (carried) ? args_of(b, j) : SNULL;
#define PUT_PAYLOADS(f, carried) r->f = (carried) ? payloads_of(b, j, fields) : SNULL;
#define PUT_OPTIONS(f, carried)  r->f = (carried) ? options_of(b, j) : SNULL;
#define PUT_LIVE(f, carried)
#define PUT(column, type, kind, when, hot, field, flag) PUT_##kind(field, CARRIED_##when(flag))

void store_batch_job(store_batch *b, const engine_job_info *j, uint32_t fields)
{
    store_op *o = store_op_push(b, (fields & ENGINE_JF_NEW) ? OP_JOB_INSERT : OP_JOB_UPDATE);
    batch_row *r = &o->u.job;
    bool all = fields & ENGINE_JF_NEW;
    r->fields = fields;
    r->plain = j->plain;
    STORE_JOB_COLUMNS_TABLE(PUT)
}

void store_batch_job_delete(store_batch *b, uint64_t id)
{
    store_op_push(b, OP_JOB_DELETE)->u.id = id;
}

void store_batch_tenant(store_batch *b, const char *name, const engine_tenant_settings *s)
{
    store_op *o = store_op_push(b, OP_TENANT);
    o->u.tenant.name = astr(b, name);
    o->u.tenant.s = *s;
}

void store_batch_queue(store_batch *b, const char *name, const engine_queue_settings *s)
{
    store_op *o = store_op_push(b, OP_QUEUE);
    o->u.queue.name = astr(b, name);
    o->u.queue.s = *s;
}

void store_batch_pause(store_batch *b, const char *queue, const char *tenant, bool paused)
{
    store_op *o = store_op_push(b, OP_PAUSE);
    o->u.pause.queue = astr(b, queue);
    o->u.pause.tenant = astr(b, tenant);
    o->u.pause.paused = paused;
}

void store_batch_key_setting(store_batch *b, const char *tenant, const char *key,
                             const engine_key_settings *s)
{
    store_op *o = store_op_push(b, OP_KEY_SETTING);
    o->u.keyset.tenant = astr(b, tenant);
    o->u.keyset.key = astr(b, key);
    o->u.keyset.set = s != NULL;
    if (s) o->u.keyset.s = *s;
}

void store_batch_usage(store_batch *b, bool queue, const char *name, uint64_t queued,
                       uint64_t bytes)
{
    store_op *o = store_op_push(b, OP_USAGE);
    o->u.usage.name = astr(b, name);
    o->u.usage.queue = queue;
    o->u.usage.queued = queued;
    o->u.usage.bytes = bytes;
}

void store_batch_attempt(store_batch *b, const engine_attempt_info *a)
{
    store_op *o = store_op_push(b, OP_ATTEMPT);
    o->u.attempt.job_id = a->job_id;
    o->u.attempt.token = a->token;
    o->u.attempt.attempt = a->attempt;
    o->u.attempt.outcome = (uint8_t)a->outcome;
    o->u.attempt.job_state = (uint8_t)a->job_state;
    o->u.attempt.leased_at = a->leased_at;
    o->u.attempt.started_at = a->started_at;
    o->u.attempt.finished_at = a->finished_at;
    o->u.attempt.worker = astr(b, a->worker);
    o->u.attempt.error = astr(b, a->error);
    o->u.attempt.stats = astr(b, a->stats);
}

void store_batch_schedule(store_batch *b, const store_schedule *x)
{
    store_op *o = store_op_push(b, OP_SCHEDULE);
    o->u.sched.name = astr(b, x->name);
    o->u.sched.tenant = astr(b, x->tenant);
    o->u.sched.cron = astr(b, x->cron);
    o->u.sched.timezone = astr(b, x->timezone);
    o->u.sched.missed = astr(b, x->missed);
    o->u.sched.queue = astr(b, x->queue);
    o->u.sched.type = astr(b, x->type);
    o->u.sched.args = astr(b, x->args);
    o->u.sched.key = astr(b, x->key);
    o->u.sched.unique_key = astr(b, x->unique_key);
    o->u.sched.priority = x->priority;
    o->u.sched.max_attempts = x->max_attempts;
    o->u.sched.unique = x->unique;
    o->u.sched.paused = x->paused;
    o->u.sched.timeout_ms = x->timeout_ms;
    o->u.sched.last_tick = x->last_tick;
    o->u.sched.next_tick = x->next_tick;
    o->u.sched.created_at = x->created_at;
    o->u.sched.updated_at = x->updated_at;
}

void store_batch_schedule_tick(store_batch *b, const char *name, int64_t last_tick,
                               int64_t next_tick)
{
    store_op *o = store_op_push(b, OP_SCHEDULE_TICK);
    o->u.sched.name = astr(b, name);
    o->u.sched.last_tick = last_tick;
    o->u.sched.next_tick = next_tick;
}

void store_batch_schedule_delete(store_batch *b, const char *name)
{
    store_op_push(b, OP_SCHEDULE_DELETE)->u.sched.name = astr(b, name);
}

void store_schedule_params(const store_batch *b, const store_op *o, const store_param_sink *out)
{
    out->text(out->ctx, bstr(b, o->u.sched.name));
    if (o->kind == OP_SCHEDULE_DELETE) return;
    if (o->kind == OP_SCHEDULE_TICK) {
        out->i64(out->ctx, o->u.sched.last_tick);
        out->i64(out->ctx, o->u.sched.next_tick);
        return;
    }
    out->text(out->ctx, bstr(b, o->u.sched.tenant));
    out->text(out->ctx, bstr(b, o->u.sched.cron));
    out->text(out->ctx, bstr(b, o->u.sched.timezone));
    out->text(out->ctx, bstr(b, o->u.sched.missed));
    out->text(out->ctx, bstr(b, o->u.sched.queue));
    out->text(out->ctx, bstr(b, o->u.sched.type));
    out->text(out->ctx, bstr(b, o->u.sched.args));
    out->text(out->ctx, bstr(b, o->u.sched.key));
    out->i64(out->ctx, o->u.sched.priority);
    out->text(out->ctx, bstr(b, o->u.sched.unique_key));
    out->boolean(out->ctx, o->u.sched.unique);
    out->i64(out->ctx, o->u.sched.max_attempts);
    out->i64(out->ctx, o->u.sched.timeout_ms);
    out->boolean(out->ctx, o->u.sched.paused);
    out->i64(out->ctx, o->u.sched.last_tick);
    out->i64(out->ctx, o->u.sched.next_tick);
    out->i64(out->ctx, o->u.sched.created_at);
    out->i64(out->ctx, o->u.sched.updated_at);
}

void store_batch_dep(store_batch *b, uint64_t child, uint64_t parent, uint32_t pos,
                     engine_deps_policy policy)
{
    store_op *o = store_op_push(b, OP_DEP);
    o->u.dep.child = child;
    o->u.dep.parent = parent;
    o->u.dep.pos = pos;
    o->u.dep.policy = (uint8_t)policy;
}

void store_batch_put_batch(store_batch *b, const engine_batch_info *x)
{
    char *cbs = store_callbacks_json(x->callbacks);
    store_op *o = store_op_push(b, OP_BATCH);
    o->u.bat.id = x->id;
    o->u.bat.tenant = astr(b, x->tenant);
    o->u.bat.callbacks = astr(b, cbs);
    free(cbs);
    o->u.bat.created_at = x->created_at;
    o->u.bat.closed_at = x->closed_at;
    o->u.bat.total = x->total;
    o->u.bat.succeeded = x->n[ENGINE_SUCCEEDED];
    o->u.bat.cancelled = x->n[ENGINE_CANCELLED];
    o->u.bat.merged = x->n[ENGINE_MERGED];
    o->u.bat.deleted = x->deleted;
    o->u.bat.deaths = x->deaths;
    o->u.bat.expired = x->n[ENGINE_EXPIRED];
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) o->u.bat.cb_id[k] = x->callback_ids[k];
}

void store_batch_batch_job(store_batch *b, uint64_t job_id, uint64_t batch_id, int role)
{
    store_op *o = store_op_push(b, OP_BATCH_JOB);
    o->u.bat.id = batch_id;
    o->u.bat.job_id = job_id;
    o->u.bat.role = (uint8_t)role;
}

void store_batch_params(const store_batch *b, const store_op *o, const store_param_sink *out)
{
    if (o->kind == OP_BATCH_JOB) {
        out->i64(out->ctx, (long long)o->u.bat.job_id);
        out->i64(out->ctx, (long long)o->u.bat.id);
        out->i64(out->ctx, o->u.bat.role);
        return;
    }
    out->i64(out->ctx, (long long)o->u.bat.id);
    out->text(out->ctx, bstr(b, o->u.bat.tenant));
    out->i64(out->ctx, o->u.bat.created_at);
    out->i64(out->ctx, o->u.bat.closed_at);
    out->i64(out->ctx, (long long)o->u.bat.total);
    out->i64(out->ctx, (long long)o->u.bat.succeeded);
    out->i64(out->ctx, (long long)o->u.bat.cancelled);
    out->i64(out->ctx, (long long)o->u.bat.merged);
    out->i64(out->ctx, (long long)o->u.bat.deleted);
    out->text(out->ctx, bstr(b, o->u.bat.callbacks));
    for (int k = 0; k < ENGINE_NCALLBACKS; k++) out->i64(out->ctx, (long long)o->u.bat.cb_id[k]);
    out->i64(out->ctx, (long long)o->u.bat.deaths);
    out->i64(out->ctx, (long long)o->u.bat.expired);
}

void store_batch_idem(store_batch *b, const engine_idem_info *i)
{
    store_op *o = store_op_push(b, OP_IDEM);
    o->u.idem.tenant = astr(b, i->tenant);
    o->u.idem.key = astr(b, i->key);
    o->u.idem.id = i->id;
    o->u.idem.state = (uint8_t)i->state;
    o->u.idem.duplicate = i->duplicate;
    o->u.idem.merged = i->merged;
    o->u.idem.created_at = i->created_at;
}

void store_batch_token(store_batch *b, const store_token *t)
{
    store_op *o = store_op_push(b, OP_TOKEN);
    o->u.token.id = t->id;
    o->u.token.hash = astr(b, t->hash);
    o->u.token.role = astr(b, t->role);
    o->u.token.queues = astr(b, t->queues);
    o->u.token.created_at = t->created_at;
    o->u.token.revoked_at = t->revoked_at;
    o->u.token.hide_data = t->hide_data;
}

void store_batch_audit(store_batch *b, const store_audit *a)
{
    store_op *o = store_op_push(b, OP_AUDIT);
    o->u.audit.at = a->at;
    o->u.audit.token_id = a->token_id;
    o->u.audit.status = a->status;
    o->u.audit.role = astr(b, a->role);
    o->u.audit.tenant = astr(b, a->tenant);
    o->u.audit.method = astr(b, a->method);
    o->u.audit.path = astr(b, a->path);
    o->u.audit.peer = astr(b, a->peer);
    o->u.audit.detail = astr(b, a->detail);
}

void store_audit_params(const store_batch *b, const store_op *o, const store_param_sink *out)
{
    out->i64(out->ctx, o->u.audit.at);
    if (o->u.audit.token_id)
        out->i64(out->ctx, o->u.audit.token_id);
    else
        out->text(out->ctx, NULL);
    out->text(out->ctx, bstr(b, o->u.audit.role));
    out->text(out->ctx, bstr(b, o->u.audit.tenant));
    out->text(out->ctx, bstr(b, o->u.audit.method));
    out->text(out->ctx, bstr(b, o->u.audit.path));
    out->i64(out->ctx, o->u.audit.status);
    out->text(out->ctx, bstr(b, o->u.audit.peer));
    out->text(out->ctx, bstr(b, o->u.audit.detail));
}

void store_batch_request(store_batch *b, const store_request_key *r)
{
    store_op *o = store_op_push(b, OP_REQUEST);
    o->u.request.scope = astr(b, r->scope);
    o->u.request.key = astr(b, r->key);
    o->u.request.answer = astr(b, r->answer ? r->answer : "");
    o->u.request.fingerprint = r->fingerprint;
    o->u.request.status = r->status;
    o->u.request.created_at = r->created_at;
}

void store_batch_inbox_done(store_batch *b, uint64_t id)
{
    store_op_push(b, OP_INBOX_DONE)->u.tx.id = id;
}

void store_batch_tx_done(store_batch *b, uint64_t id, uint64_t token)
{
    store_op *o = store_op_push(b, OP_TX_DONE);
    o->u.tx.id = id;
    o->u.tx.token = token;
}

void store_batch_token_revoke(store_batch *b, int64_t id, int64_t at)
{
    store_op *o = store_op_push(b, OP_TOKEN_REVOKE);
    o->u.token.id = id;
    o->u.token.revoked_at = at;
}
