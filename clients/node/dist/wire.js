"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.asObject = asObject;
exports.asList = asList;
exports.jobToWire = jobToWire;
exports.hasIndexRef = hasIndexRef;
exports.callbackToWire = callbackToWire;
exports.parentsFromWire = parentsFromWire;
exports.batchFromWire = batchFromWire;
exports.submitResult = submitResult;
exports.itemError = itemError;
exports.batchResult = batchResult;
exports.jobFromWire = jobFromWire;
exports.keyPageFromWire = keyPageFromWire;
exports.keySettingFromWire = keySettingFromWire;
exports.leasedFromWire = leasedFromWire;
exports.outcomeToWire = outcomeToWire;
exports.outcomeResult = outcomeResult;
exports.outcomeJson = outcomeJson;
exports.scheduleToWire = scheduleToWire;
exports.scheduleFromWire = scheduleFromWire;
exports.attemptFromWire = attemptFromWire;
// SPDX-License-Identifier: Apache-2.0
/** Between the wire's snake_case JSON and this library's objects. */
const errors_1 = require("./errors");
const json_1 = require("./json");
const tracing_1 = require("./tracing");
function asObject(v, what) {
    if (v && typeof v === "object" && !Array.isArray(v))
        return v;
    throw new errors_1.ProtocolError(`${what}: the server's answer is not a JSON object`);
}
function asList(v, what) {
    if (Array.isArray(v))
        return v;
    throw new errors_1.ProtocolError(`${what}: the server's answer holds no list`);
}
const num = (v) => (typeof v === "number" ? v : null);
const str = (v) => (typeof v === "string" ? v : null);
/** A job to send, checked: the fields the server requires, and JSON args. */
function jobToWire(spec, defaults, index) {
    const where = index === undefined ? "" : `jobs[${index}]`;
    const at = (f) => (index === undefined ? f : `jobs[${index}].${f}`);
    if (!spec || typeof spec !== "object")
        throw new errors_1.InvalidError(`${where || "the job"} is not an object`, { field: "job" });
    if (typeof spec.type !== "string" || spec.type === "")
        throw new errors_1.InvalidError(`${at("type")}: a job needs a type (a non-empty string)`, { field: "type" });
    const queue = spec.queue ?? defaults.queue;
    if (typeof queue !== "string" || queue === "")
        throw new errors_1.InvalidError(`${at("queue")}: a job needs a queue (or a client with a default queue)`, { field: "queue" });
    const w = { queue, type: spec.type };
    const tenant = spec.tenant ?? defaults.tenant;
    if (tenant !== undefined)
        w["tenant"] = tenant;
    if (spec.args !== undefined) {
        (0, json_1.checkJson)(spec.args, "args", at("args"));
        w["args"] = spec.args;
    }
    if (spec.key !== undefined)
        w["key"] = spec.key;
    if (spec.uniqueKey !== undefined)
        w["unique_key"] = spec.uniqueKey;
    if (spec.unique !== undefined)
        w["unique"] = spec.unique;
    if (spec.idempotencyKey !== undefined)
        w["idempotency_key"] = spec.idempotencyKey;
    if (spec.priority !== undefined) {
        if (!Number.isInteger(spec.priority))
            throw new errors_1.InvalidError(`${at("priority")} must be an integer`, { field: "priority" });
        w["priority"] = spec.priority;
    }
    if (spec.runAt !== undefined) {
        const t = spec.runAt instanceof Date ? spec.runAt.getTime() : spec.runAt;
        if (!Number.isFinite(t))
            throw new errors_1.InvalidError(`${at("runAt")} must be a time (ms since the epoch, or a Date)`, { field: "run_at" });
        w["run_at"] = Math.round(t);
    }
    if (spec.maxAttempts !== undefined) {
        if (!Number.isInteger(spec.maxAttempts) || spec.maxAttempts < 1)
            throw new errors_1.InvalidError(`${at("maxAttempts")} must be a positive integer`, { field: "max_attempts" });
        w["max_attempts"] = spec.maxAttempts;
    }
    if (spec.timeoutMs !== undefined) {
        if (!Number.isInteger(spec.timeoutMs) || spec.timeoutMs < 0)
            throw new errors_1.InvalidError(`${at("timeoutMs")} must be a whole number of milliseconds`, { field: "timeout_ms" });
        w["timeout_ms"] = spec.timeoutMs;
    }
    if (spec.traceparent !== undefined)
        w["traceparent"] = (0, tracing_1.checkTraceparent)(spec.traceparent, at("traceparent"));
    if (spec.score !== undefined) {
        if (!Number.isFinite(spec.score))
            throw new errors_1.InvalidError(`${at("score")} must be a finite number`, { field: "score" });
        w["score"] = spec.score;
    }
    if (spec.dependsOn !== undefined)
        w["depends_on"] = dependsOnToWire(spec.dependsOn, at("dependsOn"));
    if (spec.onParentFailure !== undefined) {
        if (spec.onParentFailure !== "cancel" && spec.onParentFailure !== "run")
            throw new errors_1.InvalidError(`${at("onParentFailure")} must be "cancel" or "run"`, { field: "on_parent_failure" });
        w["on_parent_failure"] = spec.onParentFailure;
    }
    if (spec.concurrencyKeys !== undefined)
        w["concurrency_keys"] = keysToWire(spec.concurrencyKeys, at("concurrencyKeys"), "concurrency_keys", CKEY_FIELDS);
    if (spec.rateKeys !== undefined)
        w["rate_keys"] = keysToWire(spec.rateKeys, at("rateKeys"), "rate_keys", RKEY_FIELDS);
    for (const [name, wire] of [
        ["debounceMs", "debounce_ms"],
        ["debounceMaxMs", "debounce_max_ms"],
        ["startWithinMs", "start_within_ms"],
    ]) {
        const v = spec[name];
        if (v === undefined)
            continue;
        if (!Number.isInteger(v) || v < 0)
            throw new errors_1.InvalidError(`${at(name)} must be a whole number of milliseconds`, { field: wire });
        w[wire] = v;
    }
    if (spec.expireAt !== undefined) {
        const t = spec.expireAt instanceof Date ? spec.expireAt.getTime() : spec.expireAt;
        if (!Number.isFinite(t))
            throw new errors_1.InvalidError(`${at("expireAt")} must be a time (ms since the epoch, or a Date)`, { field: "expire_at" });
        w["expire_at"] = Math.round(t);
    }
    return w;
}
const CKEY_FIELDS = [["limit", "limit"]];
const RKEY_FIELDS = [
    ["cost", "cost"],
    ["rate", "rate"],
    ["ratePeriodMs", "rate_period_ms"],
    ["rateBurst", "rate_burst"],
];
/** A list of keys as the wire's: each a key alone, or `{"key", ...}` in snake_case (the server checks the values, naming the field). */
function keysToWire(keys, where, field, fields) {
    if (!Array.isArray(keys))
        throw new errors_1.InvalidError(`${where} must be a list of keys`, { field });
    return keys.map((k, i) => {
        if (typeof k === "string")
            return k;
        if (!k || typeof k !== "object" || typeof k["key"] !== "string")
            throw new errors_1.InvalidError(`${where}[${i}] must be a key or {key, ...}`, { field: `${field}[${i}]` });
        const o = k;
        const out = { key: o["key"] };
        for (const [name, wire] of fields)
            if (o[name] !== undefined)
                out[wire] = o[name];
        return out;
    });
}
function keysFromWire(v, fields) {
    if (!Array.isArray(v))
        return undefined;
    return v
        .filter((x) => !!x && typeof x === "object" && typeof x["key"] === "string")
        .map((x) => {
        const out = { key: x["key"] };
        for (const [name, wire] of fields)
            if (typeof x[wire] === "number")
                out[name] = x[wire];
        return out;
    });
}
/** `dependsOn` as the wire's list: ids, and `{"index": i}`. */
function dependsOnToWire(deps, where) {
    if (!Array.isArray(deps))
        throw new errors_1.InvalidError(`${where} must be a list`, { field: "depends_on" });
    return deps.map((d) => {
        if (typeof d === "number" && Number.isSafeInteger(d))
            return d;
        if (d && typeof d === "object") {
            const o = d;
            if (typeof o["id"] === "number")
                return o["id"];
            if (typeof o["index"] === "number" && Number.isInteger(o["index"]))
                return { index: o["index"] };
        }
        throw new errors_1.InvalidError(`${where} holds job ids, handles or index(i), not ${JSON.stringify(d)}`, { field: "depends_on" });
    });
}
/** Whether a prepared job names an earlier job of its request by `{"index": i}`. */
function hasIndexRef(w) {
    const deps = w?.["depends_on"];
    return Array.isArray(deps) && deps.some((d) => typeof d === "object" && d !== null);
}
/** A batch's callback to send: a job's fields less those a callback does not take. */
function callbackToWire(spec, defaults, name) {
    const at = (f) => `${name}.${f}`;
    if (!spec || typeof spec !== "object")
        throw new errors_1.InvalidError(`${name} is not an object`, { field: name });
    if (typeof spec.type !== "string" || spec.type === "")
        throw new errors_1.InvalidError(`${at("type")}: a callback needs a type`, { field: at("type") });
    const queue = spec.queue ?? defaults.queue;
    if (typeof queue !== "string" || queue === "")
        throw new errors_1.InvalidError(`${at("queue")}: a callback needs a queue`, { field: at("queue") });
    const w = { queue, type: spec.type };
    if (spec.args !== undefined) {
        (0, json_1.checkJson)(spec.args, "args", at("args"));
        w["args"] = spec.args;
    }
    if (spec.key !== undefined)
        w["key"] = spec.key;
    if (spec.priority !== undefined)
        w["priority"] = spec.priority;
    if (spec.maxAttempts !== undefined)
        w["max_attempts"] = spec.maxAttempts;
    if (spec.timeoutMs !== undefined)
        w["timeout_ms"] = spec.timeoutMs;
    if (spec.traceparent !== undefined)
        w["traceparent"] = (0, tracing_1.checkTraceparent)(spec.traceparent, at("traceparent"));
    return w;
}
const ids = (v) => (Array.isArray(v) ? v.filter((x) => typeof x === "number") : undefined);
function parentsFromWire(v) {
    const o = asObject(v, "parents");
    const id = num(o["id"]);
    if (id === null)
        throw new errors_1.ProtocolError("the answer is not a job's parents (no id)");
    const parents = (Array.isArray(o["parents"]) ? o["parents"] : []).map((p) => {
        const x = asObject(p, "parents");
        return { id: num(x["id"]) ?? 0, state: (str(x["state"]) ?? "gone"), result: (x["result"] ?? null) };
    });
    const children = (Array.isArray(o["children"]) ? o["children"] : []).map((c) => {
        const x = asObject(c, "parents");
        return { id: num(x["id"]) ?? 0, state: (str(x["state"]) ?? "ready") };
    });
    return { id, state: (str(o["state"]) ?? "ready"), parents, children, childrenCount: num(o["children_count"]) ?? children.length };
}
function batchFromWire(v) {
    const o = asObject(v, "batch");
    const id = num(o["id"]);
    if (id === null)
        throw new errors_1.ProtocolError("the answer is not a batch (no id)");
    const counts = {};
    const c = o["counts"];
    if (c && typeof c === "object")
        for (const [k, n] of Object.entries(c))
            if (typeof n === "number")
                counts[k] = n;
    const callbacks = {};
    const cbs = o["callbacks"];
    if (cbs && typeof cbs === "object")
        for (const [k, x] of Object.entries(cbs)) {
            if (!x || typeof x !== "object")
                continue;
            const cb = x;
            const info = { queue: str(cb["queue"]) ?? "", type: str(cb["type"]) ?? "", args: (cb["args"] ?? null), job: num(cb["job"]) };
            callbacks[k] = info;
        }
    return {
        id,
        tenant: str(o["tenant"]) ?? "",
        status: str(o["status"]) === "closed" ? "closed" : "open",
        createdAt: num(o["created_at"]),
        closedAt: num(o["closed_at"]),
        total: num(o["total"]) ?? 0,
        pending: num(o["pending"]) ?? 0,
        finished: num(o["finished"]) ?? 0,
        progress: num(o["progress"]) ?? 0,
        counts,
        callbacks,
    };
}
/** The workflow fields a job and a lease share. */
function workflowFromWire(o, job) {
    const parents = ids(o["parents"]);
    if (parents)
        job.parents = parents;
    const batch = num(o["batch"]);
    if (batch !== null)
        job.batch = batch;
    const cb = str(o["batch_callback"]);
    if (cb !== null)
        job.batchCallback = cb;
    const steps = num(o["steps"]);
    if (steps !== null)
        job.steps = steps;
}
/** A submit's answer; `replayedRequest`: the server replayed the request's first answer (Idempotent-Replayed). */
function submitResult(v, what, replayedRequest = false) {
    const o = asObject(v, what);
    const id = num(o["id"]);
    if (id === null)
        throw new errors_1.ProtocolError(`${what}: the answer has no id`);
    const duplicate = o["duplicate"] === true;
    const merged = o["merged"] === true;
    const jobReplayed = o["replayed"] === true; // the job's own idempotency_key was seen before
    const debounced = o["debounced"] === true; // the pending job of its key took it
    return {
        id,
        state: (str(o["state"]) ?? "ready"),
        created: !duplicate && !merged && !jobReplayed && !debounced,
        duplicate,
        merged,
        replayed: jobReplayed || replayedRequest,
        debounced,
    };
}
/** An item of a batch's answer that says it was refused, as a TenqError. */
function itemError(o) {
    const e = o["error"];
    if (!e || typeof e !== "object")
        return undefined;
    const w = e;
    return (0, errors_1.errorFromWire)(w, { status: statusOf(w.code) });
}
/** The HTTP status that goes with an error word (an item of a batch has none of its own). */
function statusOf(code) {
    switch (code) {
        case "invalid":
            return 400;
        case "unauthenticated":
            return 401;
        case "forbidden":
            return 403;
        case "not_found":
            return 404;
        case "conflict":
        case "batch_closed":
            return 409;
        case "too_large":
            return 413;
        case "rate_limited":
        case "overloaded":
            return 429;
        case "unavailable":
        case "not_leader":
            return 503;
        default:
            return 0;
    }
}
function batchResult(v, what, replayedRequest = false) {
    const o = asObject(v, what);
    const err = itemError(o);
    if (err)
        return { ok: false, error: err };
    return { ok: true, ...submitResult(o, what, replayedRequest) };
}
function jobFromWire(v) {
    const o = asObject(v, "job");
    const id = num(o["id"]);
    if (id === null)
        throw new errors_1.ProtocolError("the answer is not a job (no id)");
    const job = {
        id,
        tenant: str(o["tenant"]) ?? "",
        queue: str(o["queue"]) ?? "",
        type: str(o["type"]) ?? "",
        key: str(o["key"]),
        priority: num(o["priority"]) ?? 0,
        state: (str(o["state"]) ?? "ready"),
        attempts: num(o["attempts"]) ?? 0,
        maxAttempts: num(o["max_attempts"]) ?? 0,
        runAt: num(o["run_at"]),
        createdAt: num(o["created_at"]),
        readyAt: num(o["ready_at"]),
        leasedAt: num(o["leased_at"]),
        startedAt: num(o["started_at"]),
        finishedAt: num(o["finished_at"]),
        worker: str(o["worker"]),
        error: str(o["error"]),
        result: (o["result"] ?? null),
        stats: (o["stats"] ?? null),
        progress: (o["progress"] ?? null),
        uniqueKey: str(o["unique_key"]),
        idempotencyKey: str(o["idempotency_key"]),
        leaseUntil: num(o["lease_until"]),
        cancelRequested: o["cancel_requested"] === true,
    };
    if ("args" in o)
        job.args = o["args"];
    if (Array.isArray(o["payloads"]))
        job.payloads = o["payloads"];
    const into = num(o["merged_into"]);
    if (into !== null)
        job.mergedInto = into;
    const token = num(o["token"]);
    if (token !== null)
        job.token = token;
    const tp = str(o["traceparent"]);
    if (tp !== null)
        job.traceparent = tp;
    const timeout = num(o["timeout_ms"]);
    if (timeout !== null)
        job.timeoutMs = timeout;
    const waiting = o["waiting"];
    if (waiting && typeof waiting === "object" && !Array.isArray(waiting))
        job.waiting = waitingFromWire(waiting);
    workflowFromWire(o, job);
    const opf = str(o["on_parent_failure"]);
    if (opf === "cancel" || opf === "run")
        job.onParentFailure = opf;
    const children = ids(o["children"]);
    if (children)
        job.children = children;
    const nc = num(o["children_count"]);
    if (nc !== null)
        job.childrenCount = nc;
    const ck = keysFromWire(o["concurrency_keys"], CKEY_FIELDS);
    if (ck)
        job.concurrencyKeys = ck;
    const rk = keysFromWire(o["rate_keys"], RKEY_FIELDS);
    if (rk)
        job.rateKeys = rk;
    const exp = num(o["expire_at"]);
    if (exp !== null)
        job.expireAt = exp;
    if (o["debounced"] === true)
        job.debounced = true;
    const du = num(o["debounce_until"]);
    if (du !== null)
        job.debounceUntil = du;
    const by = num(o["awaited_by"]);
    if (by !== null)
        job.awaitedBy = by;
    return job;
}
/** GET /v1/keys's answer. */
function keyPageFromWire(v) {
    const o = asObject(v, "keys");
    const keys = asList(o["keys"], "keys").map((x) => {
        const k = asObject(x, "keys");
        const r = k["rate"] && typeof k["rate"] === "object" ? k["rate"] : null;
        const holders = ids(k["holders"]);
        const jobs = ids(k["jobs"]);
        const info = {
            tenant: str(k["tenant"]) ?? "",
            key: str(k["key"]) ?? "",
            limit: num(k["limit"]),
            active: num(k["active"]) ?? 0,
            ready: num(k["ready"]) ?? 0,
            held: num(k["held"]) ?? 0,
            atLimit: k["at_limit"] === true,
            setting: str(k["setting"]),
            rate: r && {
                rate: num(r["rate"]) ?? 0,
                ratePeriodMs: num(r["rate_period_ms"]) ?? 0,
                rateBurst: num(r["rate_burst"]) ?? 0,
                until: num(r["until"]),
                setting: str(r["setting"]),
            },
        };
        if (holders)
            info.holders = holders;
        if (jobs)
            info.jobs = jobs;
        return info;
    });
    return { total: num(o["total"]) ?? keys.length, keysAtLimit: num(o["keys_at_limit"]) ?? 0, keys };
}
/** A key setting as the server shows it. */
function keySettingFromWire(v) {
    const o = asObject(v, "key setting");
    return {
        tenant: str(o["tenant"]) ?? "",
        key: str(o["key"]) ?? "",
        concurrency: num(o["concurrency"]),
        rate: num(o["rate"]),
        ratePeriodMs: num(o["rate_period_ms"]) ?? 1000,
        rateBurst: num(o["rate_burst"]),
    };
}
function waitingFromWire(o) {
    const w = { reason: (str(o["reason"]) ?? "worker"), message: str(o["message"]) ?? "" };
    const until = num(o["until"]);
    if (until !== null)
        w.until = until;
    const by = num(o["blocked_by"]);
    if (by !== null)
        w.blockedBy = by;
    const active = num(o["active"]);
    if (active !== null)
        w.active = active;
    const limit = num(o["limit"]);
    if (limit !== null)
        w.limit = limit;
    const asked = num(o["asked_at"]);
    if (asked !== null)
        w.askedAt = asked;
    const parents = ids(o["parents"]);
    if (parents)
        w.parents = parents;
    const key = str(o["key"]);
    if (key !== null)
        w.key = key;
    const heldBy = num(o["held_by"]);
    if (heldBy !== null)
        w.heldBy = heldBy;
    const event = str(o["event"]);
    if (event !== null)
        w.event = event;
    const child = num(o["child"]);
    if (child !== null)
        w.child = child;
    return w;
}
function leasedFromWire(v) {
    const o = asObject(v, "lease");
    const id = num(o["id"]);
    const token = num(o["token"]);
    if (id === null || token === null)
        throw new errors_1.ProtocolError("a leased job without id or token");
    const job = {
        id,
        token,
        leaseUntil: num(o["lease_until"]) ?? 0,
        leaseLeftMs: num(o["lease_left_ms"]) ?? 0,
        tenant: str(o["tenant"]) ?? "",
        queue: str(o["queue"]) ?? "",
        type: str(o["type"]) ?? "",
        key: str(o["key"]),
        priority: num(o["priority"]) ?? 0,
        // the lease counts the attempts before this one; this one's number is one more
        attempt: (num(o["attempt"]) ?? 0) + 1,
        maxAttempts: num(o["max_attempts"]) ?? 0,
        runAt: num(o["run_at"]) ?? 0,
        createdAt: num(o["created_at"]) ?? 0,
    };
    if ("args" in o)
        job.args = o["args"];
    if (Array.isArray(o["payloads"]))
        job.payloads = o["payloads"];
    const tp = str(o["traceparent"]);
    if (tp !== null)
        job.traceparent = tp;
    const timeout = num(o["timeout_ms"]);
    if (timeout !== null)
        job.timeoutMs = timeout;
    workflowFromWire(o, job);
    return job;
}
function outcomeToWire(o) {
    const w = { id: o.id, token: o.token, ok: o.ok };
    if (o.ok) {
        if (o.result !== undefined)
            w["result"] = o.result;
    }
    else {
        if (o.error !== undefined)
            w["error"] = o.error;
        if (o.retryInMs !== undefined)
            w["retry_in_ms"] = Math.max(0, Math.round(o.retryInMs));
        if (o.retry !== undefined)
            w["retry"] = o.retry;
        if (o.cancelled)
            w["cancelled"] = true;
    }
    if (o.stats !== undefined)
        w["stats"] = o.stats;
    return w;
}
function outcomeResult(v, id) {
    const o = asObject(v, "outcome");
    const err = itemError(o);
    if (err)
        return { id, ok: false, error: err };
    const r = { id, ok: true, state: (str(o["state"]) ?? "succeeded") };
    const runAt = num(o["run_at"]);
    if (runAt !== null)
        r.runAt = runAt;
    return r;
}
/** An outcome as JSON text (the common ack without result or stats written directly). */
function outcomeJson(o) {
    if (o.ok && o.result === undefined && o.stats === undefined)
        return `{"id":${o.id},"token":${o.token},"ok":true}`;
    return JSON.stringify(outcomeToWire(o));
}
/** A schedule to PUT, checked: a cron expression, a job with a type and a queue, JSON args. */
function scheduleToWire(spec, defaults) {
    if (!spec || typeof spec !== "object")
        throw new errors_1.InvalidError("a schedule is an object", { field: "schedule" });
    if (typeof spec.cron !== "string" || spec.cron === "")
        throw new errors_1.InvalidError("a schedule needs a cron expression (a non-empty string)", { field: "cron" });
    const j = spec.job;
    if (!j || typeof j !== "object")
        throw new errors_1.InvalidError("a schedule needs a job", { field: "job" });
    if (typeof j.type !== "string" || j.type === "")
        throw new errors_1.InvalidError("job.type: a job needs a type", { field: "job.type" });
    const queue = j.queue ?? defaults.queue;
    if (typeof queue !== "string" || queue === "")
        throw new errors_1.InvalidError("job.queue: a schedule's job needs a queue (or a client with a default queue)", { field: "job.queue" });
    const job = { queue, type: j.type, args: j.args === undefined ? {} : j.args };
    if (j.args !== undefined)
        (0, json_1.checkJson)(j.args, "job.args", "job.args");
    const tenant = j.tenant ?? defaults.tenant;
    if (tenant !== undefined)
        job["tenant"] = tenant;
    if (j.key !== undefined)
        job["key"] = j.key;
    if (j.priority !== undefined)
        job["priority"] = j.priority;
    if (j.uniqueKey !== undefined)
        job["unique_key"] = j.uniqueKey;
    if (j.unique !== undefined)
        job["unique"] = j.unique;
    if (j.maxAttempts !== undefined)
        job["max_attempts"] = j.maxAttempts;
    if (j.timeoutMs !== undefined)
        job["timeout_ms"] = j.timeoutMs;
    const w = { cron: spec.cron, job };
    if (spec.timezone !== undefined)
        w["timezone"] = spec.timezone;
    if (spec.missed !== undefined)
        w["missed"] = spec.missed;
    if (spec.paused !== undefined)
        w["paused"] = spec.paused;
    return w;
}
function scheduleFromWire(v) {
    const o = asObject(v, "schedule");
    const name = str(o["name"]);
    if (name === null)
        throw new errors_1.ProtocolError("the answer is not a schedule (no name)");
    const j = asObject(o["job"] ?? {}, "schedule's job");
    const runs = Array.isArray(o["next_runs"]) ? o["next_runs"].filter((x) => typeof x === "number") : [];
    return {
        name,
        cron: str(o["cron"]) ?? "",
        timezone: str(o["timezone"]) ?? "UTC",
        missed: (str(o["missed"]) ?? "skip"),
        paused: o["paused"] === true,
        job: {
            tenant: str(j["tenant"]) ?? "",
            queue: str(j["queue"]) ?? "",
            type: str(j["type"]) ?? "",
            args: (j["args"] ?? null),
            key: str(j["key"]),
            priority: num(j["priority"]) ?? 0,
            uniqueKey: str(j["unique_key"]),
            unique: j["unique"] === true,
            maxAttempts: num(j["max_attempts"]),
            timeoutMs: num(j["timeout_ms"]),
        },
        lastTick: num(o["last_tick"]),
        lastJob: num(o["last_job"]),
        nextTick: num(o["next_tick"]),
        nextRuns: runs,
        lastError: str(o["last_error"]),
        createdAt: num(o["created_at"]) ?? 0,
        updatedAt: num(o["updated_at"]) ?? 0,
    };
}
function attemptFromWire(v) {
    const o = asObject(v, "attempt");
    const outcome = str(o["outcome"]);
    if (outcome === null)
        throw new errors_1.ProtocolError("the answer is not an attempt (no outcome)");
    return {
        attempt: num(o["attempt"]) ?? 0,
        token: num(o["token"]),
        worker: str(o["worker"]),
        leasedAt: num(o["leased_at"]),
        startedAt: num(o["started_at"]),
        finishedAt: num(o["finished_at"]),
        outcome: outcome,
        jobState: (str(o["job_state"]) ?? "ready"),
        error: str(o["error"]),
        stats: (o["stats"] ?? null),
        steps: Array.isArray(o["steps"]) ? o["steps"].filter((x) => typeof x === "string") : [],
    };
}
