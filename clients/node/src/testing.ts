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
 */
import type { JobContext, RunMode } from "./context";
import { InvalidError, TenqError } from "./errors";
import type { JobHandle } from "./handle";
import { JobCancelledError } from "./job-errors";
import { checkJson, type JsonValue } from "./json";
import { invoke, type Registry } from "./registry";
import type { CancelResult, Job, JobState, LeasedJob } from "./types";

export type TestMode = "off" | "inline" | "fake";

export interface FakeJob {
  readonly id: number;
  readonly type: string;
  readonly args: JsonValue | undefined;
  /** The submit's body as the server would have got it (queue, tenant, key, idempotency_key, traceparent, ...). */
  readonly fields: Readonly<Record<string, unknown>>;
  readonly traceparent: string | undefined;
  /** The job's own server-side timeout, as submitted. */
  readonly timeoutMs: number | undefined;
  state: "enqueued" | "succeeded" | "failed" | "cancelled";
  result: JsonValue | undefined;
  /** What the handler threw. */
  error: unknown;
  /** The latest progress the handler reported. */
  progress: JsonValue | undefined;
}

const roundTrip = (v: unknown, field: string): JsonValue | undefined => {
  if (v === undefined) return undefined;
  checkJson(v, field);
  return JSON.parse(JSON.stringify(v)) as JsonValue;
};

export class Testing {
  private current: TestMode = "off";
  private nextId = 1;
  /** Every job submitted in a test mode, in order (inline ones too). */
  readonly jobs: FakeJob[] = [];

  constructor(private readonly registry: Registry) {}

  get mode(): TestMode {
    return this.current;
  }
  /** Submits run their handler at once, in-process. */
  inline(): void {
    this.current = "inline";
  }
  /** Submits are recorded; `drain()` runs them. */
  fake(): void {
    this.current = "fake";
  }
  /** Back to the server. */
  disable(): void {
    this.current = "off";
  }
  /** Forgets the recorded jobs. */
  clear(): void {
    this.jobs.length = 0;
  }
  /** The recorded jobs of a type. */
  jobsOf(type: string): FakeJob[] {
    return this.jobs.filter((j) => j.type === type);
  }
  /** Jobs recorded and not run yet. */
  get enqueued(): FakeJob[] {
    return this.jobs.filter((j) => j.state === "enqueued");
  }

  /**
   * Runs the recorded jobs through their handlers, in order, including jobs
   * they submit; resolves to how many ran. A handler's error stops the drain
   * and is thrown (the job is left `failed`).
   */
  async drain(o: { type?: string } = {}): Promise<number> {
    let n = 0;
    for (;;) {
      const next = this.jobs.find((j) => j.state === "enqueued" && (o.type === undefined || j.type === o.type));
      if (!next) return n;
      await this.run(next, "fake");
      n++;
    }
  }

  /** A submit in the current mode (the app calls this with the prepared wire body). */
  async submit<R>(fields: Record<string, unknown>): Promise<JobHandle<R>> {
    const type = String(fields["type"]);
    const fj: FakeJob = {
      id: this.nextId++,
      type,
      args: fields["args"] === undefined ? undefined : (JSON.parse(JSON.stringify(fields["args"])) as JsonValue),
      fields: { ...fields },
      traceparent: typeof fields["traceparent"] === "string" ? fields["traceparent"] : undefined,
      timeoutMs: typeof fields["timeout_ms"] === "number" ? fields["timeout_ms"] : undefined,
      state: "enqueued",
      result: undefined,
      error: undefined,
      progress: undefined,
    };
    this.jobs.push(fj);
    if (this.current === "inline") await this.run(fj, "inline");
    return new LocalHandle<R>(fj);
  }

  private async run(fj: FakeJob, mode: RunMode): Promise<void> {
    const reg = this.registry.get(fj.type);
    if (!reg) {
      fj.state = "failed";
      fj.error = new InvalidError(`no handler registered for type "${fj.type}"`, { field: "type" });
      throw fj.error;
    }
    const f = fj.fields;
    const job: LeasedJob = {
      id: fj.id,
      token: 1,
      leaseUntil: Date.now() + 300_000,
      leaseLeftMs: 300_000,
      tenant: typeof f["tenant"] === "string" ? f["tenant"] : "",
      queue: String(f["queue"]),
      type: fj.type,
      key: typeof f["key"] === "string" ? f["key"] : null,
      priority: typeof f["priority"] === "number" ? f["priority"] : 0,
      attempt: 0,
      maxAttempts: typeof f["max_attempts"] === "number" ? f["max_attempts"] : 25,
      runAt: Date.now(),
      createdAt: Date.now(),
    };
    if (fj.args !== undefined) job.args = fj.args;
    if (fj.traceparent !== undefined) job.traceparent = fj.traceparent;
    if (fj.timeoutMs !== undefined) job.timeoutMs = fj.timeoutMs;
    const ctx: JobContext = {
      job,
      id: fj.id,
      type: fj.type,
      args: fj.args,
      attempt: 0,
      token: 1,
      traceparent: fj.traceparent,
      signal: new AbortController().signal,
      mode,
      worker: mode,
      progress: (v) => {
        fj.progress = roundTrip(v, "progress");
      },
    };
    try {
      fj.result = roundTrip(await invoke(reg, ctx), "result");
      fj.state = "succeeded";
    } catch (e) {
      fj.state = "failed";
      fj.error = e;
      throw e;
    }
  }
}

const STATE: Record<FakeJob["state"], JobState> = {
  enqueued: "ready",
  succeeded: "succeeded",
  failed: "dead",
  cancelled: "cancelled",
};

/** A job of a test mode. */
class LocalHandle<R> implements JobHandle<R> {
  readonly id: number;
  readonly submitted;
  constructor(private readonly fj: FakeJob) {
    this.id = fj.id;
    this.submitted = { id: fj.id, state: STATE[fj.state], created: true, duplicate: false, merged: false, replayed: false };
  }
  async wait(): Promise<R> {
    const fj = this.fj;
    if (fj.state === "succeeded") return fj.result as R;
    if (fj.state === "failed") throw fj.error;
    if (fj.state === "cancelled") throw new JobCancelledError(`job ${fj.id} was cancelled`);
    throw new TenqError("invalid", `job ${fj.id} has not run: fake mode only records jobs (run them with tenq.testing.drain())`);
  }
  async job(): Promise<Job> {
    const fj = this.fj;
    const f = fj.fields;
    const job: Job = {
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
    if (fj.args !== undefined) job.args = fj.args;
    if (fj.traceparent !== undefined) job.traceparent = fj.traceparent;
    if (fj.timeoutMs !== undefined) job.timeoutMs = fj.timeoutMs;
    return job;
  }
  async cancel(): Promise<CancelResult> {
    if (this.fj.state === "enqueued") this.fj.state = "cancelled";
    else if (this.fj.state !== "cancelled")
      throw new TenqError("conflict", `job ${this.fj.id} is ${this.fj.state}: finished jobs cannot be cancelled`, { status: 409 });
    return { id: this.fj.id, state: "cancelled", cancelRequested: false };
  }
}
