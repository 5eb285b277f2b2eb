"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Testing = void 0;
// SPDX-License-Identifier: Apache-2.0
/**
 * Test modes, as Sidekiq::Testing and Oban's modes, needing no server:
 * - `inline`: a submit runs the handler at once, in-process, and resolves
 *   when it is done (a handler's error is thrown by the submit itself);
 * - `fake`: submits are recorded (`jobs`) for assertions, and `drain()`
 *   runs them through their handlers.
 * Either way a submit is checked as a real one would be (args must be JSON,
 * a queue is needed, ...) and args and results go through JSON, as they
 * would over the wire.
 *
 * Dependencies, kept simple: `dependsOn` names jobs of the test mode (their
 * ids or handles; another id is a NotFoundError). A job runs once its
 * parents finished: inline at once (they ran already) when they all
 * succeeded; `drain()` takes the jobs whose parents finished, in order. A
 * parent that failed or was cancelled cancels the job (`onParentFailure`
 * `cancel`, the default) or lets it run (`run`). `ctx.parentResults()`
 * reads the parents the mode holds. Batches are the server's: the test
 * modes have none (`ctx.batch` is undefined there).
 */
const context_1 = require("./context");
const steps_1 = require("./steps");
const errors_1 = require("./errors");
const job_errors_1 = require("./job-errors");
const json_1 = require("./json");
const registry_1 = require("./registry");
const roundTrip = (v, field) => {
    if (v === undefined)
        return undefined;
    (0, json_1.checkJson)(v, field);
    return JSON.parse(JSON.stringify(v));
};
class Testing {
    registry;
    current = "off";
    nextId = 1;
    /** Every job submitted in a test mode, in order (inline ones too). */
    jobs = [];
    constructor(registry) {
        this.registry = registry;
    }
    get mode() {
        return this.current;
    }
    /** Submits run their handler at once, in-process. */
    inline() {
        this.current = "inline";
    }
    /** Submits are recorded; `drain()` runs them. */
    fake() {
        this.current = "fake";
    }
    /** Back to the server. */
    disable() {
        this.current = "off";
    }
    /** Forgets the recorded jobs. */
    clear() {
        this.jobs.length = 0;
    }
    /** The recorded jobs of a type. */
    jobsOf(type) {
        return this.jobs.filter((j) => j.type === type);
    }
    /** Jobs recorded and not run yet. */
    get enqueued() {
        return this.jobs.filter((j) => j.state === "enqueued");
    }
    /**
     * Runs the recorded jobs through their handlers, in order, including jobs
     * they submit; resolves to how many ran. A handler's error stops the drain
     * and is thrown (the job is left `failed`).
     */
    async drain(o = {}) {
        let n = 0;
        for (;;) {
            const next = this.jobs.find((j) => j.state === "enqueued" && (o.type === undefined || j.type === o.type) && this.released(j) !== "wait");
            if (!next)
                return n;
            if (this.released(next) === "cancel") {
                next.state = "cancelled";
                continue;
            }
            await this.run(next, "fake");
            n++;
        }
    }
    /** Whether a job's parents let it go: all finished (`run`, or `cancel` by its policy), or not yet (`wait`). */
    released(fj) {
        let out = "run";
        for (const id of fj.parents) {
            const p = this.jobs.find((j) => j.id === id);
            if (!p || p.state === "succeeded")
                continue;
            if (p.state === "enqueued")
                return "wait";
            if (fj.fields["on_parent_failure"] !== "run")
                out = "cancel";
        }
        return out;
    }
    /** The parents and children of a job of the test mode. */
    parentsOf(id) {
        const fj = this.jobs.find((j) => j.id === id);
        if (!fj)
            throw new errors_1.NotFoundError(`no job ${id} in the test mode`, { field: "id" });
        const children = this.jobs.filter((j) => j.parents.includes(id));
        return {
            id,
            state: STATE[fj.state],
            parents: fj.parents.map((p) => {
                const pj = this.jobs.find((j) => j.id === p);
                return { id: p, state: STATE[pj.state], result: pj.result ?? null };
            }),
            children: children.map((c) => ({ id: c.id, state: STATE[c.state] })),
            childrenCount: children.length,
        };
    }
    /** A submit in the current mode (the app calls this with the prepared wire body). */
    async submit(fields) {
        const type = String(fields["type"]);
        const parents = [];
        for (const d of fields["depends_on"] ?? []) {
            if (typeof d !== "number")
                throw new errors_1.InvalidError("dependsOn: index(i) names a job of the same submitMany (the server's)", { field: "depends_on" });
            if (!this.jobs.some((j) => j.id === d))
                throw new errors_1.NotFoundError(`dependsOn: no job ${d} in the test mode`, { field: "depends_on" });
            if (!parents.includes(d))
                parents.push(d);
        }
        const fj = {
            id: this.nextId++,
            type,
            args: fields["args"] === undefined ? undefined : JSON.parse(JSON.stringify(fields["args"])),
            fields: { ...fields },
            traceparent: typeof fields["traceparent"] === "string" ? fields["traceparent"] : undefined,
            timeoutMs: typeof fields["timeout_ms"] === "number" ? fields["timeout_ms"] : undefined,
            state: "enqueued",
            result: undefined,
            error: undefined,
            progress: undefined,
            parents,
        };
        this.jobs.push(fj);
        if (this.current === "inline") {
            const go = this.released(fj);
            if (go === "cancel")
                fj.state = "cancelled";
            else if (go === "run")
                await this.run(fj, "inline");
        }
        return new LocalHandle(fj);
    }
    async run(fj, mode) {
        const reg = this.registry.get(fj.type);
        if (!reg) {
            fj.state = "failed";
            fj.error = new errors_1.InvalidError(`no handler registered for type "${fj.type}"`, { field: "type" });
            throw fj.error;
        }
        const f = fj.fields;
        const job = {
            id: fj.id,
            token: 1,
            leaseUntil: Date.now() + 300_000,
            leaseLeftMs: 300_000,
            tenant: typeof f["tenant"] === "string" ? f["tenant"] : "",
            queue: String(f["queue"]),
            type: fj.type,
            key: typeof f["key"] === "string" ? f["key"] : null,
            priority: typeof f["priority"] === "number" ? f["priority"] : 0,
            attempt: 1,
            maxAttempts: typeof f["max_attempts"] === "number" ? f["max_attempts"] : 25,
            runAt: Date.now(),
            createdAt: Date.now(),
        };
        if (fj.args !== undefined)
            job.args = fj.args;
        if (fj.traceparent !== undefined)
            job.traceparent = fj.traceparent;
        if (fj.timeoutMs !== undefined)
            job.timeoutMs = fj.timeoutMs;
        if (fj.parents.length)
            job.parents = [...fj.parents];
        const ctx = {
            job,
            id: fj.id,
            type: fj.type,
            args: fj.args,
            attempt: 1,
            token: 1,
            traceparent: fj.traceparent,
            signal: new AbortController().signal,
            mode,
            worker: mode,
            progress: (v) => {
                fj.progress = roundTrip(v, "progress");
            },
            ...(0, steps_1.inlineSteps)(job),
            ...(0, context_1.workflowContext)(job, {
                parents: async (id) => this.parentsOf(id),
                addToBatch: async () => {
                    throw new errors_1.InvalidError("the test modes have no batches", { field: "batch" });
                },
            }),
        };
        try {
            fj.result = roundTrip(await (0, registry_1.invoke)(reg, ctx), "result");
            fj.state = "succeeded";
        }
        catch (e) {
            fj.state = "failed";
            fj.error = e;
            throw e;
        }
    }
}
exports.Testing = Testing;
const STATE = {
    enqueued: "ready",
    succeeded: "succeeded",
    failed: "dead",
    cancelled: "cancelled",
};
/** A job of a test mode. */
class LocalHandle {
    fj;
    id;
    submitted;
    constructor(fj) {
        this.fj = fj;
        this.id = fj.id;
        this.submitted = { id: fj.id, state: STATE[fj.state], created: true, duplicate: false, merged: false, replayed: false, debounced: false };
    }
    async wait() {
        const fj = this.fj;
        if (fj.state === "succeeded")
            return fj.result;
        if (fj.state === "failed")
            throw fj.error;
        if (fj.state === "cancelled")
            throw new job_errors_1.JobCancelledError(`job ${fj.id} was cancelled`);
        throw new errors_1.TenqError("invalid", `job ${fj.id} has not run: fake mode only records jobs (run them with tenq.testing.drain())`);
    }
    async job() {
        const fj = this.fj;
        const f = fj.fields;
        const job = {
            id: fj.id,
            tenant: typeof f["tenant"] === "string" ? f["tenant"] : "",
            queue: String(f["queue"]),
            type: fj.type,
            key: typeof f["key"] === "string" ? f["key"] : null,
            priority: typeof f["priority"] === "number" ? f["priority"] : 0,
            state: STATE[fj.state],
            attempts: fj.state === "enqueued" || fj.state === "cancelled" ? 0 : 1,
            maxAttempts: typeof f["max_attempts"] === "number" ? f["max_attempts"] : 25,
            runAt: null,
            createdAt: null,
            readyAt: null,
            leasedAt: null,
            startedAt: null,
            finishedAt: null,
            worker: null,
            error: fj.state === "failed" ? String(fj.error) : null,
            result: fj.result ?? null,
            stats: null,
            progress: fj.progress ?? null,
            uniqueKey: typeof f["unique_key"] === "string" ? f["unique_key"] : null,
            idempotencyKey: typeof f["idempotency_key"] === "string" ? f["idempotency_key"] : null,
            leaseUntil: null,
            cancelRequested: false,
        };
        if (fj.args !== undefined)
            job.args = fj.args;
        if (fj.traceparent !== undefined)
            job.traceparent = fj.traceparent;
        if (fj.timeoutMs !== undefined)
            job.timeoutMs = fj.timeoutMs;
        if (fj.parents.length) {
            job.parents = [...fj.parents];
            job.onParentFailure = fj.fields["on_parent_failure"] === "run" ? "run" : "cancel";
        }
        return job;
    }
    async cancel() {
        if (this.fj.state === "enqueued")
            this.fj.state = "cancelled";
        else if (this.fj.state !== "cancelled")
            throw new errors_1.TenqError("conflict", `job ${this.fj.id} is ${this.fj.state}: finished jobs cannot be cancelled`, { status: 409 });
        return { id: this.fj.id, state: "cancelled", cancelRequested: false };
    }
}
