// SPDX-License-Identifier: Apache-2.0
/**
 * What a handler knows about the job it runs: given as the second argument
 * of a handler, and to any code it calls through `currentJob()` (the
 * switch's methods get their call's arguments only, so this is how they
 * see the signal and report progress).
 */
import { AsyncLocalStorage } from "node:async_hooks";

import type { JsonValue } from "./json";
import type { LeasedJob } from "./types";

export type RunMode = "worker" | "inline" | "fake";

export interface JobContext {
  /** The job as the lease gave it (made up in the test modes). */
  readonly job: LeasedJob;
  readonly id: number;
  readonly type: string;
  readonly args: JsonValue | undefined;
  /** 0 on the first run. */
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
