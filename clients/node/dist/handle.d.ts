/** A submitted job, seen from the code that submitted it: `wait()` gives the handler's result. */
import type { Client, WaitOptions } from "./client";
import type { CancelResult, Job, SubmitResult } from "./types";
export interface JobHandle<R = unknown> {
    readonly id: number;
    /** The submit's answer (a duplicate or an idempotent replay has `created: false`). */
    readonly submitted: SubmitResult;
    /**
     * Waits for the job and gives the handler's result (as JSON carried it).
     * Throws JobFailedError when the job died, JobCancelledError when it was
     * cancelled, JobExpiredError when it expired, TimeoutError when
     * `timeoutMs` passed first.
     */
    wait(options?: WaitOptions): Promise<R>;
    /** The job now. */
    job(): Promise<Job>;
    cancel(): Promise<CancelResult>;
}
/** The result of a finished job, or the error its end means. */
export declare function resultOf<R>(job: Job): R;
/** A job on a server. */
export declare class RemoteHandle<R = unknown> implements JobHandle<R> {
    private readonly client;
    readonly submitted: SubmitResult;
    readonly id: number;
    constructor(client: Client, submitted: SubmitResult);
    wait(options?: WaitOptions): Promise<R>;
    job(): Promise<Job>;
    cancel(): Promise<CancelResult>;
}
