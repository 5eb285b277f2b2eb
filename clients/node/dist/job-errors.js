"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.NoRetryError = exports.RetryError = exports.LeaseLostError = exports.WorkerStoppedError = exports.JobTimeoutError = exports.JobExpiredError = exports.JobCancelledError = exports.JobFailedError = void 0;
// SPDX-License-Identifier: Apache-2.0
/**
 * Errors about a job's run rather than a request: what `handle.wait()` throws
 * for a job that died or was cancelled, why a handler's AbortSignal fired,
 * and what a handler throws to choose its retry.
 */
const errors_1 = require("./errors");
/** `wait()` on a job that ended in the morgue (state `dead`): `message` is the job's last error. */
class JobFailedError extends errors_1.TenqError {
    job;
    constructor(message, job) {
        super("dead", message);
        this.job = job;
    }
}
exports.JobFailedError = JobFailedError;
/**
 * The job was cancelled: what `wait()` throws for a cancelled job, and the
 * reason of a handler's AbortSignal when the server asks it to stop.
 */
class JobCancelledError extends errors_1.TenqError {
    job;
    constructor(message = "cancelled", job) {
        super("cancelled", message);
        this.job = job;
    }
}
exports.JobCancelledError = JobCancelledError;
/** `wait()` on a job that expired: not started by its `expireAt` (docs/SEMANTICS.md, "Expiry"), it never ran. */
class JobExpiredError extends errors_1.TenqError {
    job;
    constructor(message, job) {
        super("expired", message);
        this.job = job;
    }
}
exports.JobExpiredError = JobExpiredError;
/** The signal's reason when the job ran past its timeout: the job fails "timeout". */
class JobTimeoutError extends errors_1.TenqError {
    constructor(message = "timeout") {
        super("timeout", message);
    }
}
exports.JobTimeoutError = JobTimeoutError;
/** The signal's reason when the worker stops and the grace period is over: the job is given back. */
class WorkerStoppedError extends errors_1.TenqError {
    constructor(message = "worker stopped") {
        super("stopped", message);
    }
}
exports.WorkerStoppedError = WorkerStoppedError;
/** The signal's reason when the lease was lost (expired, taken over): nothing is reported. */
class LeaseLostError extends errors_1.TenqError {
    constructor(message = "the lease was lost") {
        super("lease_lost", message);
    }
}
exports.LeaseLostError = LeaseLostError;
/** Thrown by a handler: this attempt failed; run it again in `inMs` milliseconds. */
class RetryError extends Error {
    inMs;
    constructor(inMs, message = `retry in ${inMs} ms`) {
        super(message);
        this.name = "RetryError";
        this.inMs = inMs;
    }
}
exports.RetryError = RetryError;
/** Thrown by a handler: this attempt failed and the job goes to the morgue now (no retry). */
class NoRetryError extends Error {
    constructor(message) {
        super(message);
        this.name = "NoRetryError";
    }
}
exports.NoRetryError = NoRetryError;
