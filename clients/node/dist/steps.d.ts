/**
 * Durable steps (docs/SEMANTICS.md, "Durable steps"): what a job's handler
 * stored (Step), the answer to an event (EventResult), what a step throws in
 * the handler (Parked: the job waits between attempts; EventTimeoutError;
 * ChildFailedError), and the part of a handler's context that stores steps.
 */
import { TenqError, TimeoutError } from "./errors";
import { type JsonValue } from "./json";
import type { JobSpec, JobState, LeasedJob } from "./types";
/** `step`: code the handler ran; `sleep`; `event`: a wait for an event; `child`: a child job awaited. */
export type StepKind = "step" | "sleep" | "event" | "child";
/** A step a job's handler stored (GET /v1/jobs/{id}/steps), in order. */
export interface Step {
    pos: number;
    name: string;
    kind: StepKind;
    /** False while the job waits for it. */
    done: boolean;
    /** `step`: what the code returned; `event`: the event's payload; `child`: the child's result. */
    result: JsonValue | null;
    /** `event`: `timed out`; `child`: the child's error; a wait the job's cancel ended: `cancelled`. */
    error: string | null;
    /** The attempt that stored it. */
    attempt: number;
    /** The lease token that stored it (admin and worker tokens). */
    token: number | null;
    createdAt: number;
    finishedAt: number | null;
    /** `event`: the key waited for. */
    event?: string;
    /** `sleep`: when the job resumes; `event`: its timeout's time (null: none). */
    until?: number | null;
    /** `child`: the child job's id, and the state it ended in. */
    child?: number;
    childState?: JobState;
}
/** The answer to an event (POST /v1/events): the jobs it woke, or (`kept`) that none waited. */
export interface EventResult {
    tenant: string;
    key: string;
    delivered: number;
    /** The jobs it woke (the first 1,000). */
    jobs: number[];
    /** None waited: it is kept until `expiresAt` for the first job of the tenant that waits for its key. */
    kept: boolean;
    expiresAt: number | null;
}
/**
 * Thrown inside a handler by a step that parked its job: a durable sleep
 * (`ctx.sleepFor`, `ctx.sleepUntil`), a wait for an event
 * (`ctx.waitForEvent`) or for a child job (`ctx.runChild`). The attempt is
 * over, without failing: the worker reports nothing, and the job runs again
 * (from the start, its stored steps answering at once) when its wait is
 * over. Let it leave the handler: a `catch` that swallows it should rethrow
 * it (`if (isParked(e)) throw e`); a handler that goes on anyway has its
 * outcome dropped.
 */
export declare class Parked extends Error {
    /** The kind of the step that parked the job. */
    readonly kind: StepKind;
    /** Its name. */
    readonly stepName: string;
    /** The job's state now: `scheduled` (a sleep) or `waiting`. */
    readonly state: JobState;
    constructor(
    /** The kind of the step that parked the job. */
    kind: StepKind, 
    /** Its name. */
    stepName: string, 
    /** The job's state now: `scheduled` (a sleep) or `waiting`. */
    state: JobState);
}
/** Whether `e` is the Parked a step threw (rethrow it). */
export declare function isParked(e: unknown): e is Parked;
/** `ctx.waitForEvent` timed out: no event of its key came in time. */
export declare class EventTimeoutError extends TimeoutError {
    readonly key: string;
    readonly stepName: string;
    constructor(key: string, stepName: string);
}
/**
 * `ctx.runChild`'s child job did not succeed: it died (`error` is its last
 * error) or was cancelled. `child` is its id, `state` the state it ended in.
 */
export declare class ChildFailedError extends TenqError {
    readonly child: number;
    readonly state: JobState | undefined;
    readonly error: string | null;
    constructor(child: number, state: JobState | undefined, error: string | null);
}
export declare function stepFromWire(v: unknown): Step;
export declare function stepsFromWire(v: unknown): Step[];
export declare function eventResultFromWire(v: unknown): EventResult;
/** What a job's steps ask the server (the worker's client). */
export interface StepBackend {
    steps(id: number): Promise<Step[]>;
    /** POST /v1/jobs/{id}/steps under the body's token: the answer. */
    storeStep(id: number, body: Record<string, unknown>): Promise<Record<string, unknown>>;
}
export interface StepOptions {
    /** The step's name (default `KIND#N`, N counting this run's calls of that kind: call them in the same order). */
    name?: string;
}
export interface WaitForEventOptions extends StepOptions {
    /** Give up after this many ms (EventTimeoutError); default: no timeout. */
    timeoutMs?: number;
}
/** The durable-step part of a JobContext. */
export interface StepMethods {
    /**
     * Runs `fn` once for the job: its result (JSON) is stored under this
     * attempt's lease before `step` resolves, and a later attempt gets it back
     * without running `fn` again. `name` (1-256 bytes, no control characters)
     * must name the same work on every attempt. `fn` may run again only when
     * the worker dies (or loses its lease) before the store answered: make it
     * idempotent. Outside a worker it just runs `fn`.
     */
    step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
    /**
     * A durable sleep: the attempt ends (Parked leaves the handler), the
     * job's slot goes back, and the job runs again after `ms`, its steps kept;
     * there this call resolves at once. Outside a worker it just sleeps.
     */
    sleepFor(ms: number, o?: StepOptions): Promise<void>;
    /** `sleepFor` until a time: a Date, or ms since the epoch. */
    sleepUntil(when: Date | number, o?: StepOptions): Promise<void>;
    /**
     * Waits for an event of the job's tenant with this `key`
     * (`client.sendEvent`, POST /v1/events, `sendEventTx`): its payload. The
     * job parks (Parked) until it comes or `timeoutMs` passes; then it runs
     * again and this call resolves, or throws EventTimeoutError. An event sent
     * shortly before (within the server's --event-window) is taken at once.
     */
    waitForEvent(key: string, o?: WaitForEventOptions): Promise<JsonValue | null>;
    /**
     * Submits a child job (of this job's tenant; in `spec.queue`, else this
     * job's) once, and waits for its end: its result, or ChildFailedError when
     * it died or was cancelled. The job parks (Parked) until the child ends;
     * cancelling it cancels the child. A refused submit throws its error
     * (QuotaExceededError past a quota).
     */
    runChild(spec: JobSpec, o?: StepOptions): Promise<JsonValue | null>;
    /** The steps of this job stored so far (by earlier attempts, then this one), in order. */
    steps(): Promise<Step[]>;
    /** A step parked the job: this attempt is over. */
    readonly parked: boolean;
}
/**
 * The steps of one run of a handler: those stored (read once, at the first
 * step call, when the lease says the job has some), the calls made of each
 * kind (for names left out), whether a step parked the job.
 */
export declare class StepState implements StepMethods {
    private readonly job;
    private readonly backend;
    private readonly onParked;
    parked: boolean;
    private stored;
    private readonly calls;
    /** `backend` undefined: outside a worker (steps just run). */
    constructor(job: LeasedJob, backend: StepBackend | undefined, onParked?: () => void);
    private get live();
    private map;
    /** Reads the job's steps again (a step sent again whose first answer was lost). */
    private reread;
    steps(): Promise<Step[]>;
    step<T>(name: string, fn: () => T | Promise<T>): Promise<T>;
    sleepFor(ms: number, o?: StepOptions): Promise<void>;
    sleepUntil(when: Date | number, o?: StepOptions): Promise<void>;
    private sleep;
    waitForEvent(key: string, o?: WaitForEventOptions): Promise<JsonValue | null>;
    runChild(spec: JobSpec, o?: StepOptions): Promise<JsonValue | null>;
    private auto;
    private remember;
    /**
     * POST /v1/jobs/{id}/steps under this attempt's lease. A parking step
     * whose answer was lost, sent again, finds its lease over (409 on the
     * token): the job is parked (or its lease lost), and the handler ends
     * either way.
     */
    private post;
    private park;
}
/** The steps of a handler run outside a worker (the test modes): a step just runs, a sleep sleeps. */
export declare function inlineSteps(job: LeasedJob): StepMethods;
