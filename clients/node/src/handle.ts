// SPDX-License-Identifier: Apache-2.0
/** A submitted job, seen from the code that submitted it: `wait()` gives the handler's result. */
import type { Client, WaitOptions } from "./client";
import { JobCancelledError, JobExpiredError, JobFailedError } from "./job-errors";
import type { CancelResult, Job, SubmitResult } from "./types";

export interface JobHandle<R = unknown> {
  readonly id: number;
  /** The submit's answer (a duplicate or an idempotent replay has `created: false`). */
  readonly submitted: SubmitResult;
  /**
   * Waits for the job and gives the handler's result (as JSON carried it).
   * Throws JobFailedError when the job died, JobCancelledError when it was
   * cancelled, JobExpiredError when it expired, TimeoutError when
   * `timeoutMs` passed first.
   */
  wait(options?: WaitOptions): Promise<R>;
  /** The job now. */
  job(): Promise<Job>;
  cancel(): Promise<CancelResult>;
}

/** The result of a finished job, or the error its end means. */
export function resultOf<R>(job: Job): R {
  switch (job.state) {
    case "succeeded":
      return job.result as R;
    case "cancelled":
      throw new JobCancelledError(`job ${job.id} was cancelled`, job);
    case "expired":
      throw new JobExpiredError(`job ${job.id} expired: not started by ${job.expireAt ?? "its expire_at"}`, job);
    default:
      throw new JobFailedError(`job ${job.id} is ${job.state}: ${job.error ?? "no error recorded"}`, job);
  }
}

/** A job on a server. */
export class RemoteHandle<R = unknown> implements JobHandle<R> {
  readonly id: number;
  constructor(
    private readonly client: Client,
    readonly submitted: SubmitResult,
  ) {
    this.id = submitted.id;
  }
  async wait(options: WaitOptions = {}): Promise<R> {
    return resultOf<R>(await this.client.wait(this.id, options));
  }
  job(): Promise<Job> {
    return this.client.get(this.id);
  }
  cancel(): Promise<CancelResult> {
    return this.client.cancel(this.id);
  }
}
