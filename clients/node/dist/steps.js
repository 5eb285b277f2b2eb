"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.StepState = exports.ChildFailedError = exports.EventTimeoutError = exports.Parked = void 0;
exports.isParked = isParked;
exports.stepFromWire = stepFromWire;
exports.stepsFromWire = stepsFromWire;
exports.eventResultFromWire = eventResultFromWire;
exports.inlineSteps = inlineSteps;
// SPDX-License-Identifier: Apache-2.0
/**
 * Durable steps (docs/SEMANTICS.md, "Durable steps"): what a job's handler
 * stored (Step), the answer to an event (EventResult), what a step throws in
 * the handler (Parked: the job waits between attempts; EventTimeoutError;
 * ChildFailedError), and the part of a handler's context that stores steps.
 */
const errors_1 = require("./errors");
const json_1 = require("./json");
const wire_1 = require("./wire");
/**
 * Thrown inside a handler by a step that parked its job: a durable sleep
 * (`ctx.sleepFor`, `ctx.sleepUntil`), a wait for an event
 * (`ctx.waitForEvent`) or for a child job (`ctx.runChild`). The attempt is
 * over, without failing: the worker reports nothing, and the job runs again
 * (from the start, its stored steps answering at once) when its wait is
 * over. Let it leave the handler: a `catch` that swallows it should rethrow
 * it (`if (isParked(e)) throw e`); a handler that goes on anyway has its
 * outcome dropped.
 */
class Parked extends Error {
    kind;
    stepName;
    state;
    constructor(
    /** The kind of the step that parked the job. */
    kind, 
    /** Its name. */
    stepName, 
    /** The job's state now: `scheduled` (a sleep) or `waiting`. */
    state) {
        super(`parked: ${kind} "${stepName}" (the job is ${state})`);
        this.kind = kind;
        this.stepName = stepName;
        this.state = state;
        this.name = "Parked";
    }
}
exports.Parked = Parked;
/** Whether `e` is the Parked a step threw (rethrow it). */
function isParked(e) {
    return e instanceof Parked;
}
/** `ctx.waitForEvent` timed out: no event of its key came in time. */
class EventTimeoutError extends errors_1.TimeoutError {
    key;
    stepName;
    constructor(key, stepName) {
        super(`no event "${key}" came before the wait "${stepName}" timed out`);
        this.key = key;
        this.stepName = stepName;
    }
}
exports.EventTimeoutError = EventTimeoutError;
/**
 * `ctx.runChild`'s child job did not succeed: it died (`error` is its last
 * error) or was cancelled. `child` is its id, `state` the state it ended in.
 */
class ChildFailedError extends errors_1.TenqError {
    child;
    state;
    error;
    constructor(child, state, error) {
        super("child_failed", `child job ${child} ended ${state ?? "without succeeding"}: ${error ?? ""}`);
        this.child = child;
        this.state = state;
        this.error = error;
    }
}
exports.ChildFailedError = ChildFailedError;
const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
const str = (v) => (typeof v === "string" ? v : null);
function stepFromWire(v) {
    if (!v || typeof v !== "object" || Array.isArray(v) || typeof v["name"] !== "string")
        throw new errors_1.ProtocolError("a step of the answer is not a step");
    const o = v;
    const s = {
        pos: num(o["pos"]) ?? 0,
        name: o["name"],
        kind: (str(o["kind"]) ?? "step"),
        done: o["done"] === true,
        result: (o["result"] ?? null),
        error: str(o["error"]),
        attempt: num(o["attempt"]) ?? 0,
        token: num(o["token"]),
        createdAt: num(o["created_at"]) ?? 0,
        finishedAt: num(o["finished_at"]),
    };
    const ev = str(o["event"]);
    if (ev !== null)
        s.event = ev;
    if ("until" in o)
        s.until = num(o["until"]);
    const child = num(o["child"]);
    if (child !== null)
        s.child = child;
    const cs = str(o["child_state"]);
    if (cs !== null)
        s.childState = cs;
    return s;
}
function stepsFromWire(v) {
    const list = v && typeof v === "object" ? v["steps"] : undefined;
    if (!Array.isArray(list))
        throw new errors_1.ProtocolError("the steps answer has no list");
    return list.map(stepFromWire);
}
function eventResultFromWire(v) {
    if (!v || typeof v !== "object" || Array.isArray(v))
        throw new errors_1.ProtocolError("the event's answer is not an object");
    const o = v;
    const jobs = o["jobs"];
    return {
        tenant: str(o["tenant"]) ?? "",
        key: str(o["key"]) ?? "",
        delivered: num(o["delivered"]) ?? 0,
        jobs: Array.isArray(jobs) ? jobs.filter((x) => typeof x === "number") : [],
        kept: o["kept"] === true,
        expiresAt: num(o["expires_at"]),
    };
}
/**
 * The steps of one run of a handler: those stored (read once, at the first
 * step call, when the lease says the job has some), the calls made of each
 * kind (for names left out), whether a step parked the job.
 */
class StepState {
    job;
    backend;
    onParked;
    parked = false;
    stored;
    calls = new Map();
    /** `backend` undefined: outside a worker (steps just run). */
    constructor(job, backend, onParked = () => { }) {
        this.job = job;
        this.backend = backend;
        this.onParked = onParked;
    }
    get live() {
        return this.backend !== undefined && this.job.token !== 0;
    }
    map() {
        return (this.stored ??= (async () => {
            const m = new Map();
            if (this.live && (this.job.steps ?? 0) > 0)
                for (const s of await this.backend.steps(this.job.id))
                    if (s.done)
                        m.set(s.name, s);
            return m;
        })());
    }
    /** Reads the job's steps again (a step sent again whose first answer was lost). */
    async reread(name) {
        const all = await this.backend.steps(this.job.id);
        const m = await this.map();
        for (const s of all)
            if (s.done)
                m.set(s.name, s);
        return m.get(name);
    }
    async steps() {
        return [...(await this.map()).values()];
    }
    async step(name, fn) {
        if (typeof name !== "string" || name === "")
            throw new errors_1.InvalidError("a step needs a name", { field: "name" });
        const got = (await this.map()).get(name);
        if (got)
            return got.result;
        const value = await fn();
        if (!this.live)
            return value;
        (0, json_1.checkJson)(value === undefined ? null : value, "result");
        await this.post({ name, result: value === undefined ? null : value }, "step", name);
        this.remember(await this.map(), name, "step", (value ?? null), null);
        return value;
    }
    async sleepFor(ms, o = {}) {
        if (typeof ms !== "number" || !(ms >= 0))
            throw new errors_1.InvalidError("sleepFor: ms must be 0 or more", { field: "duration_ms" });
        return this.sleep(o.name, { duration_ms: Math.round(ms) }, ms);
    }
    async sleepUntil(when, o = {}) {
        const at = when instanceof Date ? when.getTime() : when;
        if (typeof at !== "number" || !Number.isFinite(at))
            throw new errors_1.InvalidError("sleepUntil: a Date or ms since the epoch", { field: "until" });
        return this.sleep(o.name, { until: Math.max(1, Math.round(at)) }, at - Date.now());
    }
    async sleep(name, body, inlineMs) {
        const n = this.auto("sleep", name);
        const m = await this.map();
        if (m.has(n))
            return;
        if (!this.live) {
            await new Promise((r) => setTimeout(r, Math.max(0, inlineMs)));
            return;
        }
        const ans = await this.post({ ...body, name: n, kind: "sleep" }, "sleep", n);
        if (ans["parked"] === true)
            throw this.park("sleep", n, ans["state"]);
        this.remember(m, n, "sleep", null, null); // its time had passed
    }
    async waitForEvent(key, o = {}) {
        const n = this.auto("event", o.name);
        const m = await this.map();
        let got = m.get(n);
        if (!got) {
            if (!this.live)
                throw new errors_1.InvalidError("waitForEvent needs a worker's job", { field: "event" });
            const body = { name: n, kind: "event", event: key };
            if (o.timeoutMs !== undefined)
                body["timeout_ms"] = Math.max(1, Math.round(o.timeoutMs));
            const ans = await this.post(body, "event", n);
            if (ans["parked"] === true)
                throw this.park("event", n, ans["state"]);
            // taken at once from a kept event; sent again (its answer lost): read it back
            got = ans["duplicate"] === true ? await this.reread(n) : this.remember(m, n, "event", (ans["result"] ?? null), null);
            if (!got)
                throw new errors_1.ProtocolError(`event step "${n}" was stored, and is not in the job's steps`);
        }
        if (got.error !== null)
            throw new EventTimeoutError(key, n);
        return got.result;
    }
    async runChild(spec, o = {}) {
        const n = this.auto("child", o.name);
        const got = (await this.map()).get(n);
        if (!got) {
            if (!this.live)
                throw new errors_1.InvalidError("runChild needs a worker's job", { field: "job" });
            const job = (0, wire_1.jobToWire)(spec, { tenant: this.job.tenant, queue: this.job.queue });
            const ans = await this.post({ name: n, kind: "child", job }, "child", n);
            if (ans["parked"] === true)
                throw this.park("child", n, ans["state"]);
            throw new errors_1.ProtocolError(`child step "${n}" neither parked nor was stored before`);
        }
        if ((got.childState !== undefined && got.childState !== "succeeded") || got.error !== null)
            throw new ChildFailedError(got.child ?? 0, got.childState, got.error);
        return got.result;
    }
    auto(kind, name) {
        const k = (this.calls.get(kind) ?? 0) + 1;
        this.calls.set(kind, k);
        return name ?? `${kind}#${k}`;
    }
    remember(m, name, kind, result, error) {
        const s = { pos: m.size, name, kind, done: true, result, error, attempt: this.job.attempt, token: this.job.token, createdAt: Date.now(), finishedAt: Date.now() };
        m.set(name, s);
        return s;
    }
    /**
     * POST /v1/jobs/{id}/steps under this attempt's lease. A parking step
     * whose answer was lost, sent again, finds its lease over (409 on the
     * token): the job is parked (or its lease lost), and the handler ends
     * either way.
     */
    async post(body, kind, name) {
        body["token"] = this.job.token;
        try {
            return await this.backend.storeStep(this.job.id, body);
        }
        catch (e) {
            if (kind !== "step" && e instanceof errors_1.ConflictError && e.field === "token")
                throw this.park(kind, name, "waiting");
            throw e;
        }
    }
    park(kind, name, state) {
        if (!this.parked) {
            this.parked = true;
            this.onParked();
        }
        return new Parked(kind, name, (typeof state === "string" ? state : "waiting"));
    }
}
exports.StepState = StepState;
/** The steps of a handler run outside a worker (the test modes): a step just runs, a sleep sleeps. */
function inlineSteps(job) {
    const st = new StepState(job, undefined);
    return {
        step: (name, fn) => st.step(name, fn),
        sleepFor: (ms, o) => st.sleepFor(ms, o),
        sleepUntil: (when, o) => st.sleepUntil(when, o),
        waitForEvent: (key, o) => st.waitForEvent(key, o),
        runChild: (spec, o) => st.runChild(spec, o),
        steps: () => st.steps(),
        parked: false,
    };
}
