/**
 * One leased job in a worker's hands: its abort signal, heartbeat timing
 * (on the monotonic clock), progress, and what its end is reported as.
 */
import { type JobContext, type WorkflowBackend } from "./context";
import { type JsonValue } from "./json";
import { TX_SETTLED } from "./tx";
import { type Step, type StepBackend, type StepOptions, type WaitForEventOptions } from "./steps";
import type { JobParents, JobSpec, LeasedJob, Outcome, SubmitResult } from "./types";
/** Why a handler was told to stop; a later reason of a higher rank overrides. */
export type StopReason = "cancel" | "timeout" | "lost" | "shutdown";
export type Settled = {
    ok: true;
    value: unknown;
} | {
    ok: false;
    error: unknown;
} | {
    ok: "released";
};
export declare class UnknownTypeError extends Error {
    constructor(type: string);
}
export declare class Task {
    readonly job: LeasedJob;
    /** The lease's length, measured when it arrived (or at its last heartbeat), over 3. */
    beatEveryMs: number;
    /** When the next heartbeat is due (performance.now()). */
    beatDue: number;
    lastBeat: number;
    beating: boolean;
    progress: JsonValue | undefined;
    progressDirty: boolean;
    stop: StopReason | undefined;
    finished: boolean;
    /** Timers of this job (timeout, grace after a stop). */
    timers: NodeJS.Timeout[];
    /** The run is over (the handler returned, or the wait for it ended). */
    settled: boolean;
    /** When to tell the server the handler began (performance.now()). */
    noticeDue: number;
    /** When its handler began (performance.now()). */
    startedAt: number;
    /** How its handler settled the job in its own transaction (completeTx, failTx), if it did. */
    tx: Outcome | undefined;
    /** The handler's context, once it began (the worker's events hand it out). */
    ctx: JobContext | undefined;
    /** A step parked the job (the lease is over): nothing is reported. */
    parked: boolean;
    private ac;
    constructor(job: LeasedJob);
    get signal(): AbortSignal;
    /** A new lease length from a heartbeat's answer. */
    extended(leaseLeftMs: number, leaseUntil: number): void;
    /** Tells the handler to stop; false when a stop of the same or a higher rank came before. */
    tellStop(reason: StopReason): boolean;
    clearTimers(): void;
    /** What the end of the run is reported as; undefined: nothing (the lease is lost). */
    outcome(s: Settled): Outcome | undefined;
}
/** The context handed to the handler of a task (getters on the prototype: cheap to make per job). */
export declare class TaskContext implements JobContext {
    private readonly t;
    readonly worker: string;
    private readonly onProgress;
    private readonly backend;
    private readonly onParked;
    readonly mode: "worker";
    private st;
    constructor(t: Task, worker: string, onProgress: (t: Task, v: JsonValue) => void, backend: WorkflowBackend & StepBackend, onParked?: (t: Task) => void);
    private get stepState();
    step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
    sleepFor(ms: number, o?: StepOptions): Promise<void>;
    sleepUntil(when: Date | number, o?: StepOptions): Promise<void>;
    waitForEvent(key: string, o?: WaitForEventOptions): Promise<JsonValue | null>;
    runChild(spec: JobSpec, o?: StepOptions): Promise<JsonValue | null>;
    steps(): Promise<Step[]>;
    get parked(): boolean;
    get batch(): number | undefined;
    get batchCallback(): string | undefined;
    get parents(): number[];
    parentResults(): Promise<JobParents>;
    addToBatch(jobs: readonly JobSpec[]): Promise<SubmitResult[]>;
    get job(): LeasedJob;
    get id(): number;
    get type(): string;
    get args(): JsonValue | undefined;
    get attempt(): number;
    get token(): number;
    get traceparent(): string | undefined;
    get signal(): AbortSignal;
    progress(value: JsonValue): void;
    /** completeTx / failTx tell the task how its handler settled the job. */
    [TX_SETTLED](o: Outcome): void;
}
