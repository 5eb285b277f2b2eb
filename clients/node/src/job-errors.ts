// SPDX-License-Identifier: Apache-2.0
/**
 * Errors about a job's run rather than a request: what `handle.wait()` throws
 * for a job that died or was cancelled, why a handler's AbortSignal fired,
 * and what a handler throws to choose its retry.
 */
import { TenqError } from "./errors";
import type { Job } from "./types";

/** `wait()` on a job that ended in the morgue (state `dead`): `message` is the job's last error. */
export class JobFailedError extends TenqError {
  readonly job: Job | undefined;
  constructor(message: string, job?: Job) {
    super("dead", message);
    this.job = job;
  }
}

/**
 * The job was cancelled: what `wait()` throws for a cancelled job, and the
 * reason of a handler's AbortSignal when the server asks it to stop.
 */
export class JobCancelledError extends TenqError {
  readonly job: Job | undefined;
  constructor(message = "cancelled", job?: Job) {
    super("cancelled", message);
    this.job = job;
  }
}

/** `wait()` on a job that expired: not started by its `expireAt` (docs/SEMANTICS.md, "Expiry"), it never ran. */
export class JobExpiredError extends TenqError {
  readonly job: Job | undefined;
  constructor(message: string, job?: Job) {
    super("expired", message);
    this.job = job;
  }
}

/** The signal's reason when the job ran past its timeout: the job fails "timeout". */
export class JobTimeoutError extends TenqError {
  constructor(message = "timeout") {
    super("timeout", message);
  }
}

/** The signal's reason when the worker stops and the grace period is over: the job is given back. */
export class WorkerStoppedError extends TenqError {
  constructor(message = "worker stopped") {
    super("stopped", message);
  }
}

/** The signal's reason when the lease was lost (expired, taken over): nothing is reported. */
export class LeaseLostError extends TenqError {
  constructor(message = "the lease was lost") {
    super("lease_lost", message);
  }
}

/** Thrown by a handler: this attempt failed; run it again in `inMs` milliseconds. */
export class RetryError extends Error {
  readonly inMs: number;
  constructor(inMs: number, message = `retry in ${inMs} ms`) {
    super(message);
    this.name = "RetryError";
    this.inMs = inMs;
  }
}

/** Thrown by a handler: this attempt failed and the job goes to the morgue now (no retry). */
export class NoRetryError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "NoRetryError";
  }
}
