// SPDX-License-Identifier: Apache-2.0
/** The protocol's objects as this library hands them out (camelCase), and what it takes. */
import type { TenqError } from "./errors";
import type { JsonValue } from "./json";

export type JobState =
  | "scheduled"
  | "blocked"
  | "ready"
  | "leased"
  | "running"
  | "succeeded"
  | "cancelled"
  | "merged"
  | "dead";

/** succeeded, cancelled, merged and dead: the states `wait` waits for. */
export function isFinished(state: JobState | string): boolean {
  return state === "succeeded" || state === "cancelled" || state === "merged" || state === "dead";
}

/** How a job is submitted, besides its type and args. Every field of POST /v1/jobs. */
export interface SubmitOptions {
  /** Implied by a tenant token; else required (or the client's default). */
  tenant?: string;
  /** Required (or the client's default). */
  queue?: string;
  /** The lane: jobs of one (tenant, queue, key) run one at a time, in order. */
  key?: string;
  /** Returns the unfinished job with this key instead of making another. */
  uniqueKey?: string;
  /** Deduplicate on a hash of type and args. */
  unique?: boolean;
  /**
   * The job's own idempotency key: a later job with the same key is not made,
   * its submit is answered with this job (`replayed: true`) for 24 h. Sent
   * only when given (every submit request is already safe to retry: see
   * `SubmitCallOptions.requestKey`).
   */
  idempotencyKey?: string;
  /** -32768..32767, higher first. */
  priority?: number;
  /** When to run: milliseconds since the epoch, or a Date. */
  runAt?: number | Date;
  maxAttempts?: number;
  /** Merging queues: the payload's order. */
  score?: number;
  /** W3C trace context (`00-<32 hex>-<16 hex>-<2 hex>`); default: the client's `trace` hook. */
  traceparent?: string;
}

/** One job to submit. */
export interface JobSpec extends SubmitOptions {
  type: string;
  /** Any JSON value (checked before sending). */
  args?: unknown;
}

/**
 * The answer to a submit. `created` is false for a duplicate, a merge or a
 * job whose own `idempotencyKey` was seen before. `replayed` is true then,
 * and also when the server answered the request's `Idempotency-Key` with its
 * first answer (a retry of a request that was made): the rest of the result
 * is that first answer.
 */
export interface SubmitResult {
  id: number;
  state: JobState;
  created: boolean;
  duplicate: boolean;
  merged: boolean;
  replayed: boolean;
}

/** One job's answer in a batch: made (or deduplicated), or refused on its own. */
export type BatchResult = ({ ok: true } & SubmitResult) | { ok: false; error: TenqError };

export interface Payload {
  payload: JsonValue;
  score: number;
}

/** A job as GET /v1/jobs/{id} returns it. */
export interface Job {
  id: number;
  tenant: string;
  queue: string;
  type: string;
  key: string | null;
  /** Absent on merging queues, which carry `payloads`. */
  args?: JsonValue;
  payloads?: Payload[];
  priority: number;
  state: JobState;
  attempts: number;
  maxAttempts: number;
  runAt: number | null;
  createdAt: number | null;
  readyAt: number | null;
  leasedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  worker: string | null;
  error: string | null;
  result: JsonValue | null;
  stats: JsonValue | null;
  progress: JsonValue | null;
  uniqueKey: string | null;
  idempotencyKey: string | null;
  leaseUntil: number | null;
  cancelRequested: boolean;
  /** State merged: the job that took its payloads. */
  mergedInto?: number;
  /** The lease's fencing token (admin and worker tokens). */
  token?: number;
  /** The W3C trace context it was submitted with. */
  traceparent?: string;
}

/** A job handed to a worker by POST /v1/lease. */
export interface LeasedJob {
  id: number;
  token: number;
  leaseUntil: number;
  /** The time the lease had left when the server answered, in ms (0 from a server too old to say). */
  leaseLeftMs: number;
  tenant: string;
  queue: string;
  type: string;
  key: string | null;
  args?: JsonValue;
  payloads?: Payload[];
  priority: number;
  attempt: number;
  maxAttempts: number;
  runAt: number;
  createdAt: number;
  /** The W3C trace context it was submitted with. */
  traceparent?: string;
}

export interface ListFilter {
  tenant?: string;
  queue?: string;
  type?: string;
  state?: JobState;
  key?: string;
  /** The `next` of the page before. */
  afterId?: number;
  /** 1..1000 (the server's default: 50). */
  limit?: number;
}

export interface JobPage {
  jobs: Job[];
  /** Pass as `afterId` for the following page; null on the last page. */
  next: number | null;
}

export interface CancelResult {
  id: number;
  state: JobState;
  /** The job is leased or running: its worker is told at its next heartbeat. */
  cancelRequested: boolean;
}

/** A finished attempt, reported with POST /v1/outcomes or with the next lease. */
export type Outcome =
  | { id: number; token: number; ok: true; result?: JsonValue; stats?: JsonValue }
  | {
      id: number;
      token: number;
      ok: false;
      error?: string;
      /** Retry after this many ms instead of the queue's backoff. */
      retryInMs?: number;
      /** false: to the morgue now. */
      retry?: boolean;
      /** The worker stopped a cancelled job. */
      cancelled?: boolean;
      stats?: JsonValue;
    };

/** An outcome's answer: the job's new state, or why it was refused. */
export type OutcomeResult = { id: number; ok: true; state: JobState; runAt?: number } | { id: number; ok: false; error: TenqError };

export interface LeaseRequest {
  /** Recorded on the jobs (default: HOST/pid-PID). */
  worker?: string;
  queues: string[];
  /** Only these types (default: every type). */
  types?: string[];
  /** 1..1000. */
  max?: number;
  /** Long poll: answer as soon as a job is eligible, or after this. */
  waitMs?: number;
  /** Outcomes applied (and committed) before the lease is taken. */
  outcomes?: Outcome[];
}

export interface LeaseResult {
  jobs: LeasedJob[];
  /** The outcomes' answers, in order. */
  results: OutcomeResult[];
  /** The answer's length (UTF-16 code units): what the jobs weigh, about. */
  size?: number;
}

export interface FailOptions {
  error?: string;
  retryInMs?: number;
  retry?: boolean;
  cancelled?: boolean;
  stats?: JsonValue;
}

export interface Health {
  status: string;
  role?: "leader" | "standby" | string;
  store?: string;
  leader?: string;
  [field: string]: JsonValue | undefined;
}

export interface MorgueFilter {
  tenant?: string;
  queue?: string;
  type?: string;
  /** `finished` (newest death first, the default) or `id`. */
  sort?: "finished" | "id";
  limit?: number;
  /** The `next` of the page before. */
  after?: string | number;
}

export interface MorguePage {
  jobs: Job[];
  next: string | number | null;
}
