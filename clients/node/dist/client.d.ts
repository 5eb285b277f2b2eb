import { TenqError } from "./errors";
import type { JsonValue } from "./json";
import { type ClientOptions, type Resolved } from "./options";
import { type Answer, type Method } from "./transport";
import { type Instrumentation, type Sending } from "./otel";
import { type Queryable } from "./tx";
import type { Attempt, BatchCreated, BatchFilter, BatchInfo, BatchPage, BatchResult, CreateBatchOptions, JobParents, CancelResult, FailOptions, Health, Job, JobPage, JobSpec, KeyFilter, KeyPage, KeySetting, LeaseRequest, LeaseResult, ListFilter, MorgueFilter, MorguePage, Outcome, OutcomeResult, QueueInfo, QueueSettings, Schedule, ScheduleSpec, SubmitResult, TenantInfo, TenantSettings } from "./types";
import { type EventResult, type Step } from "./steps";
/** The most jobs one POST /v1/jobs takes. */
export declare const MAX_BATCH_JOBS = 10000;
/** The header a submit request is made safe to send again with. */
export declare const REQUEST_KEY_HEADER = "Idempotency-Key";
export interface SubmitCallOptions {
    /**
     * The request's `Idempotency-Key` (default: a fresh one per call). Give
     * your own to make a submit safe to repeat across processes: the server
     * answers the same key and body with its first answer for a while
     * (`--request-key-ttl`, 10 minutes by default) and makes nothing; the
     * same key with another body is a ConflictError (field `Idempotency-Key`).
     */
    requestKey?: string;
}
export interface SubmitManyOptions extends SubmitCallOptions {
    /** Requests in flight at once (default 2). */
    concurrency?: number;
    /** Jobs per request, at most 10,000 (the default). */
    batchSize?: number;
}
export interface WaitOptions {
    /** Give up (TimeoutError) after this long; default: wait until the job finishes. */
    timeoutMs?: number;
    signal?: AbortSignal;
}
interface CallOptions {
    body?: string;
    headers?: Readonly<Record<string, string>>;
    resend?: boolean;
    extraMs?: number;
    signal?: AbortSignal;
}
/** The error an answer carries. */
export declare function answerError(a: Answer): TenqError;
export declare class Client {
    readonly options: Resolved;
    private readonly transport;
    private readonly keys;
    /** The OpenTelemetry spans, when `@opentelemetry/api` is there (otel.ts). */
    readonly otel: Instrumentation | undefined;
    constructor(options?: ClientOptions);
    /** The servers tried, in order (leaders learnt from redirects are added). */
    get servers(): string[];
    /** The server the next request goes to first: the one that answered last. */
    get currentServer(): string;
    /** Closes the kept connections. The client can still be used: it connects again. */
    close(): void;
    /** One request; any answer, errors included. */
    send(method: Method, path: string, o?: CallOptions): Promise<Answer>;
    /** One request; a 2xx answer's body, else its typed error. */
    call(method: Method, path: string, o?: CallOptions): Promise<unknown>;
    /**
     * A job as it goes on the wire, checked (refused with InvalidError before
     * anything is sent), with its traceparent (the spec's, else the `trace`
     * hook's). It carries an `idempotency_key` only when the spec has one.
     */
    prepare(spec: JobSpec, index?: number, sending?: Sending): Record<string, unknown>;
    /** Runs a submit call inside its OpenTelemetry producer span (when there is one). */
    private sending;
    /**
     * Submits one job. Safe to send again: the request carries an
     * `Idempotency-Key` made before its first try and the same on every
     * retry (to any server), so a retry whose first try was made is
     * answered with the first answer (`replayed: true`) and makes nothing.
     * A 429 `overloaded` or `quota_exceeded` is waited out for up to
     * `backpressureBudgetMs` (default 60 s), then thrown (OverloadedError,
     * QuotaExceededError).
     */
    submit(spec: JobSpec, o?: SubmitCallOptions): Promise<SubmitResult>;
    /** Submits a job made by `prepare`. */
    submitPrepared(fields: Record<string, unknown>, o?: SubmitCallOptions): Promise<SubmitResult>;
    /** POST /v1/jobs under a request key: a 2xx answer, else its typed error (see `postKeyed`). */
    private postJobs;
    /**
     * Submits many jobs, 10,000 a request (more are split), each answered at
     * its index: made, deduplicated, or refused on its own. Each request
     * carries its own `Idempotency-Key`, reused on its retries (a 429
     * `overloaded` or `quota_exceeded` is sent again after the Retry-After
     * for up to `backpressureBudgetMs` from its first refusal). A request that
     * fails whole throws; the requests before it were made (calling again
     * makes them again, unless the jobs carry their own idempotency keys or
     * the call gives a `requestKey`: request n > 0 of a split call then goes
     * under `<requestKey>.<n>`).
     */
    submitMany(specs: readonly JobSpec[], o?: SubmitManyOptions): Promise<BatchResult[]>;
    private submitManyIn;
    /**
     * submitMany of jobs that name earlier ones by `index(i)`: one request
     * after another; an index into an earlier request becomes that job's id,
     * and a job naming one that was refused is refused too (ConflictError,
     * field `depends_on`), as the server does within a request.
     */
    private submitManyIndexed;
    /**
     * Submits a job in the caller's own PostgreSQL transaction (the server's
     * SQL function tenq.submit, on `db`: a pg.Client or PoolClient inside
     * BEGIN ... COMMIT) and returns its id; the job exists only if that
     * transaction commits. Sends nothing to the server. The client's default
     * tenant and queue and its `trace` hook apply, as for `submit`; a tenant
     * is required (no token implies one here). See `submitTx` in tx.ts.
     */
    submitTx(db: Queryable, spec: JobSpec): Promise<number>;
    /** Submits many jobs in the caller's transaction (tenq.submit_many); their ids in order. */
    submitManyTx(db: Queryable, specs: readonly JobSpec[]): Promise<number[]>;
    get(id: number): Promise<Job>;
    /**
     * Waits for the job to finish (succeeded, cancelled, dead; a merged job is
     * followed to the job that took its payloads) and returns it. Throws
     * TimeoutError when `timeoutMs` passes first. A job made in a transaction
     * (`submitTx`: an odd id) not found yet is looked for again for up to 5 s:
     * the server takes it in milliseconds after the commit.
     */
    wait(id: number, o?: WaitOptions): Promise<Job>;
    /** Cancels a job: at once when it is not leased, else its worker is told (`cancelRequested`). */
    cancel(id: number): Promise<CancelResult>;
    /** One page of jobs, newest first; pass `next` as `afterId` for the following one. */
    list(f?: ListFilter): Promise<JobPage>;
    /** Every job matching the filter, page after page. */
    listAll(f?: ListFilter): AsyncGenerator<Job, void, undefined>;
    /** A page of dead jobs (newest death first, or by id). */
    morgue(f?: MorgueFilter): Promise<MorguePage>;
    /** Takes a dead job out of the morgue (attempts reset, run at once). */
    requeue(id: number): Promise<{
        id: number;
        state: string;
    }>;
    /** GET /v1/queues/{name}: the queue's settings, pauses and counts. */
    getQueue(name: string): Promise<QueueInfo>;
    /**
     * PUT /v1/queues/{name} (admin): settings in camelCase (`leaseMs`,
     * `maxAttempts`, `timeoutMs`, `rate`, `tenantRate`, ...; null removes a
     * limit); the queue as it is then. (The protocol's snake_case names are
     * still taken, with a deprecation warning.)
     */
    setQueue(name: string, settings: QueueSettings): Promise<QueueInfo>;
    /**
     * Pauses the queue whole (admin), or only `tenant`'s jobs in it (a tenant
     * token: its own tenant when none is named): nothing of it is leased
     * until resumed; submits are still taken and leased jobs run to their
     * end. Resolves to the queue (`paused`, `paused_tenants`).
     */
    pauseQueue(name: string, o?: {
        tenant?: string;
    }): Promise<QueueInfo>;
    /** Undoes `pauseQueue` (the same `tenant`): the jobs may be leased at once. Resolves to the queue. */
    resumeQueue(name: string, o?: {
        tenant?: string;
    }): Promise<QueueInfo>;
    /** GET /v1/tenants/{name}: the tenant's settings and counts. */
    getTenant(name: string): Promise<TenantInfo>;
    /** PUT /v1/tenants/{name} (admin): `slots`, `weight`, `rate`, `ratePeriodMs`, `rateBurst`; the tenant then. */
    setTenant(name: string, settings: TenantSettings): Promise<TenantInfo>;
    /** GET /v1/keys: the keys resident jobs name (docs/SEMANTICS.md, "Concurrency keys"), those at their limit first. */
    listKeys(f?: KeyFilter): Promise<KeyPage>;
    /**
     * PUT /v1/key-settings (admin): the settings of `key` of `tenant`, or (a
     * key ending in `*`) of every key beginning with the rest, whole (a
     * setting left out: the jobs' own). The setting as stored.
     */
    setKeySetting(s: {
        tenant: string;
        key: string;
        concurrency?: number | null;
        rate?: number | null;
        ratePeriodMs?: number;
        rateBurst?: number | null;
    }): Promise<KeySetting>;
    /** GET /v1/key-settings: the key settings (of `tenant`, default the client's). */
    keySettings(tenant?: string | undefined): Promise<KeySetting[]>;
    /** DELETE /v1/key-settings (admin); NotFoundError when there is none. */
    deleteKeySetting(tenant: string, key: string): Promise<void>;
    /** A queue request; each may be sent again: the same request sets the same state. */
    private queueCall;
    /**
     * PUT /v1/schedules/{name}: creates the schedule or replaces it whole (its
     * `createdAt` and last tick stay). The job's `queue` and `tenant` default
     * to the client's. A bad expression, zone or job field rejects with
     * InvalidError whose `field` names it (`cron`, `timezone`,
     * `job.timeout_ms`, ...), and nothing changes.
     */
    putSchedule(name: string, spec: ScheduleSpec): Promise<Schedule>;
    /** GET /v1/schedules/{name}: the schedule with its next five runs (NotFoundError when none). */
    getSchedule(name: string): Promise<Schedule>;
    /** GET /v1/schedules: the schedules the token sees (of `tenant`), by name, each with its next `runs` ticks (0-5, default 1). */
    listSchedules(o?: {
        tenant?: string;
        runs?: number;
    }): Promise<Schedule[]>;
    /** DELETE /v1/schedules/{name}: true once it is gone (the jobs it made stay); NotFoundError when there was none. */
    deleteSchedule(name: string): Promise<boolean>;
    /** Stops the schedule's ticks until `resumeSchedule`. */
    pauseSchedule(name: string): Promise<Schedule>;
    /** Resumes a paused schedule; ticks missed meanwhile follow its `missed` policy. */
    resumeSchedule(name: string): Promise<Schedule>;
    /** GET /v1/jobs/{id}/attempts: every attempt of the job, oldest first (the one under way last); [] if never leased. */
    /**
     * GET /v1/jobs/{id}/parents: the job's parents in the order it named
     * them, each with its state and result (what a child reads before it
     * runs), and its children (the first 1,000) with their count.
     */
    parents(id: number): Promise<JobParents>;
    /**
     * POST /v1/batches: a batch of `jobs` (1 to 10,000; their `dependsOn` may
     * name earlier ones by `index(i)`) with its callbacks, jobs the server
     * submits once: `onComplete` when every job finished, `onSuccess` when
     * every job succeeded, `onDeath` at the first death. Everything is checked
     * before anything is made: an InvalidError (or NotFoundError for a parent
     * that is not there) names the field (`jobs[3].type`, `on_death.queue`).
     */
    createBatch(jobs: readonly JobSpec[], o?: CreateBatchOptions): Promise<BatchCreated>;
    /**
     * POST /v1/batches/{id}/jobs: adds jobs (1 to 10,000) to an open batch
     * (fan-out, typically from one of its running jobs: `ctx.addToBatch`).
     * BatchClosedError once the batch is closed, NotFoundError when there is
     * none; nothing is added then.
     */
    addToBatch(batchId: number, jobs: readonly JobSpec[], o?: SubmitCallOptions): Promise<SubmitResult[]>;
    /** GET /v1/batches/{id}: the batch's status, counts, progress and callbacks. */
    batch(id: number): Promise<BatchInfo>;
    /** The same as `batch(id)`. */
    getBatch(id: number): Promise<BatchInfo>;
    /** GET /v1/batches: a page of batches, newest first; pass `nextBefore` as `before` for the next. */
    listBatches(f?: BatchFilter): Promise<BatchPage>;
    private batchJobs;
    /**
     * A submit request: a POST under a request key (the caller's or a new
     * one), the same on every try; a 2xx answer, else its typed error. A 429
     * `overloaded` or `quota_exceeded` made nothing: the request is sent again
     * after the server's Retry-After until `backpressureBudgetMs` has passed
     * since its first refusal (the last try when it runs out), then that
     * refusal is thrown.
     */
    private postKeyed;
    /** GET /v1/jobs/{id}/steps: the steps the job's handler stored, in order, with their results (docs/SEMANTICS.md, "Durable steps"). */
    steps(id: number): Promise<Step[]>;
    /**
     * POST /v1/events: every job of the tenant (the client's by default)
     * whose handler waits for `key` goes on with `payload` (JSON) as its
     * wait's result; when none waits the server keeps the event for its
     * --event-window. Sent under a request key (the caller's or a new one),
     * the same on every try: sent again after a lost answer, it delivers
     * nothing twice.
     */
    sendEvent(key: string, payload?: unknown, o?: SubmitCallOptions & {
        tenant?: string;
    }): Promise<EventResult>;
    /** @internal POST /v1/jobs/{id}/steps (a worker's, under the body's token): the answer. Safe to send again: a name is stored once a lease. */
    storeStep(id: number, body: Record<string, unknown>): Promise<Record<string, unknown>>;
    attempts(id: number): Promise<Attempt[]>;
    /** GET /healthz of the server the next request goes to. */
    health(): Promise<Health>;
    /** Who the token is. */
    whoami(): Promise<Record<string, unknown>>;
    /**
     * Leases jobs, reporting `outcomes` first. Not sent again after a
     * connection broke mid-request (a second lease would take more jobs).
     */
    lease(r: LeaseRequest, signal?: AbortSignal): Promise<LeaseResult>;
    /** Tells the server the handler began (state running). */
    start(id: number, token: number): Promise<void>;
    /**
     * Extends the lease; `cancel` is true when the job should stop, `leaseLeftMs` the time the
     * lease has left as the server answered (space heartbeats by it on the monotonic clock).
     */
    heartbeat(id: number, token: number, progress?: JsonValue): Promise<{
        leaseUntil: number;
        leaseLeftMs: number;
        cancel: boolean;
    }>;
    /**
     * The job succeeded. Safe to send again: the same ack under the same
     * token, already applied, is answered as applied.
     */
    ack(id: number, token: number, o?: {
        result?: JsonValue;
        stats?: JsonValue;
    }): Promise<OutcomeResult>;
    /** The attempt failed: retried after `retryInMs` or the queue's backoff, or dead with `retry: false`. */
    fail(id: number, token: number, o?: FailOptions): Promise<OutcomeResult>;
    private finish;
    /** Up to 10,000 acks and fails in one request, answered in order. */
    outcomes(list: readonly Outcome[], signal?: AbortSignal): Promise<OutcomeResult[]>;
}
export {};
