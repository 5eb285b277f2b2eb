// SPDX-License-Identifier: Apache-2.0
/** The protocol's objects as this library hands them out (camelCase), and what it takes. */
import type { TenqError } from "./errors";
import type { JsonValue } from "./json";

/** Every job state, in the server's order (GET /v1/spec; test/spec.test.ts checks it). */
export const JOB_STATES = ["scheduled", "blocked", "waiting", "ready", "leased", "running", "dead", "succeeded", "cancelled", "merged", "expired"] as const;
export type JobState = (typeof JOB_STATES)[number];

/** The states a job moves no further from by itself: what `wait` waits for. */
export const FINISHED_STATES: readonly JobState[] = ["dead", "succeeded", "cancelled", "merged", "expired"];

/** succeeded, cancelled, merged, expired and dead: the states `wait` waits for. */
export function isFinished(state: JobState | string): boolean {
  return (FINISHED_STATES as readonly string[]).includes(state);
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
  /**
   * The server fails an attempt still running this long after its lease
   * (`"timed out: ..."`), and the worker stops its handler as for a lost
   * lease. Default: the queue's `timeout_ms`. At least a third of the
   * queue's `lease_ms`, at most 7 days.
   */
  timeoutMs?: number;
  /**
   * The job's parents (docs/SEMANTICS.md, "Dependencies"): it waits, in
   * state `waiting`, until every one succeeded. Each is a job id, a handle
   * or submit result (anything with an `id`), or, in `submitMany` and
   * `createBatch`, an earlier job of the same list: `index(i)`.
   */
  dependsOn?: readonly Dependency[];
  /** What a parent that dies or is cancelled does: `cancel` (the server's default) cancels this job, `run` counts it as done. */
  onParentFailure?: OnParentFailure;
  /**
   * Concurrency keys of its tenant (docs/SEMANTICS.md, "Concurrency keys"),
   * up to 4: at most a key's limit of the tenant's jobs naming it run at
   * once, across queues and types. A key alone takes its limit from the
   * key's setting, else the queue's `concurrency_limit`.
   */
  concurrencyKeys?: readonly (string | ConcurrencyKey)[];
  /** Rate keys (docs/SEMANTICS.md, "Rate keys"), up to 4: each start takes `cost` units of the key's rate. */
  rateKeys?: readonly (string | RateKey)[];
  /**
   * With `key`: a later submit of the same lane replaces this job while it
   * is pending (its args, then its start moves to `debounceMs` after that
   * submit; docs/SEMANTICS.md, "Debounce").
   */
  debounceMs?: number;
  /** The start moves at most this long after the first submit (0: no bound). */
  debounceMaxMs?: number;
  /** Not leased by then, the job ends `expired` and never runs (ms since the epoch, or a Date). */
  expireAt?: number | Date;
  /** As `expireAt`, counted from the submit. */
  startWithinMs?: number;
}

/** A concurrency key a job names, with its own limit. */
export interface ConcurrencyKey {
  key: string;
  /** 1 to 1,000,000; default the key's setting, else the queue's `concurrency_limit`. */
  limit?: number;
}

/** A rate key a job names: its cost and, when the key has no setting, its rate. */
export interface RateKey {
  key: string;
  /** Units each start takes (default 1); never above the burst. */
  cost?: number;
  /** Units per `ratePeriodMs`. */
  rate?: number;
  ratePeriodMs?: number;
  /** Units at once after a quiet spell (default the rate). */
  rateBurst?: number;
}

/** An earlier job of the same `submitMany` or `createBatch` list, by position (see `index`). */
export interface IndexRef {
  readonly index: number;
}

/** `dependsOn: [index(0)]`: the first job of the same `submitMany` or `createBatch` list. */
export function index(i: number): IndexRef {
  return { index: i };
}

/** A parent in `dependsOn`: a job id, anything with the job's `id` (a handle, a submit result), or `index(i)`. */
export type Dependency = number | { readonly id: number } | IndexRef;

export type OnParentFailure = "cancel" | "run";

/** One job to submit. */
export interface JobSpec extends SubmitOptions {
  type: string;
  /** Any JSON value (checked before sending). */
  args?: unknown;
}

/**
 * The answer to a submit. `created` is false for a duplicate, a merge, a
 * debounce (`debounced`: the pending job of its key took it) or a
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
  debounced: boolean;
}

/** One job's answer in a batch: made (or deduplicated), or refused on its own. */
export type BatchResult = ({ ok: true } & SubmitResult) | { ok: false; error: TenqError };

export interface Payload {
  payload: JsonValue;
  score: number;
}

/** Why a job that is neither handed out nor finished waits (docs/API.md; GET /v1/spec). */
export const WAITING_REASONS = [
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
] as const;
export type WaitingReason = (typeof WAITING_REASONS)[number];

export interface Waiting {
  reason: WaitingReason;
  /** For people: "queue reports is paused", ... */
  message: string;
  /** scheduled, backoff and the rates: when it may go (ms since the epoch). */
  until?: number;
  /** lane: the job that runs first. */
  blockedBy?: number;
  /** tenant_slots, tenant_cap, concurrency_key: jobs running, of `limit`. */
  active?: number;
  limit?: number;
  /** worker, no_worker: when a lease last named its queue and type (ms since the epoch). */
  askedAt?: number;
  /** parents: the parents not finished yet. */
  parents?: number[];
  /** concurrency_key, rate_key: the key holding it. */
  key?: string;
  /** concurrency_key: a job holding the key. */
  heldBy?: number;
  /** event: the key its handler waits for (`until`: its timeout's time, if any; `sleep`'s `until`: when it resumes). */
  event?: string;
  /** child: the child job its handler waits for. */
  child?: number;
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
  /** Its own server-side timeout, when it was submitted with one. */
  timeoutMs?: number;
  /** Why it waits, when it is neither handed out nor finished. */
  waiting?: Waiting;
  /** The jobs it depends on (ids, in the order given), when it was submitted with `dependsOn`. */
  parents?: number[];
  onParentFailure?: OnParentFailure;
  /** The jobs that depend on it (the first 1,000 ids), with their count. */
  children?: number[];
  childrenCount?: number;
  /** The batch it belongs to. */
  batch?: number;
  /** Set on a batch's callback job: which callback it is. */
  batchCallback?: BatchCallbackName;
  /** Its concurrency keys and rate keys, as submitted (a rate key's `cost` filled in). */
  concurrencyKeys?: ConcurrencyKey[];
  rateKeys?: RateKey[];
  /** Not leased by then, it ends `expired`. */
  expireAt?: number;
  /** Submitted with `debounceMs`: later submits of its lane replace it while pending. */
  debounced?: boolean;
  /** The latest its start moves to (its first submit + `debounceMaxMs`). */
  debounceUntil?: number;
  /** How many durable steps its handler stored (`client.steps(id)`), when it has some. */
  steps?: number;
  /** The job whose handler waits for it (`ctx.runChild`), while that one waits. */
  awaitedBy?: number;
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
  /** This attempt's number, 1 on the first run, as `client.attempts(id)` numbers it (the wire's `attempt` + 1). */
  attempt: number;
  maxAttempts: number;
  runAt: number;
  createdAt: number;
  /** The W3C trace context it was submitted with. */
  traceparent?: string;
  /** Its own server-side timeout, when it was submitted with one. */
  timeoutMs?: number;
  /** The jobs it depended on (their results: `client.parents(id)`). */
  parents?: number[];
  /** The batch it belongs to (fan-out: `ctx.addToBatch`). */
  batch?: number;
  /** Set on a batch's callback job. */
  batchCallback?: BatchCallbackName;
  /** How many durable steps its handler stored before this lease (read at its first step). */
  steps?: number;
}

/** A parent of a job, as GET /v1/jobs/{id}/parents shows it (`gone`: pruned; its result is then null). */
export interface ParentInfo {
  id: number;
  state: JobState | "gone";
  result: JsonValue | null;
}

/** A job that depends on another. */
export interface ChildInfo {
  id: number;
  state: JobState;
}

/** A job's dependencies: its parents in the order it named them, and its children (the first 1,000) with their count. */
export interface JobParents {
  id: number;
  state: JobState;
  parents: ParentInfo[];
  children: ChildInfo[];
  childrenCount: number;
}

export type BatchCallbackName = "on_complete" | "on_success" | "on_death";

/** A batch's callback: a job the server submits once (no `runAt`, uniqueness or `dependsOn`). */
export interface CallbackSpec {
  type: string;
  /** Default: the client's. */
  queue?: string;
  args?: unknown;
  key?: string;
  priority?: number;
  maxAttempts?: number;
  timeoutMs?: number;
  traceparent?: string;
}

export interface CreateBatchOptions {
  /** When every job of the batch finished, whatever the outcome. */
  onComplete?: CallbackSpec;
  /** When every job of the batch succeeded. */
  onSuccess?: CallbackSpec;
  /** When the first job of the batch dies. */
  onDeath?: CallbackSpec;
  /** Default: the client's (a tenant token implies its own). */
  tenant?: string;
  /** The request's `Idempotency-Key` (default: a fresh one, reused on the library's retries). */
  requestKey?: string;
}

/** The answer of `createBatch`: the batch's id, and each job's submit result in order. */
export interface BatchCreated {
  id: number;
  jobs: SubmitResult[];
}

/** A callback of a batch as its status shows it; `job`: the job it made (null: not yet, or never). */
export interface BatchCallbackInfo {
  queue: string;
  type: string;
  args: JsonValue | null;
  job: number | null;
}

/** A batch's status (GET /v1/batches/{id}). */
export interface BatchInfo {
  id: number;
  tenant: string;
  /** `closed`: every job finished and the callbacks were made; no job may be added (BatchClosedError). */
  status: "open" | "closed";
  createdAt: number | null;
  closedAt: number | null;
  total: number;
  pending: number;
  finished: number;
  /** finished / total. */
  progress: number;
  /** The batch's jobs by their state now (`deleted`: dead ones deleted from the morgue). */
  counts: Record<string, number>;
  callbacks: Partial<Record<BatchCallbackName, BatchCallbackInfo>>;
}

export interface BatchFilter {
  tenant?: string;
  /** 1..1000 (the server's default: 100). */
  limit?: number;
  /** The `nextBefore` of the page before. */
  before?: number;
}

export interface BatchPage {
  batches: BatchInfo[];
  /** Pass as `before` for the next page; null on the last. */
  nextBefore: number | null;
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

/**
 * A queue's settings (docs/SEMANTICS.md), for `setQueue`, in camelCase (the
 * wire's snake_case names are converted by one table, settings.ts); a limit
 * set to null is removed. A setting this library does not name goes as it
 * is (a newer server's, by its wire name).
 */
export interface QueueSettings {
  order?: "fifo" | "fair";
  delivery?: "at-least-once" | "at-most-once" | "exactly-once";
  leaseMs?: number;
  maxAttempts?: number;
  backoff?: "default" | "fixed" | "exponential";
  backoffBaseMs?: number;
  backoffMaxMs?: number;
  merge?: boolean;
  dedupWindowMs?: number;
  retentionMs?: number;
  maxPayloadBytes?: number;
  tenantCap?: number | null;
  /** Attempts still running this long after their lease fail (0: none). */
  timeoutMs?: number;
  /** Nothing of the queue is leased (see also `pauseQueue`). */
  paused?: boolean;
  /** The queue's starts per `ratePeriodMs`, all tenants together (null: no limit). */
  rate?: number | null;
  /** Each tenant's starts in the queue per `ratePeriodMs` (null: no limit). */
  tenantRate?: number | null;
  ratePeriodMs?: number;
  /** Starts allowed at once after a quiet spell (null: the rate). */
  rateBurst?: number | null;
  /** Unfinished jobs the queue holds at most, all tenants together (null: no quota). */
  maxQueued?: number | null;
  /** Bytes of their args at most (0: no quota). */
  maxQueuedBytes?: number;
  /** The limit of a concurrency key its jobs name without one (default 1). */
  concurrencyLimit?: number;
  /** A ready job's priority rises one step per `agingMs` it waits (0: none; docs/SEMANTICS.md, "Priority aging"). */
  agingMs?: number;
  /** The priority aging raises a job to at most (-32768..32767; default 32767). */
  agingCap?: number;
  [setting: string]: JsonValue | undefined;
}

/** A tenant's settings, for `setTenant`, in camelCase. */
export interface TenantSettings {
  /** Jobs running at once (null: unlimited; 0: paused in every queue). */
  slots?: number | null;
  weight?: number;
  /** Its starts in every queue together per `ratePeriodMs` (null: no limit). */
  rate?: number | null;
  ratePeriodMs?: number;
  rateBurst?: number | null;
  /** Unfinished jobs it holds at most, over every queue (null: no quota). */
  maxQueued?: number | null;
  /** Bytes of their args at most (0: no quota). */
  maxQueuedBytes?: number;
  [setting: string]: JsonValue | undefined;
}

/** The counts of a queue or tenant (docs/API.md). */
export interface Counts {
  ready?: number;
  scheduled?: number;
  blocked?: number;
  /** Waiting for their parents (`dependsOn`). */
  waiting?: number;
  leased?: number;
  running?: number;
  dead?: number;
  /** Unfinished (the six states above but dead): what `maxQueued` counts. */
  queued?: number;
  /** Bytes of their args: what `maxQueuedBytes` counts. */
  queuedBytes?: number;
  /** Ready and free to go. */
  eligible?: number;
  /** Ready but held by a limit: slots, a cap, a pause, a rate. */
  held?: number;
  /** Present while a rate limit of its own allows no start: when it may. */
  rateLimitedUntil?: number;
  lagMs?: number;
  submittedTotal?: number;
  succeededTotal?: number;
  failedTotal?: number;
  deadTotal?: number;
  cancelledTotal?: number;
  expiredTotal?: number;
  completedPerS?: number;
  failedPerS?: number;
}

/** A queue as GET /v1/queues/{name} shows it: its settings and counts. */
export interface QueueInfo extends QueueSettings, Counts {
  name: string;
  /** Paused whole. */
  paused: boolean;
  /** The tenants it is paused for (a tenant token sees only its own). */
  pausedTenants: string[];
  timeoutMs: number;
  rate: number | null;
  tenantRate: number | null;
  ratePeriodMs: number;
  rateBurst: number | null;
}

/** A tenant as GET /v1/tenants/{name} shows it. */
export interface TenantInfo extends TenantSettings, Counts {
  name: string;
  slots: number | null;
  weight: number;
  inUse?: number;
  rate: number | null;
  ratePeriodMs: number;
  rateBurst: number | null;
}

/** What a schedule does with ticks due while it could not run: none, one for the latest, or each (at most 100). */
export type MissedPolicy = "skip" | "once" | "each";

/** The job a schedule submits at each tick: a submit's fields (`runAt`, `idempotencyKey`, `traceparent`, `score` are not a schedule's). */
export interface ScheduleJobSpec {
  type: string;
  /** Any JSON value (checked before sending); default `{}`. */
  args?: unknown;
  /** Default: the client's (a tenant token: its own tenant). */
  tenant?: string;
  /** Default: the client's. */
  queue?: string;
  key?: string;
  priority?: number;
  uniqueKey?: string;
  unique?: boolean;
  maxAttempts?: number;
  /** The job's own timeout: at least a third of its queue's `lease_ms`, at most 7 days. */
  timeoutMs?: number;
}

/** PUT /v1/schedules/{name}: the whole schedule. */
export interface ScheduleSpec {
  /** Five fields, `@hourly`-style names, or `@every 30s`; wall-clock times in `timezone`. */
  cron: string;
  /** An IANA zone name; default `UTC`. */
  timezone?: string;
  /** Default `skip`. */
  missed?: MissedPolicy;
  /** Default false. */
  paused?: boolean;
  job: ScheduleJobSpec;
}

/** The job of a schedule as the server shows it (null: the queue's). */
export interface ScheduleJob {
  tenant: string;
  queue: string;
  type: string;
  args: JsonValue;
  key: string | null;
  priority: number;
  uniqueKey: string | null;
  unique: boolean;
  maxAttempts: number | null;
  timeoutMs: number | null;
}

/** A schedule (periodic job) as GET /v1/schedules/{name} returns it; times in ms since the epoch. */
export interface Schedule {
  name: string;
  cron: string;
  timezone: string;
  missed: MissedPolicy;
  paused: boolean;
  job: ScheduleJob;
  /** The last tick submitted; null before the first. */
  lastTick: number | null;
  /** The job the last tick made (since this server loaded the schedule). */
  lastJob: number | null;
  /** null while paused. */
  nextTick: number | null;
  /** The next ticks (five from `getSchedule`, `runs` from `listSchedules`). */
  nextRuns: number[];
  /** While the last tick was refused: why. */
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
}

/** How an attempt ended; `leased` and `running` are the attempt under way. */
/** How an attempt ended, or that it is under way (GET /v1/spec). */
export const ATTEMPT_OUTCOMES = ["failed", "expired", "timed_out", "cancelled", "succeeded", "leased", "running", "suspended"] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/** One attempt of a job (GET /v1/jobs/{id}/attempts), oldest first. */
export interface Attempt {
  /** The job's attempt count at that lease. */
  attempt: number;
  /** The lease token (admin and worker tokens only). */
  token: number | null;
  worker: string | null;
  leasedAt: number | null;
  startedAt: number | null;
  /** null while under way. */
  finishedAt: number | null;
  outcome: AttemptOutcome;
  /** The state the attempt left the job in (its state now, for the one under way). */
  jobState: JobState;
  error: string | null;
  /** What the worker reported with the outcome. */
  stats: JsonValue | null;
  /** The names of the durable steps it stored (`suspended`: one parked the job; not a failure). */
  steps: string[];
}

/** A key's settings (PUT /v1/key-settings): of one key, or of every key beginning with `key` less its `*`. */
export interface KeySetting {
  tenant: string;
  key: string;
  /** Jobs naming it running at once (null: the jobs' own limit). */
  concurrency: number | null;
  /** Units per `ratePeriodMs` (null: the jobs' own rate). */
  rate: number | null;
  ratePeriodMs: number;
  rateBurst: number | null;
}

/** A key's rate as GET /v1/keys shows it. */
export interface KeyRate {
  rate: number;
  ratePeriodMs: number;
  rateBurst: number;
  /** Its next unit comes then (null: now). */
  until: number | null;
  setting: string | null;
}

/** A key resident jobs name (GET /v1/keys). */
export interface KeyInfo {
  tenant: string;
  key: string;
  /** null: no concurrency limit. */
  limit: number | null;
  /** Its jobs leased or running. */
  active: number;
  ready: number;
  /** Of those, held back by it. */
  held: number;
  atLimit: boolean;
  /** The key setting in force (the key, `prefix*`), or null: its jobs'. */
  setting: string | null;
  rate: KeyRate | null;
  /** Asked for by its name (`listKeys({ key })`): up to 20 jobs running that hold it. */
  holders?: number[];
  /** Asked for by its name: up to 20 of its ready jobs (held back by it while it is at its limit). */
  jobs?: number[];
}

/** GET /v1/keys: the keys listed (those at their limit first), of `total`. */
export interface KeyPage {
  total: number;
  keysAtLimit: number;
  keys: KeyInfo[];
}

export interface KeyFilter {
  tenant?: string;
  /** One key (with `tenant`). */
  key?: string;
  /** Only the keys at their limit. */
  atLimit?: boolean;
  /** 1..1000 (default 100). */
  limit?: number;
}
