/**
 * Errors about a job's run rather than a request: what `handle.wait()` throws
 * for a job that died or was cancelled, why a handler's AbortSignal fired,
 * and what a handler throws to choose its retry.
 */
import { TenqError } from "./errors";
import type { Job } from "./types";
/** `wait()` on a job that ended in the morgue (state `dead`): `message` is the job's last error. */
export declare class JobFailedError extends TenqError {
    readonly job: Job | undefined;
    constructor(message: string, job?: Job);
}
/**
 * The job was cancelled: what `wait()` throws for a cancelled job, and the
 * reason of a handler's AbortSignal when the server asks it to stop.
 */
export declare class JobCancelledError extends TenqError {
    readonly job: Job | undefined;
    constructor(message?: string, job?: Job);
}
/** `wait()` on a job that expired: not started by its `expireAt` (docs/SEMANTICS.md, "Expiry"), it never ran. */
export declare class JobExpiredError extends TenqError {
    readonly job: Job | undefined;
    constructor(message: string, job?: Job);
}
/** The signal's reason when the job ran past its timeout: the job fails "timeout". */
export declare class JobTimeoutError extends TenqError {
    constructor(message?: string);
}
/** The signal's reason when the worker stops and the grace period is over: the job is given back. */
export declare class WorkerStoppedError extends TenqError {
    constructor(message?: string);
}
/** The signal's reason when the lease was lost (expired, taken over): nothing is reported. */
export declare class LeaseLostError extends TenqError {
    constructor(message?: string);
}
/** Thrown by a handler: this attempt failed; run it again in `inMs` milliseconds. */
export declare class RetryError extends Error {
    readonly inMs: number;
    constructor(inMs: number, message?: string);
}
/** Thrown by a handler: this attempt failed and the job goes to the morgue now (no retry). */
export declare class NoRetryError extends Error {
    constructor(message: string);
}
