/**
 * The sync/async switch. A method written once runs inline —
 * `report.execute(42)` — or as a job — `tenq.async(report).execute(42)`,
 * which resolves to a handle whose `wait()` gives the method's result. The
 * job's type is `Class.method`, its args the call's arguments as a JSON
 * array; the worker routes the job back to the same method on a new
 * instance. Plain functions get the same with `tenq.task(type, fn)`:
 * `sendMail(to)` inline, `sendMail.enqueue(to)` as a job.
 */
import type { JobHandle } from "./handle";
import type { SubmitOptions } from "./types";
/** The methods of T, each submitting a job instead of running. */
export type AsyncMethods<T> = {
    [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<JobHandle<Awaited<R>>> : never;
};
/** A function that runs inline when called and as a job with `enqueue`. */
export interface Task<A extends unknown[], R> {
    (...args: A): Promise<Awaited<R>>;
    /** The job type. */
    readonly type: string;
    /** Submits the call as a job. */
    enqueue(...args: A): Promise<JobHandle<Awaited<R>>>;
    /** The same, with submit options (key, priority, runAt, ...). */
    with(options: SubmitOptions): {
        enqueue(...args: A): Promise<JobHandle<Awaited<R>>>;
    };
}
/** The call's arguments as the job's args: trailing undefined ones left out, as if not passed. */
export declare function callArgs(args: readonly unknown[]): unknown[];
type Enqueue = (type: string, args: unknown[], options: SubmitOptions) => Promise<JobHandle<unknown>>;
/** The object `tenq.async(target)` returns: every property is a method that submits. */
export declare function asyncProxy<T>(typeOf: (method: string) => string, enqueue: Enqueue, options: SubmitOptions): AsyncMethods<T>;
export {};
