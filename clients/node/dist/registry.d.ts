/**
 * Handlers by job type: plain handlers, tasks, and the methods of registered
 * classes (the switch), which run as `new Class()[method](...args)`.
 */
import { type JobContext } from "./context";
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
export declare class Registry {
    private readonly byType;
    private readonly classes;
    /** Registers `handler` for `type` (a second registration of the type replaces the first). */
    add(type: string, handler: Handler, o?: HandlerOptions): void;
    get(type: string): Registered | undefined;
    /** The registered types. */
    types(): string[];
    /** Registers a class's methods as the types `Name.method`. */
    addClass<T extends object>(cls: Constructor<T>, o?: RegisterOptions<T>): void;
    /** The type of `method` called on `target` (a registered class or one of its instances). */
    typeOf(target: object, method: string): string;
    private findClass;
}
/** Runs a registered handler with `ctx` as the current job. A handler that throws synchronously rejects. */
export declare function invoke(reg: Registered, ctx: JobContext): Promise<unknown>;
