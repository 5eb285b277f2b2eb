/**
 * Tenq: the application's entry point. It holds the client, the handlers
 * (by type, tasks, and the switch's classes) and the test mode; its submits
 * (`enqueue`, `async(...)`, tasks) follow the test mode, while `client` always
 * talks to the server.
 */
import { Client } from "./client";
import { type JobHandle } from "./handle";
import type { ClientOptions } from "./options";
import { Registry, type Constructor, type Handler, type HandlerOptions, type RegisterOptions } from "./registry";
import { type AsyncMethods, type Task } from "./switch";
import { Testing, type TestMode } from "./testing";
import type { SubmitOptions } from "./types";
import { Worker, type WorkerOptions } from "./worker";
export interface TenqOptions extends ClientOptions {
    /** Start in a test mode (`inline` or `fake`); default `off`. */
    testMode?: TestMode;
}
export declare class Tenq {
    readonly client: Client;
    readonly registry: Registry;
    /** The test modes: `tenq.testing.inline()`, `.fake()`, `.disable()`, `.jobs`, `.drain()`. */
    readonly testing: Testing;
    constructor(options?: TenqOptions);
    /** Registers a handler for a job type. */
    handle(type: string, handler: Handler, options?: HandlerOptions): this;
    /** Registers a class's methods as job types `Name.method`, for the switch and the worker. */
    register<T extends object>(cls: Constructor<T>, options?: RegisterOptions<T>): this;
    /** A function that runs inline when called, and as a job of type `type` with `.enqueue(...)`. */
    task<A extends unknown[], R>(type: string, fn: (...args: A) => R, options?: HandlerOptions): Task<A, R>;
    /**
     * The switch: `tenq.async(report).execute(42)` submits `DataReport.execute`
     * with args `[42]` instead of running it, and resolves to a handle whose
     * `wait()` gives what `report.execute(42)` would have returned. `target` is
     * a registered class or an instance of one; `options` apply to the submit.
     */
    async<C extends Constructor<object>>(target: C, options?: SubmitOptions): AsyncMethods<InstanceType<C>>;
    async<T extends object>(target: T, options?: SubmitOptions): AsyncMethods<T>;
    /** Submits a job (or runs or records it, in a test mode); the handle's `wait()` gives its result. */
    enqueue<R = unknown>(type: string, args?: unknown, options?: SubmitOptions): Promise<JobHandle<R>>;
    /** A handle on a job submitted before (by id). */
    handleOf<R = unknown>(id: number): JobHandle<R>;
    /** A worker that runs this app's handlers. */
    worker(options?: WorkerOptions): Worker;
    /** Closes the client's connections. */
    close(): void;
}
