"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.TaskContext = exports.Task = exports.UnknownTypeError = void 0;
// SPDX-License-Identifier: Apache-2.0
/**
 * One leased job in a worker's hands: its abort signal, heartbeat timing
 * (on the monotonic clock), progress, and what its end is reported as.
 */
const context_1 = require("./context");
const job_errors_1 = require("./job-errors");
const json_1 = require("./json");
const middleware_1 = require("./middleware");
const tx_1 = require("./tx");
const steps_1 = require("./steps");
const RANK = { cancel: 1, timeout: 2, lost: 3, shutdown: 4 };
/** The longest error text sent (the rest is cut). */
const ERROR_MAX = 8 * 1024;
/** The shortest heartbeat interval, whatever the lease says. */
const BEAT_MIN_MS = 100;
/**
 * Milliseconds between heartbeats: a third of the time the server says the lease has left,
 * timed with performance.now(), so that no step of either machine's wall clock moves them.
 * From a server too old to say, the lease's deadline by this machine's clock.
 */
function beatEvery(leaseLeftMs, leaseUntil) {
    const left = leaseLeftMs > 0 ? leaseLeftMs : leaseUntil - Date.now();
    return Math.max(BEAT_MIN_MS, left / 3);
}
class UnknownTypeError extends Error {
    constructor(type) {
        super(`no handler for job type "${type}"`);
        this.name = "UnknownTypeError";
    }
}
exports.UnknownTypeError = UnknownTypeError;
class Task {
    job;
    /** The lease's length, measured when it arrived (or at its last heartbeat), over 3. */
    beatEveryMs;
    /** When the next heartbeat is due (performance.now()). */
    beatDue;
    lastBeat = -Infinity;
    beating = false;
    progress;
    progressDirty = false;
    stop;
    finished = false;
    /** Timers of this job (timeout, grace after a stop). */
    timers = [];
    /** The run is over (the handler returned, or the wait for it ended). */
    settled = false;
    /** When to tell the server the handler began (performance.now()). */
    noticeDue = 0;
    /** When its handler began (performance.now()). */
    startedAt = 0;
    /** How its handler settled the job in its own transaction (completeTx, failTx), if it did. */
    tx;
    /** The handler's context, once it began (the worker's events hand it out). */
    ctx;
    /** A step parked the job (the lease is over): nothing is reported. */
    parked = false;
    ac;
    constructor(job) {
        this.job = job;
        this.beatEveryMs = beatEvery(job.leaseLeftMs, job.leaseUntil);
        this.beatDue = performance.now() + this.beatEveryMs;
    }
    get signal() {
        return (this.ac ??= new AbortController()).signal;
    }
    /** A new lease length from a heartbeat's answer. */
    extended(leaseLeftMs, leaseUntil) {
        this.beatEveryMs = beatEvery(leaseLeftMs, leaseUntil);
        this.beatDue = performance.now() + this.beatEveryMs;
    }
    /** Tells the handler to stop; false when a stop of the same or a higher rank came before. */
    tellStop(reason) {
        if (this.finished || (this.stop && RANK[this.stop] >= RANK[reason]))
            return false;
        this.stop = reason;
        const why = reason === "cancel"
            ? new job_errors_1.JobCancelledError()
            : reason === "timeout"
                ? new job_errors_1.JobTimeoutError()
                : reason === "lost"
                    ? new job_errors_1.LeaseLostError()
                    : new job_errors_1.WorkerStoppedError();
        (this.ac ??= new AbortController()).abort(why);
        return true;
    }
    clearTimers() {
        for (const t of this.timers)
            clearTimeout(t);
        this.timers.length = 0;
    }
    /** What the end of the run is reported as; undefined: nothing (the lease is lost). */
    outcome(s) {
        const { id, token } = this.job;
        if (this.parked)
            return undefined; // its lease ended with the step that parked it
        switch (this.stop) {
            case "lost":
                return undefined;
            case "shutdown":
                return { id, token, ok: false, error: "worker stopped", retryInMs: 0 };
            case "timeout":
                return { id, token, ok: false, error: "timeout" };
            case "cancel":
                if (s.ok === true)
                    break; // finished anyway: it succeeded
                return { id, token, ok: false, error: "cancelled", cancelled: true };
            default:
                if (s.ok === "released")
                    return { id, token, ok: false, error: "worker stopped", retryInMs: 0 };
        }
        if (s.ok === true && this.tx) {
            // settled in the handler's transaction: report the same (answered as applied),
            // so whichever reaches the server first, the job ends the same way
            const tx = this.tx;
            if (!tx.ok || tx.result !== undefined || s.value === undefined)
                return tx;
        }
        if (s.ok === true) {
            if (s.value === undefined)
                return { id, token, ok: true };
            try {
                (0, json_1.checkJson)(s.value, "result");
            }
            catch (e) {
                return { id, token, ok: false, error: cut((0, middleware_1.describeError)(e)), retry: false };
            }
            return { id, token, ok: true, result: s.value };
        }
        const e = s.ok === false ? s.error : undefined;
        if (e instanceof job_errors_1.RetryError)
            return { id, token, ok: false, error: cut(e.message), retryInMs: e.inMs };
        if (e instanceof job_errors_1.NoRetryError)
            return { id, token, ok: false, error: cut(e.message), retry: false };
        return { id, token, ok: false, error: cut((0, middleware_1.describeError)(e)) };
    }
}
exports.Task = Task;
function cut(s) {
    return s.length > ERROR_MAX ? `${s.slice(0, ERROR_MAX - 3)}...` : s;
}
/** The context handed to the handler of a task (getters on the prototype: cheap to make per job). */
class TaskContext {
    t;
    worker;
    onProgress;
    backend;
    onParked;
    mode = "worker";
    st;
    constructor(t, worker, onProgress, backend, onParked = () => { }) {
        this.t = t;
        this.worker = worker;
        this.onProgress = onProgress;
        this.backend = backend;
        this.onParked = onParked;
    }
    get stepState() {
        return (this.st ??= new steps_1.StepState(this.t.job, this.backend, () => {
            this.t.parked = true;
            this.onParked(this.t);
        }));
    }
    step(name, fn) {
        return this.stepState.step(name, fn);
    }
    sleepFor(ms, o) {
        return this.stepState.sleepFor(ms, o);
    }
    sleepUntil(when, o) {
        return this.stepState.sleepUntil(when, o);
    }
    waitForEvent(key, o) {
        return this.stepState.waitForEvent(key, o);
    }
    runChild(spec, o) {
        return this.stepState.runChild(spec, o);
    }
    steps() {
        return this.stepState.steps();
    }
    get parked() {
        return this.t.parked;
    }
    get batch() {
        return this.t.job.batch;
    }
    get batchCallback() {
        return this.t.job.batchCallback;
    }
    get parents() {
        return this.t.job.parents ?? [];
    }
    parentResults() {
        return (0, context_1.workflowContext)(this.t.job, this.backend).parentResults();
    }
    addToBatch(jobs) {
        return (0, context_1.workflowContext)(this.t.job, this.backend).addToBatch(jobs);
    }
    get job() {
        return this.t.job;
    }
    get id() {
        return this.t.job.id;
    }
    get type() {
        return this.t.job.type;
    }
    get args() {
        const j = this.t.job;
        return j.args !== undefined ? j.args : j.payloads;
    }
    get attempt() {
        return this.t.job.attempt;
    }
    get token() {
        return this.t.job.token;
    }
    get traceparent() {
        return this.t.job.traceparent;
    }
    get signal() {
        return this.t.signal;
    }
    progress(value) {
        this.onProgress(this.t, value);
    }
    /** completeTx / failTx tell the task how its handler settled the job. */
    [tx_1.TX_SETTLED](o) {
        if (o.id === this.t.job.id && o.token === this.t.job.token && !this.t.finished)
            this.t.tx = o;
    }
}
exports.TaskContext = TaskContext;
