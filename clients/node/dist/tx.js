"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TX_SETTLED = void 0;
exports.submitTx = submitTx;
exports.submitManyTx = submitManyTx;
exports.submitWireTx = submitWireTx;
exports.submitManyWireTx = submitManyWireTx;
exports.completeTx = completeTx;
exports.failTx = failTx;
exports.sendEventTx = sendEventTx;
exports.toId = toId;
// SPDX-License-Identifier: Apache-2.0
/**
 * Jobs submitted and completed in the application's own PostgreSQL
 * transaction: the SQL functions a tenq server on PostgreSQL installs in
 * the schema `tenq` (tenq.submit, tenq.submit_many, tenq.complete,
 * tenq.fail, tenq.send_event), called on the application's connection, so that a job exists
 * (or a job is finished) if and only if the application's transaction
 * commits. The server's leader takes committed rows in within milliseconds.
 *
 * `db` is anything with node-postgres's `query(text, values)`: a
 * `pg.Client`, or a `PoolClient` checked out of a `pg.Pool` (the same
 * connection for BEGIN ... COMMIT). The library does not depend on `pg`.
 *
 * Ids are BIGINT: they are read as text and turned into numbers (tenq's ids
 * stay below 2^53), whatever the driver does with int8.
 */
const context_1 = require("./context");
const errors_1 = require("./errors");
const json_1 = require("./json");
const wire_1 = require("./wire");
/**
 * How a worker's task learns that its handler settled the job in a
 * transaction (see TaskContext): its report then says the same thing.
 * @internal
 */
exports.TX_SETTLED = Symbol.for("tenq.txSettled");
/** The SQLSTATE of a bad argument (invalid_parameter_value). */
const SQLSTATE_INVALID = "22023";
/** tenq's SQLSTATE for a lease that is not the job's current one (or a queue that is not exactly-once). */
const SQLSTATE_LEASE = "TQ002";
/** tenq's SQLSTATE for a submit over a tenant's or a queue's quota (the server's 429 quota_exceeded). */
const SQLSTATE_QUOTA = "TQ429";
/** The limits a quota refusal names (the longer first: one holds the other). */
const QUOTA_FIELDS = ["max_queued_bytes", "max_queued"];
/**
 * Submits one job in the caller's transaction (tenq.submit) and returns its
 * id (odd: ids made in transactions are). The job exists once the
 * transaction commits; a rollback leaves nothing. `tenant` and `queue` are
 * required (here, or in `defaults`). Fields are checked as for
 * `client.submit` before anything is sent (InvalidError); the server's own
 * checks raise in the transaction, as InvalidError too, and a job over its
 * tenant's or queue's quota (SQLSTATE TQ429) as QuotaExceededError; the
 * transaction is then aborted (roll it back).
 */
async function submitTx(db, spec, defaults = {}) {
    return submitWireTx(db, (0, wire_1.jobToWire)(spec, defaults));
}
/**
 * Submits many jobs in the caller's transaction (tenq.submit_many, one
 * statement) and returns their ids in the order of `specs`.
 */
async function submitManyTx(db, specs, defaults = {}) {
    return submitManyWireTx(db, specs.map((s, i) => (0, wire_1.jobToWire)(s, defaults, i)));
}
/** @internal A job as `jobToWire`/`Client.prepare` made it. */
async function submitWireTx(db, w) {
    const t = txJob(w);
    const values = [t["tenant"], t["queue"], t["type"]];
    const named = [];
    const add = (name, cast, v) => {
        if (v === undefined)
            return;
        values.push(v);
        named.push(`${name} => $${values.length}::${cast}`);
    };
    add("args", "jsonb", t["args"] === undefined ? undefined : JSON.stringify(t["args"]));
    add("key", "text", t["key"]);
    add("unique_key", "text", t["unique_key"]);
    add('"unique"', "boolean", t["unique"]);
    add("idempotency_key", "text", t["idempotency_key"]);
    add("run_at", "timestamptz", t["run_at"]);
    add("priority", "integer", t["priority"]);
    add("max_attempts", "integer", t["max_attempts"]);
    add("score", "float8", t["score"]);
    add("traceparent", "text", t["traceparent"]);
    add("timeout_ms", "bigint", t["timeout_ms"]);
    // schema 26: named only when given, so a database of an older schema takes the rest
    add("concurrency_keys", "jsonb", t["concurrency_keys"] === undefined ? undefined : JSON.stringify(t["concurrency_keys"]));
    add("rate_keys", "jsonb", t["rate_keys"] === undefined ? undefined : JSON.stringify(t["rate_keys"]));
    add("expire_at", "timestamptz", t["expire_at"]);
    add("start_within_ms", "bigint", t["start_within_ms"]);
    add("debounce_ms", "bigint", t["debounce_ms"]);
    add("debounce_max_ms", "bigint", t["debounce_max_ms"]);
    const sql = `SELECT tenq.submit($1::text, $2::text, $3::text${named.map((n) => `, ${n}`).join("")})::text AS id`;
    const r = await run(db, sql, values);
    return toId(firstField(r, "id"), "tenq.submit");
}
/** @internal Jobs as `jobToWire`/`Client.prepare` made them. */
async function submitManyWireTx(db, wires) {
    if (!wires.length)
        return [];
    const jobs = JSON.stringify(wires.map(txJob));
    const r = await run(db, "SELECT tenq.submit_many($1::jsonb)::text[] AS ids", [jobs]);
    const ids = firstField(r, "ids");
    const list = typeof ids === "string" ? parseTextArray(ids) : ids;
    if (!Array.isArray(list) || list.length !== wires.length)
        throw new errors_1.ProtocolError(`tenq.submit_many answered ${Array.isArray(list) ? list.length : "no"} ids for ${wires.length} jobs`);
    return list.map((x) => toId(x, "tenq.submit_many"));
}
/**
 * Marks a leased job of an exactly-once queue succeeded in the caller's
 * transaction (tenq.complete), together with the application's writes.
 * Rejects with ConflictError (field `token`) when the lease is not the
 * job's current, unexpired one, or the queue's delivery is not
 * `exactly-once`; the transaction is then aborted (roll it back).
 *
 * In a worker, pass the handler's `ctx` (or its id and token) and return
 * after the commit: the worker's own report of the job is then an ack with
 * the same result, which the server answers as applied.
 */
async function completeTx(db, job, result) {
    const { id, token } = lease(job);
    const values = [id, token];
    if (result !== undefined) {
        (0, json_1.checkJson)(result, "result");
        values.push(JSON.stringify(result));
    }
    await run(db, `SELECT tenq.complete($1::bigint, $2::bigint${result !== undefined ? ", $3::jsonb" : ""})`, values);
    settled(job, result !== undefined ? { id, token, ok: true, result } : { id, token, ok: true });
}
/**
 * The attempt failed, in the caller's transaction (tenq.fail): once it
 * commits the server retries the job (after `retryInMs`, else the queue's
 * backoff) or buries it when its attempts are spent. Rejects as
 * `completeTx` does.
 *
 * In a worker, pass the handler's `ctx` and return after the commit: the
 * worker reports the same failure (answered as applied), not a success.
 */
async function failTx(db, job, error, o = {}) {
    const { id, token } = lease(job);
    if (typeof error !== "string")
        throw new errors_1.InvalidError("failTx: error must be a string", { field: "error" });
    const values = [id, token, error];
    let retry;
    if (o.retryInMs !== undefined) {
        if (!Number.isFinite(o.retryInMs) || o.retryInMs < 0)
            throw new errors_1.InvalidError("failTx: retryInMs must be 0 or more", { field: "retry_in_ms" });
        retry = Math.round(o.retryInMs);
        values.push(retry);
    }
    await run(db, `SELECT tenq.fail($1::bigint, $2::bigint, $3::text${retry !== undefined ? ", $4::bigint" : ""})`, values);
    settled(job, retry !== undefined ? { id, token, ok: false, error, retryInMs: retry } : { id, token, ok: false, error });
}
/**
 * Sends an event of `tenant` in the caller's transaction (tenq.send_event,
 * docs/transactions.md): the jobs whose handler waits for `key`
 * (`ctx.waitForEvent`) go on with `payload` (JSON) if and only if the
 * transaction commits. Returns the event's number in the server's inbox.
 * The database refuses a bad tenant, key or payload (InvalidError; the
 * transaction is then aborted).
 */
async function sendEventTx(db, tenant, key, payload) {
    if (typeof tenant !== "string" || tenant === "")
        throw new errors_1.InvalidError("sendEventTx: a tenant is required", { field: "tenant" });
    if (typeof key !== "string" || key === "")
        throw new errors_1.InvalidError("sendEventTx: a key is required", { field: "key" });
    const v = payload === undefined ? null : payload;
    (0, json_1.checkJson)(v, "payload");
    const r = await run(db, "SELECT tenq.send_event($1::text, $2::text, $3::jsonb)::text AS n", [tenant, key, JSON.stringify(v)]);
    return toId(firstField(r, "n"), "tenq.send_event");
}
// ------------------------------------------------------------------ helpers
/** A wire job (run_at in ms) as the SQL functions take it (run_at as ISO text); tenant required. */
function txJob(w) {
    if (typeof w["tenant"] !== "string" || w["tenant"] === "")
        throw new errors_1.InvalidError("a job submitted in a transaction needs a tenant (or a client with a default tenant)", {
            field: "tenant",
        });
    const t = { ...w };
    for (const name of ["run_at", "expire_at"])
        if (typeof t[name] === "number")
            t[name] = new Date(t[name]).toISOString();
    return t;
}
function lease(job) {
    if (!job || typeof job !== "object")
        throw new errors_1.InvalidError("a job is needed: a handler's ctx, a leased job, or { id, token }", { field: "job" });
    const { id, token } = job;
    if (!Number.isSafeInteger(id) || id <= 0)
        throw new errors_1.InvalidError(`bad job id ${String(id)}`, { field: "id" });
    if (!Number.isSafeInteger(token) || token < 0)
        throw new errors_1.InvalidError(`bad lease token ${String(token)}`, { field: "token" });
    return { id, token };
}
/** Tells the worker running this job (if any) how its handler settled it. */
function settled(job, o) {
    const own = job[exports.TX_SETTLED];
    if (typeof own === "function")
        return own.call(job, o);
    const cur = (0, context_1.currentJob)();
    if (cur && cur.id === o.id && cur.token === o.token && typeof cur[exports.TX_SETTLED] === "function")
        cur[exports.TX_SETTLED](o);
}
async function run(db, sql, values) {
    if (!db || typeof db.query !== "function")
        throw new errors_1.InvalidError("db must have node-postgres's query(text, values): a pg.Client or a PoolClient", { field: "db" });
    try {
        return await db.query(sql, values);
    }
    catch (e) {
        throw typed(e);
    }
}
/** tenq's SQL errors as the library's typed errors (the driver's error as `cause`); others unchanged. */
function typed(e) {
    if (!e || typeof e !== "object" || e instanceof errors_1.TenqError)
        return e;
    const code = e.code;
    const message = e.message;
    const text = typeof message === "string" ? message : String(e);
    if (code === SQLSTATE_INVALID && /^tenq\./.test(text)) {
        // "tenq.submit: timeout_ms must be ...", "tenq.submit_many: job 3: priority ...": the field
        const m = /^tenq\.[a-z_]+: (?:job \d+: )?([a-z_]+)\b/.exec(text);
        const field = m && TX_FIELDS.has(m[1]) ? m[1] : undefined;
        return new errors_1.InvalidError(text, field !== undefined ? { field, cause: e } : { cause: e });
    }
    if (code === SQLSTATE_LEASE)
        return new errors_1.ConflictError(text, { field: "token", cause: e });
    if (code === SQLSTATE_QUOTA) {
        // the limit: the error's column (node-postgres's `column`), else the one the message names
        const column = e.column;
        const field = QUOTA_FIELDS.find((f) => f === column) ?? QUOTA_FIELDS.find((f) => text.includes(f));
        return new errors_1.QuotaExceededError(text, field !== undefined ? { field, cause: e } : { cause: e });
    }
    return e;
}
/** The fields of tenq.submit, as its refusals name them first. */
const TX_FIELDS = new Set([
    "tenant",
    "queue",
    "type",
    "args",
    "key",
    "unique_key",
    "idempotency_key",
    "run_at",
    "priority",
    "max_attempts",
    "score",
    "traceparent",
    "timeout_ms",
    "retry_in_ms",
    "payload",
]);
function firstField(r, name) {
    const row = r?.rows?.[0];
    if (!row || typeof row !== "object")
        throw new errors_1.ProtocolError(`the query answered no row`);
    return row[name];
}
/** A BIGINT id as a number: from text (node-postgres's int8), a number or a BigInt. */
function toId(v, what) {
    const n = typeof v === "string" && /^[0-9]+$/.test(v) ? Number(v) : typeof v === "bigint" ? Number(v) : v;
    if (typeof n !== "number" || !Number.isSafeInteger(n) || n <= 0)
        throw new errors_1.ProtocolError(`${what}: ${String(v)} is not a job id (a positive integer below 2^53)`);
    return n;
}
/** A PostgreSQL text[] literal of plain numbers, `{1,3,5}` (a driver that leaves arrays unparsed). */
function parseTextArray(s) {
    const inner = s.trim().replace(/^\{/, "").replace(/\}$/, "");
    return inner === "" ? [] : inner.split(",").map((x) => x.trim().replace(/^"|"$/g, ""));
}
