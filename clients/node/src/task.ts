// SPDX-License-Identifier: Apache-2.0
/**
 * One leased job in a worker's hands: its abort signal, heartbeat timing
 * (on the monotonic clock), progress, and what its end is reported as.
 */
import { workflowContext, type JobContext, type WorkflowBackend } from "./context";
import { JobCancelledError, JobTimeoutError, LeaseLostError, NoRetryError, RetryError, WorkerStoppedError } from "./job-errors";
import { checkJson, type JsonValue } from "./json";
import { describeError } from "./middleware";
import { TX_SETTLED } from "./tx";
import { StepState, type Step, type StepBackend, type StepOptions, type WaitForEventOptions } from "./steps";
import type { JobParents, JobSpec, LeasedJob, Outcome, SubmitResult } from "./types";

/** Why a handler was told to stop; a later reason of a higher rank overrides. */
export type StopReason = "cancel" | "timeout" | "lost" | "shutdown";
const RANK: Record<StopReason, number> = { cancel: 1, timeout: 2, lost: 3, shutdown: 4 };

export type Settled = { ok: true; value: unknown } | { ok: false; error: unknown } | { ok: "released" };

/** The longest error text sent (the rest is cut). */
const ERROR_MAX = 8 * 1024;
/** The shortest heartbeat interval, whatever the lease says. */
const BEAT_MIN_MS = 100;

/**
 * Milliseconds between heartbeats: a third of the time the server says the lease has left,
 * timed with performance.now(), so that no step of either machine's wall clock moves them.
 * From a server too old to say, the lease's deadline by this machine's clock.
 */
function beatEvery(leaseLeftMs: number, leaseUntil: number): number {
  const left = leaseLeftMs > 0 ? leaseLeftMs : leaseUntil - Date.now();
  return Math.max(BEAT_MIN_MS, left / 3);
}

export class UnknownTypeError extends Error {
  constructor(type: string) {
    super(`no handler for job type "${type}"`);
    this.name = "UnknownTypeError";
  }
}

export class Task {
  /** The lease's length, measured when it arrived (or at its last heartbeat), over 3. */
  beatEveryMs: number;
  /** When the next heartbeat is due (performance.now()). */
  beatDue: number;
  lastBeat = -Infinity;
  beating = false;
  progress: JsonValue | undefined;
  progressDirty = false;
  stop: StopReason | undefined;
  finished = false;
  /** Timers of this job (timeout, grace after a stop). */
  timers: NodeJS.Timeout[] = [];
  /** The run is over (the handler returned, or the wait for it ended). */
  settled = false;
  /** When to tell the server the handler began (performance.now()). */
  noticeDue = 0;
  /** When its handler began (performance.now()). */
  startedAt = 0;
  /** How its handler settled the job in its own transaction (completeTx, failTx), if it did. */
  tx: Outcome | undefined;
  /** The handler's context, once it began (the worker's events hand it out). */
  ctx: JobContext | undefined;
  /** A step parked the job (the lease is over): nothing is reported. */
  parked = false;
  private ac: AbortController | undefined;

  constructor(readonly job: LeasedJob) {
    this.beatEveryMs = beatEvery(job.leaseLeftMs, job.leaseUntil);
    this.beatDue = performance.now() + this.beatEveryMs;
  }

  get signal(): AbortSignal {
    return (this.ac ??= new AbortController()).signal;
  }

  /** A new lease length from a heartbeat's answer. */
  extended(leaseLeftMs: number, leaseUntil: number): void {
    this.beatEveryMs = beatEvery(leaseLeftMs, leaseUntil);
    this.beatDue = performance.now() + this.beatEveryMs;
  }

  /** Tells the handler to stop; false when a stop of the same or a higher rank came before. */
  tellStop(reason: StopReason): boolean {
    if (this.finished || (this.stop && RANK[this.stop] >= RANK[reason])) return false;
    this.stop = reason;
    const why =
      reason === "cancel"
        ? new JobCancelledError()
        : reason === "timeout"
          ? new JobTimeoutError()
          : reason === "lost"
            ? new LeaseLostError()
            : new WorkerStoppedError();
    (this.ac ??= new AbortController()).abort(why);
    return true;
  }

  clearTimers(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.length = 0;
  }

  /** What the end of the run is reported as; undefined: nothing (the lease is lost). */
  outcome(s: Settled): Outcome | undefined {
    const { id, token } = this.job;
    if (this.parked) return undefined; // its lease ended with the step that parked it
    switch (this.stop) {
      case "lost":
        return undefined;
      case "shutdown":
        return { id, token, ok: false, error: "worker stopped", retryInMs: 0 };
      case "timeout":
        return { id, token, ok: false, error: "timeout" };
      case "cancel":
        if (s.ok === true) break; // finished anyway: it succeeded
        return { id, token, ok: false, error: "cancelled", cancelled: true };
      default:
        if (s.ok === "released") return { id, token, ok: false, error: "worker stopped", retryInMs: 0 };
    }
    if (s.ok === true && this.tx) {
      // settled in the handler's transaction: report the same (answered as applied),
      // so whichever reaches the server first, the job ends the same way
      const tx = this.tx;
      if (!tx.ok || tx.result !== undefined || s.value === undefined) return tx;
    }
    if (s.ok === true) {
      if (s.value === undefined) return { id, token, ok: true };
      try {
        checkJson(s.value, "result");
      } catch (e) {
        return { id, token, ok: false, error: cut(describeError(e)), retry: false };
      }
      return { id, token, ok: true, result: s.value };
    }
    const e = s.ok === false ? s.error : undefined;
    if (e instanceof RetryError) return { id, token, ok: false, error: cut(e.message), retryInMs: e.inMs };
    if (e instanceof NoRetryError) return { id, token, ok: false, error: cut(e.message), retry: false };
    return { id, token, ok: false, error: cut(describeError(e)) };
  }
}

function cut(s: string): string {
  return s.length > ERROR_MAX ? `${s.slice(0, ERROR_MAX - 3)}...` : s;
}

/** The context handed to the handler of a task (getters on the prototype: cheap to make per job). */
export class TaskContext implements JobContext {
  readonly mode = "worker" as const;
  private st: StepState | undefined;
  constructor(
    private readonly t: Task,
    readonly worker: string,
    private readonly onProgress: (t: Task, v: JsonValue) => void,
    private readonly backend: WorkflowBackend & StepBackend,
    private readonly onParked: (t: Task) => void = () => {},
  ) {}
  private get stepState(): StepState {
    return (this.st ??= new StepState(this.t.job, this.backend, () => {
      this.t.parked = true;
      this.onParked(this.t);
    }));
  }
  step<T>(name: string, fn: () => T | Promise<T>): Promise<T> {
    return this.stepState.step(name, fn);
  }
  sleepFor(ms: number, o?: StepOptions): Promise<void> {
    return this.stepState.sleepFor(ms, o);
  }
  sleepUntil(when: Date | number, o?: StepOptions): Promise<void> {
    return this.stepState.sleepUntil(when, o);
  }
  waitForEvent(key: string, o?: WaitForEventOptions): Promise<JsonValue | null> {
    return this.stepState.waitForEvent(key, o);
  }
  runChild(spec: JobSpec, o?: StepOptions): Promise<JsonValue | null> {
    return this.stepState.runChild(spec, o);
  }
  steps(): Promise<Step[]> {
    return this.stepState.steps();
  }
  get parked(): boolean {
    return this.t.parked;
  }
  get batch(): number | undefined {
    return this.t.job.batch;
  }
  get batchCallback(): string | undefined {
    return this.t.job.batchCallback;
  }
  get parents(): number[] {
    return this.t.job.parents ?? [];
  }
  parentResults(): Promise<JobParents> {
    return workflowContext(this.t.job, this.backend).parentResults();
  }
  addToBatch(jobs: readonly JobSpec[]): Promise<SubmitResult[]> {
    return workflowContext(this.t.job, this.backend).addToBatch(jobs);
  }
  get job(): LeasedJob {
    return this.t.job;
  }
  get id(): number {
    return this.t.job.id;
  }
  get type(): string {
    return this.t.job.type;
  }
  get args(): JsonValue | undefined {
    const j = this.t.job;
    return j.args !== undefined ? j.args : (j.payloads as JsonValue | undefined);
  }
  get attempt(): number {
    return this.t.job.attempt;
  }
  get token(): number {
    return this.t.job.token;
  }
  get traceparent(): string | undefined {
    return this.t.job.traceparent;
  }
  get signal(): AbortSignal {
    return this.t.signal;
  }
  progress(value: JsonValue): void {
    this.onProgress(this.t, value);
  }
  /** completeTx / failTx tell the task how its handler settled the job. */
  [TX_SETTLED](o: Outcome): void {
    if (o.id === this.t.job.id && o.token === this.t.job.token && !this.t.finished) this.t.tx = o;
  }
}
