/**
 * Middleware around each job a worker runs, as Sidekiq's server middleware:
 * `async (ctx, next) => { ...; const r = await next(); ...; return r; }`.
 * The first in the list is the outermost. What `next()` resolves to is the
 * handler's result; what it throws is the attempt's failure (a middleware
 * may catch it, or return instead, or throw something else).
 */
import type { JobContext } from "./context";
import { type Logger } from "./log";
export type Next = () => Promise<unknown>;
export type Middleware = (ctx: JobContext, next: Next) => Promise<unknown>;
/** `inner` wrapped in `list`, the first outermost. */
export declare function compose(list: readonly Middleware[], ctx: JobContext, inner: Next): Next;
/** `Name: message` for an error: its class (or name) and message. */
export declare function describeError(e: unknown): string;
/** Logs each job's start and end, with its duration. */
export declare function logging(logger?: Logger): Middleware;
/** Hands every error a handler throws to `report` (an error tracker), then lets it fail the attempt (a step's Parked is no error: not reported). */
export declare function errorReporter(report: (error: unknown, ctx: JobContext) => void | Promise<void>): Middleware;
/**
 * Opens the run's span: `hook` gets the job's traceparent (undefined when it
 * was submitted without one) and runs `run` inside a span that is its child,
 * e.g. with OpenTelemetry:
 * `tracing((tp, ctx, run) => tracer.startActiveSpan(ctx.type, {}, propagation.extract(context.active(), { traceparent: tp }), (span) => run().finally(() => span.end())))`.
 */
export declare function tracing(hook: (traceparent: string | undefined, ctx: JobContext, run: Next) => Promise<unknown>): Middleware;
