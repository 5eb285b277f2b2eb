import type { Client } from "./client";
import { type Logger } from "./log";
import { type Middleware } from "./middleware";
import { type Registry } from "./registry";
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
export interface WorkerStats {
    leased: number;
    succeeded: number;
    failed: number;
    cancelled: number;
    /** Given back at a stop (not started, or cut off). */
    givenBack: number;
    /** Outcomes not reported: refused (a stale token), or the lease was lost. */
    dropped: number;
}
export declare class Worker {
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
    /** Outcomes go back to the head of the queue after a failed request. */
    private putBack;
    private shutdown;
}
