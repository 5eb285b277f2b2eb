// SPDX-License-Identifier: Apache-2.0
/**
 * Handlers by job type: plain handlers, tasks, and the methods of registered
 * classes (the switch), which run as `new Class()[method](...args)`.
 */
import { runInJob, type JobContext } from "./context";
import { InvalidError } from "./errors";
import { NoRetryError } from "./job-errors";
import type { JsonValue } from "./json";

/** A handler: the job's args and its context; what it returns (JSON) is the job's result. */
export type Handler = (args: JsonValue | undefined, ctx: JobContext) => unknown;

export interface HandlerOptions {
  /** Stop the handler (and fail the job "timeout") after this long; overrides the worker's. */
  timeoutMs?: number;
}

export interface Registered {
  readonly type: string;
  readonly handler: Handler;
  readonly timeoutMs: number | undefined;
}

export interface RegisterOptions<T> extends HandlerOptions {
  /** The first part of the types (`Name.method`); default: the class's name. */
  name?: string;
  /** The methods that become job types; default: every method but the constructor and names starting with `_`. */
  methods?: readonly (keyof T & string)[];
  /** Makes the instance a job runs on; default: `new Class()`. */
  factory?: () => T;
}

export type Constructor<T> = abstract new (...args: any[]) => T;

interface ClassEntry {
  name: string;
  methods: Set<string>;
}

const TYPE_RE = /^[\x21-\x7e]{1,128}$/;

function methodsOf(proto: object): string[] {
  const out = new Set<string>();
  for (let p: object | null = proto; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    for (const k of Object.getOwnPropertyNames(p)) {
      if (k === "constructor" || k.startsWith("_")) continue;
      const d = Object.getOwnPropertyDescriptor(p, k);
      if (d && typeof d.value === "function") out.add(k);
    }
  }
  return [...out];
}

export class Registry {
  private readonly byType = new Map<string, Registered>();
  private readonly classes = new Map<object, ClassEntry>();

  /** Registers `handler` for `type` (a second registration of the type replaces the first). */
  add(type: string, handler: Handler, o: HandlerOptions = {}): void {
    if (!TYPE_RE.test(type)) throw new InvalidError(`bad job type "${type}": 1-128 printable ASCII characters, no spaces`, { field: "type" });
    if (typeof handler !== "function") throw new InvalidError(`the handler of ${type} is not a function`, { field: "handler" });
    this.byType.set(type, { type, handler, timeoutMs: o.timeoutMs });
  }

  get(type: string): Registered | undefined {
    return this.byType.get(type);
  }

  /** The registered types. */
  types(): string[] {
    return [...this.byType.keys()];
  }

  /** Registers a class's methods as the types `Name.method`. */
  addClass<T extends object>(cls: Constructor<T>, o: RegisterOptions<T> = {}): void {
    const name = o.name ?? cls.name;
    if (!name) throw new InvalidError("a class without a name needs the `name` option", { field: "name" });
    const methods = o.methods ? [...o.methods] : methodsOf(cls.prototype as object);
    if (!methods.length) throw new InvalidError(`${name} has no methods to register`, { field: "methods" });
    const make = o.factory ?? (() => new (cls as unknown as new () => T)());
    for (const m of methods) {
      if (typeof (cls.prototype as Record<string, unknown>)[m] !== "function")
        throw new InvalidError(`${name}.${m} is not a method`, { field: "methods" });
      const type = `${name}.${m}`;
      this.add(
        type,
        (args) => {
          if (args !== undefined && !Array.isArray(args))
            throw new NoRetryError(`${type} takes its arguments as a JSON array, not ${typeof args}`);
          const self = make() as Record<string, (...a: unknown[]) => unknown>;
          return self[m]!(...((args ?? []) as unknown[]));
        },
        o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {},
      );
    }
    this.classes.set(cls, { name, methods: new Set(methods) });
  }

  /** The type of `method` called on `target` (a registered class or one of its instances). */
  typeOf(target: object, method: string): string {
    const cls = typeof target === "function" ? target : (target as { constructor?: unknown }).constructor;
    const e = cls && typeof cls === "function" ? this.findClass(cls) : undefined;
    if (!e) {
      const n = typeof cls === "function" && cls.name ? cls.name : "this object";
      throw new InvalidError(`${n} is not registered: call tenq.register(${n}) first`, { field: "type" });
    }
    if (!e.methods.has(method)) throw new InvalidError(`${e.name}.${method} is not a registered method`, { field: "type" });
    return `${e.name}.${method}`;
  }

  private findClass(cls: object): ClassEntry | undefined {
    return this.classes.get(cls);
  }
}

/** Runs a registered handler with `ctx` as the current job. A handler that throws synchronously rejects. */
export async function invoke(reg: Registered, ctx: JobContext): Promise<unknown> {
  return runInJob(ctx, () => reg.handler(ctx.args, ctx));
}
