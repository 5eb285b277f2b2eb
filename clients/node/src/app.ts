// SPDX-License-Identifier: Apache-2.0
/**
 * Tenq: the application's entry point. It holds the client, the handlers
 * (by type, tasks, and the switch's classes) and the test mode; its submits
 * (`enqueue`, `async(...)`, tasks) follow the test mode, while `client` always
 * talks to the server.
 */
import { Client } from "./client";
import { RemoteHandle, type JobHandle } from "./handle";
import type { ClientOptions } from "./options";
import { Registry, type Constructor, type Handler, type HandlerOptions, type RegisterOptions } from "./registry";
import { asyncProxy, callArgs, type AsyncMethods, type Task } from "./switch";
import { Testing, type TestMode } from "./testing";
import type { SubmitOptions } from "./types";
import { Worker, type WorkerOptions } from "./worker";

export interface TenqOptions extends ClientOptions {
  /** Start in a test mode (`inline` or `fake`); default `off`. */
  testMode?: TestMode;
}

export class Tenq {
  readonly client: Client;
  readonly registry = new Registry();
  /** The test modes: `tenq.testing.inline()`, `.fake()`, `.disable()`, `.jobs`, `.drain()`. */
  readonly testing: Testing;

  constructor(options: TenqOptions = {}) {
    this.client = new Client(options);
    this.testing = new Testing(this.registry);
    if (options.testMode === "inline") this.testing.inline();
    else if (options.testMode === "fake") this.testing.fake();
  }

  /** Registers a handler for a job type. */
  handle(type: string, handler: Handler, options: HandlerOptions = {}): this {
    this.registry.add(type, handler, options);
    return this;
  }

  /** Registers a class's methods as job types `Name.method`, for the switch and the worker. */
  register<T extends object>(cls: Constructor<T>, options: RegisterOptions<T> = {}): this {
    this.registry.addClass(cls, options);
    return this;
  }

  /** A function that runs inline when called, and as a job of type `type` with `.enqueue(...)`. */
  task<A extends unknown[], R>(type: string, fn: (...args: A) => R, options: HandlerOptions = {}): Task<A, R> {
    this.registry.add(type, (args) => fn(...((args ?? []) as A)), options);
    const enqueue = (o: SubmitOptions) => (...args: A) =>
      this.enqueue<Awaited<R>>(type, callArgs(args), o);
    const t = (async (...args: A) => await fn(...args)) as Task<A, R>;
    Object.defineProperty(t, "type", { value: type });
    Object.defineProperty(t, "enqueue", { value: enqueue({}) });
    Object.defineProperty(t, "with", { value: (o: SubmitOptions) => ({ enqueue: enqueue(o) }) });
    return t;
  }

  /**
   * The switch: `tenq.async(report).execute(42)` submits `DataReport.execute`
   * with args `[42]` instead of running it, and resolves to a handle whose
   * `wait()` gives what `report.execute(42)` would have returned. `target` is
   * a registered class or an instance of one; `options` apply to the submit.
   */
  async<C extends Constructor<object>>(target: C, options?: SubmitOptions): AsyncMethods<InstanceType<C>>;
  async<T extends object>(target: T, options?: SubmitOptions): AsyncMethods<T>;
  async(target: object, options: SubmitOptions = {}): unknown {
    return asyncProxy<object>(
      (m) => this.registry.typeOf(target, m),
      (type, args, o) => this.enqueue(type, args, o),
      options,
    );
  }

  /** Submits a job (or runs or records it, in a test mode); the handle's `wait()` gives its result. */
  async enqueue<R = unknown>(type: string, args?: unknown, options: SubmitOptions = {}): Promise<JobHandle<R>> {
    const spec = { ...options, type, args };
    if (this.testing.mode !== "off") return this.testing.submit<R>(this.client.prepare(spec));
    return new RemoteHandle<R>(this.client, await this.client.submit(spec));
  }

  /** A handle on a job submitted before (by id). */
  handleOf<R = unknown>(id: number): JobHandle<R> {
    return new RemoteHandle<R>(this.client, { id, state: "ready", created: false, duplicate: false, merged: false, replayed: false, debounced: false });
  }

  /** A worker that runs this app's handlers. */
  worker(options: WorkerOptions = {}): Worker {
    return new Worker(this.client, this.registry, options);
  }

  /** Closes the client's connections. */
  close(): void {
    this.client.close();
  }
}
