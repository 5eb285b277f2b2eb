// SPDX-License-Identifier: Apache-2.0
/**
 * What a handler knows about the job it runs: given as the second argument
 * of a handler, and to any code it calls through `currentJob()` (the
 * switch's methods get their call's arguments only, so this is how they
 * see the signal and report progress).
 */
import { AsyncLocalStorage } from "node:async_hooks";

import { InvalidError } from "./errors";
import type { JsonValue } from "./json";
import type { StepMethods } from "./steps";
import type { JobParents, JobSpec, LeasedJob, SubmitResult } from "./types";

/** What a job's context asks the server (the worker's client; the test modes answer themselves). */
export interface WorkflowBackend {
  parents(id: number): Promise<JobParents>;
  addToBatch(batchId: number, jobs: readonly JobSpec[]): Promise<SubmitResult[]>;
}

export type RunMode = "worker" | "inline" | "fake";

export interface JobContext extends StepMethods {
  /** The job as the lease gave it (made up in the test modes). */
  readonly job: LeasedJob;
  readonly id: number;
  readonly type: string;
  readonly args: JsonValue | undefined;
  /** This attempt's number: 1 on the first run, as `client.attempts(id)` and the job's `attempts` count. */
  readonly attempt: number;
  /** The lease's fencing token. */
  readonly token: number;
  /** The W3C trace context the job was submitted with. */
  readonly traceparent: string | undefined;
  /**
   * Fires when the handler should stop: its reason is a JobCancelledError
   * (the job was cancelled), a JobTimeoutError, a WorkerStoppedError (the
   * worker stops and the grace period is over) or a LeaseLostError.
   */
  readonly signal: AbortSignal;
  /** Where the job runs: a worker, or a test mode. */
  readonly mode: RunMode;
  /** The worker's name (`HOST/pid-PID`). */
  readonly worker: string;
  /** Records progress (any JSON); the latest goes with the next heartbeat, within half a second. */
  progress(value: JsonValue): void;
  /** The batch the job belongs to (from its lease). */
  readonly batch: number | undefined;
  /** On a batch's callback job: which callback (`on_complete`, `on_success`, `on_death`). */
  readonly batchCallback: string | undefined;
  /** The ids of the jobs this one depended on, from its lease ([] when none). */
  readonly parents: number[];
  /** Its parents' ids, states and results (GET /v1/jobs/{id}/parents), in the order it named them. */
  parentResults(): Promise<JobParents>;
  /** Fan-out: adds jobs to this job's batch (open while it runs). InvalidError when the job is in no batch. */
  addToBatch(jobs: readonly JobSpec[]): Promise<SubmitResult[]>;
}

/** The workflow part of a JobContext, for a job and the backend that answers. */
export function workflowContext(job: LeasedJob, backend: WorkflowBackend): Pick<JobContext, "batch" | "batchCallback" | "parents" | "parentResults" | "addToBatch"> {
  return {
    batch: job.batch,
    batchCallback: job.batchCallback,
    parents: job.parents ?? [],
    parentResults: () => backend.parents(job.id),
    addToBatch: async (jobs) => {
      if (job.batch === undefined) throw new InvalidError(`job ${job.id} is in no batch`, { field: "batch" });
      return backend.addToBatch(job.batch, jobs);
    },
  };
}

const store = new AsyncLocalStorage<JobContext>();

/** The job the calling code runs in, or undefined outside a job. */
export function currentJob(): JobContext | undefined {
  return store.getStore();
}

/** Runs `fn` with `ctx` as the current job. */
export function runInJob<T>(ctx: JobContext, fn: () => T): T {
  return store.run(ctx, fn);
}
