import type { JobHandle } from "./handle";
import { type JsonValue } from "./json";
import { type Registry } from "./registry";
import type { JobParents } from "./types";
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
    /** The test-mode jobs it depends on (`dependsOn`). */
    readonly parents: readonly number[];
}
export declare class Testing {
    private readonly registry;
    private current;
    private nextId;
    /** Every job submitted in a test mode, in order (inline ones too). */
    readonly jobs: FakeJob[];
    constructor(registry: Registry);
    get mode(): TestMode;
    /** Submits run their handler at once, in-process. */
    inline(): void;
    /** Submits are recorded; `drain()` runs them. */
    fake(): void;
    /** Back to the server. */
    disable(): void;
    /** Forgets the recorded jobs. */
    clear(): void;
    /** The recorded jobs of a type. */
    jobsOf(type: string): FakeJob[];
    /** Jobs recorded and not run yet. */
    get enqueued(): FakeJob[];
    /**
     * Runs the recorded jobs through their handlers, in order, including jobs
     * they submit; resolves to how many ran. A handler's error stops the drain
     * and is thrown (the job is left `failed`).
     */
    drain(o?: {
        type?: string;
    }): Promise<number>;
    /** Whether a job's parents let it go: all finished (`run`, or `cancel` by its policy), or not yet (`wait`). */
    private released;
    /** The parents and children of a job of the test mode. */
    parentsOf(id: number): JobParents;
    /** A submit in the current mode (the app calls this with the prepared wire body). */
    submit<R>(fields: Record<string, unknown>): Promise<JobHandle<R>>;
    private run;
}
