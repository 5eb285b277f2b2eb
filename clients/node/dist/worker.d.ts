/**
 * The worker: leases jobs and runs their handlers in this process, as
 * `tenq work` does (docs/WORKER.md).
 *
 * - One leaser: leases up to the free capacity (`concurrency` + the
 *   prefetch, at most 1,000 a request), long-polling (`pollMs`: answered at
 *   once when jobs are there). It leases when a slot is free and nothing
 *   waits for it, or when the jobs waiting in hand fall to half the
 *   prefetch (so a batch is at least half of it).
 * - The prefetch (jobs leased ahead of a free slot) is by default sized to
 *   the jobs: about `prefetchMs` (50 ms) of work at the pace the handlers
 *   have run so far (a running average of their durations, where a longer
 *   one weighs more than a shorter one, and a handler still running counts
 *   with the time it has run so far), at most 500 jobs and about 8 MiB of
 *   them (their leases' answers); none before a job has finished. That is
 *   about prefetchMs * concurrency / duration: with 5 slots, hundreds of
 *   blank or sub-millisecond jobs a lease, about 25 of 10 ms jobs, none of
 *   jobs longer than 250 ms (leased only for free slots, as with
 *   `prefetch: 0`). Jobs waiting in hand are heartbeaten like running ones
 *   and given back at a stop.
 * - Outcomes of finished jobs go by POST /v1/outcomes, in order, batched
 *   (the next batch gathers while one is out); or, with `outcomes:
 *   "with-lease"`, with the next lease (which then does not wait), and by
 *   POST /v1/outcomes only while the leaser long-polls or backs off.
 * - A handler that settled its job in its own database transaction
 *   (completeTx, failTx; tx.ts) and returns: the job is reported as that
 *   transaction said (an ack with its result, or its failure), which the
 *   server answers as applied, whichever of the two arrives first.
 * - Heartbeats at a third of each lease, timed on the monotonic clock,
 *   carrying the latest progress (within half a second of a report); an
 *   answer `cancel: true` aborts the handler's signal.
 * - A server that is away is retried with backoff (100 ms doubling to 5 s);
 *   outcomes are kept in order and reported when one answers.
 * - `stop()` (and SIGTERM/SIGINT): stop leasing, give back the jobs not
 *   started, let running ones finish within `graceMs`, then abort them and
 *   give them back (`retry_in_ms: 0`, "worker stopped"); report everything.
 *   A second signal stops at once.
 * - A handler's durable step that parks its job (steps.ts: a sleep, a wait
 *   for an event or a child) ends its lease: the worker stops heartbeating
 *   it, frees its slot when the handler ends (with the step's Parked), and
 *   reports nothing.
 * - Events (an EventEmitter, as BullMQ's worker): `active` when a handler
 *   begins, `progress` for each progress report, `completed` and `failed`
 *   once the server has acknowledged the outcome (so `client.get(id)` shows
 *   it then), `parked` when a step parked the job, `error` for what the worker would otherwise only log (a lease
 *   or report that failed, an outcome refused), `closing` and `closed`.
 */
import { EventEmitter } from "node:events";
import type { Client } from "./client";
import type { JobContext } from "./context";
import type { JsonValue } from "./json";
import { type Logger } from "./log";
import { type Middleware } from "./middleware";
import { type Registry } from "./registry";
import { Parked } from "./steps";
import type { OutcomeResult } from "./types";
export interface WorkerOptions {
    /** The queues to lease from; default: the client's queue. */
    queues?: string[];
    /** Only jobs of these types (default: every type; a type without a handler fails its attempt). */
    types?: string[];
    /** Handlers running at once (default 1). */
    concurrency?: number;
    /**
     * Jobs leased ahead of a free slot, waiting in this process. Default
     * `"auto"`: about `prefetchMs` of work at the pace the handlers have run,
     * `prefetchMs * concurrency / duration` (at most 500, and about 8 MiB of
     * leased jobs; none until a job has finished); a number: that many; 0:
     * lease only for free slots. Waiting jobs are heartbeaten, and given back
     * at a stop (a give-back is a failed attempt, `retry_in_ms: 0`).
     */
    prefetch?: number | "auto";
    /** With `prefetch: "auto"`, about how much work (ms) may wait in hand (default 50). */
    prefetchMs?: number;
    /** The longest lease long poll (default 30 s). */
    pollMs?: number;
    /** After a stop, how long running jobs may finish (default 10 s); also how long a cancelled or timed-out handler may take to stop. */
    graceMs?: number;
    /** Stop a handler that runs longer, failing the job "timeout" (a handler's own option wins). */
    timeoutMs?: number;
    /** The `worker` recorded on its jobs (default `HOST/pid-PID`). */
    name?: string;
    /** Stop gracefully on SIGTERM/SIGINT while `run()` runs (default true). */
    handleSignals?: boolean;
    /** On a second signal, exit the process with status 1 (default true; else `run()` resolves at once). */
    exitOnSecondSignal?: boolean;
    /**
     * After a signal stopped the worker, end the process (status 0) if
     * something still holds it up a second after `run()` resolved: a
     * handler that ignored its abort signal (default true).
     */
    exitAfterSignal?: boolean;
    /** Around each job, the first outermost. */
    middleware?: Middleware[];
    /** Default: lines on stderr; null: silent. */
    logger?: Logger | null;
    /** Tell the server a handler began (state running) once it has run this long (default 10 ms; negative: never). */
    startNoticeMs?: number;
    /**
     * How finished jobs are reported. `separate` (the default) sends them by
     * POST /v1/outcomes, batched (while one request is out, the next batch
     * gathers), while leases go on without waiting for their commit.
     * `with-lease` carries them with the next lease (one request a batch, but
     * that lease is answered only once they are committed, so the slots wait
     * for a commit per lease; they still go separately while the leaser
     * long-polls or the server is away). Measured on SQLite with 5 slots and
     * blank jobs, `separate` drained 8-12x faster (bench/peers/clients/node).
     */
    outcomes?: "separate" | "with-lease";
    /** Called with the server's answers to reported outcomes (acknowledged ones have `ok: true`). */
    onReported?: (results: OutcomeResult[]) => void;
}
/**
 * The worker's events and their arguments (`worker.on("completed", (job,
 * result) => ...)`). A job's events come in this order: `active`, any
 * `progress`, then `completed` or `failed` (none for a job given back at a
 * stop, or whose lease was lost). `error` is emitted only while it has a
 * listener (an EventEmitter's unheard `error` would throw); without one the
 * worker logs as before.
 */
export interface WorkerEvents {
    /** A handler began. */
    active: [job: JobContext];
    /** The handler reported progress (`ctx.progress(v)`). */
    progress: [job: JobContext, progress: JsonValue];
    /** The server has the job succeeded, with what the handler returned. */
    completed: [job: JobContext, result: unknown];
    /**
     * The server has the attempt failed (retried later, or dead): `error` is
     * what the handler threw, or why it was stopped (JobTimeoutError,
     * JobCancelledError).
     */
    failed: [job: JobContext, error: unknown];
    /**
     * A step parked the job (`ctx.sleepFor`, `ctx.waitForEvent`,
     * `ctx.runChild`): its lease ended without failing, nothing is reported;
     * the job runs again when its wait is over.
     */
    parked: [job: JobContext, parked: Parked];
    /** Something went wrong beside a job: a lease or a report that failed (retried), an outcome the server refused. */
    error: [error: Error];
    /** `stop()` began. */
    closing: [];
    /** `run()` is about to resolve: everything is reported. */
    closed: [];
}
export interface WorkerStats {
    leased: number;
    succeeded: number;
    failed: number;
    cancelled: number;
    /** Given back at a stop (not started, or cut off). */
    givenBack: number;
    /** Outcomes not reported: refused (a stale token), or the lease was lost. */
    dropped: number;
    /** Attempts a step ended by parking the job (a durable sleep, a wait for an event or a child). */
    parked: number;
}
export declare class Worker extends EventEmitter<WorkerEvents> {
    private readonly client;
    private readonly registry;
    private readonly opts;
    readonly name: string;
    private readonly queues;
    private readonly concurrency;
    /** A fixed prefetch, or undefined: automatic. */
    private readonly fixedPrefetch;
    private readonly prefetchMs;
    /** The handlers' duration estimate (ms); NaN until one has finished. */
    private durationMs;
    /** What a leased job weighs in its lease's answer (characters), a running average; NaN before a lease. */
    private jobChars;
    private prefetchNow;
    private prefetchAt;
    private readonly runningTasks;
    /** Jobs started in this turn of the event loop (see pump). */
    private turnStarts;
    private readonly pollMs;
    private readonly graceMs;
    private readonly log;
    private readonly middleware;
    private readonly tasks;
    private readonly waiting;
    private running;
    private pending;
    private readonly stat;
    private leaserState;
    private wakeLeaser;
    private poll;
    private reporter;
    private outage;
    private readonly withLease;
    private readonly beats;
    private readonly progressFn;
    /** A step parked a task's job: its lease is over, so nothing heartbeats it any more. */
    private readonly onParked;
    /** The outcomes sent whose acknowledgement is to be emitted (while `completed` or `failed` have listeners). */
    private readonly toEmit;
    private started;
    private stopping;
    private killed;
    private stopDone;
    private fatal;
    private leaser;
    private idleWaiter;
    private finishRun;
    private readonly stopSignal;
    constructor(client: Client, registry: Registry, opts?: WorkerOptions);
    /** Adds a middleware (inside those added before). */
    use(mw: Middleware): this;
    get stats(): WorkerStats;
    /** Jobs leased and not finished: running, and waiting for a slot. */
    get inHand(): number;
    /**
     * The jobs leased ahead of a free slot at most, now: the fixed
     * `prefetch`, or the automatic one (see `prefetch`).
     */
    get prefetch(): number;
    /** How many jobs to lease now (0: not now): when a slot would idle, or the waiting jobs are down to half the prefetch. */
    private wanted;
    /** Runs until `stop()` (or a signal); resolves when every outcome is reported. Rejects when the server refuses the worker. */
    run(): Promise<WorkerStats>;
    /** Stops gracefully (see the top of this file); resolves when done. */
    stop(): Promise<void>;
    /** Stops at once: handlers are aborted, nothing more is reported (the leases expire). */
    kill(): void;
    private wake;
    private leaseLoop;
    /**
     * Starts waiting jobs while slots are free, at most PUMP_TURN_MAX in one
     * turn of the event loop: handlers that return at once run one after the
     * other as microtasks, and without a turn now and then the next lease
     * would not even be written until every job in hand had run.
     */
    private pump;
    private readonly nextTurn;
    private runTask;
    /** The handler returned, or the wait for it ended (the first of the two counts). */
    private settle;
    /** A job is over: its outcome is queued (or dropped), its slot freed. */
    private end;
    private giveBack;
    /** Tells a running handler to stop; the wait for it ends after the grace period (at once when the worker is cut off). */
    private stopTask;
    /** Outcomes go by POST /v1/outcomes when the leaser will not carry them soon. */
    private flushSoon;
    private reportLoop;
    /**
     * The server's answers to outcomes: refused ones (a stale token) are
     * logged and dropped. An outcome sent again after a request broke is
     * answered as applied when it counted the first time (the same outcome
     * under the same token), so a refusal is a real one.
     */
    private reported;
    private listensToOutcomes;
    /** `error`, only when someone listens (an unheard one would throw). */
    private emitError;
    /** Outcomes go back to the head of the queue after a failed request. */
    private putBack;
    private shutdown;
}
