"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.ATTEMPT_OUTCOMES = exports.WAITING_REASONS = exports.FINISHED_STATES = exports.JOB_STATES = void 0;
exports.isFinished = isFinished;
exports.index = index;
/** Every job state, in the server's order (GET /v1/spec; test/spec.test.ts checks it). */
exports.JOB_STATES = ["scheduled", "blocked", "waiting", "ready", "leased", "running", "dead", "succeeded", "cancelled", "merged", "expired"];
/** The states a job moves no further from by itself: what `wait` waits for. */
exports.FINISHED_STATES = ["dead", "succeeded", "cancelled", "merged", "expired"];
/** succeeded, cancelled, merged, expired and dead: the states `wait` waits for. */
function isFinished(state) {
    return exports.FINISHED_STATES.includes(state);
}
/** `dependsOn: [index(0)]`: the first job of the same `submitMany` or `createBatch` list. */
function index(i) {
    return { index: i };
}
/** Why a job that is neither handed out nor finished waits (docs/API.md; GET /v1/spec). */
exports.WAITING_REASONS = [
    "scheduled",
    "backoff",
    "lane",
    "tenant_slots",
    "tenant_cap",
    "queue_paused",
    "tenant_paused",
    "tenant_rate",
    "queue_rate",
    "queue_tenant_rate",
    "worker",
    "no_worker",
    "parents",
    "sleep",
    "event",
    "child",
    "concurrency_key",
    "rate_key",
];
/** How an attempt ended; `leased` and `running` are the attempt under way. */
/** How an attempt ended, or that it is under way (GET /v1/spec). */
exports.ATTEMPT_OUTCOMES = ["failed", "expired", "timed_out", "cancelled", "succeeded", "leased", "running", "suspended"];
