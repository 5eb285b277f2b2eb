// SPDX-License-Identifier: Apache-2.0
/**
 * Middleware around each job a worker runs, as Sidekiq's server middleware:
 * `async (ctx, next) => { ...; const r = await next(); ...; return r; }`.
 * The first in the list is the outermost. What `next()` resolves to is the
 * handler's result; what it throws is the attempt's failure (a middleware
 * may catch it, or return instead, or throw something else).
 */
import type { JobContext } from "./context";
import { Parked } from "./steps";
import { stderrLogger, type Logger } from "./log";

export type Next = () => Promise<unknown>;
export type Middleware = (ctx: JobContext, next: Next) => Promise<unknown>;

/** `inner` wrapped in `list`, the first outermost. */
export function compose(list: readonly Middleware[], ctx: JobContext, inner: Next): Next {
  let next = inner;
  for (let i = list.length - 1; i >= 0; i--) {
    const mw = list[i]!;
    const after = next;
    next = () => mw(ctx, after);
  }
  return next;
}

/** `Name: message` for an error: its class (or name) and message. */
export function describeError(e: unknown): string {
  if (e instanceof Error) {
    const ctor = (e as { constructor?: { name?: unknown } }).constructor;
    const cls = typeof ctor?.name === "string" && ctor.name !== "" && ctor.name !== "Error" ? ctor.name : e.name;
    return e.message ? `${cls}: ${e.message}` : cls;
  }
  return typeof e === "string" ? e : `thrown: ${String(e)}`;
}

/** Logs each job's start and end, with its duration. */
export function logging(logger: Logger = stderrLogger): Middleware {
  return async (ctx, next) => {
    const t0 = performance.now();
    logger.info(`job ${ctx.id} ${ctx.type} started (attempt ${ctx.attempt})`);
    try {
      const r = await next();
      logger.info(`job ${ctx.id} ${ctx.type} succeeded in ${(performance.now() - t0).toFixed(1)} ms`);
      return r;
    } catch (e) {
      if (e instanceof Parked) {
        logger.info(`job ${ctx.id} ${ctx.type} parked (${e.kind} "${e.stepName}") in ${(performance.now() - t0).toFixed(1)} ms`);
        throw e;
      }
      logger.warn(`job ${ctx.id} ${ctx.type} failed in ${(performance.now() - t0).toFixed(1)} ms: ${describeError(e)}`);
      throw e;
    }
  };
}

/** Hands every error a handler throws to `report` (an error tracker), then lets it fail the attempt (a step's Parked is no error: not reported). */
export function errorReporter(report: (error: unknown, ctx: JobContext) => void | Promise<void>): Middleware {
  return async (ctx, next) => {
    try {
      return await next();
    } catch (e) {
      if (e instanceof Parked) throw e;
      try {
        await report(e, ctx);
      } catch {
        // a broken reporter must not change the job's outcome
      }
      throw e;
    }
  };
}

/**
 * Opens the run's span: `hook` gets the job's traceparent (undefined when it
 * was submitted without one) and runs `run` inside a span that is its child,
 * e.g. with OpenTelemetry:
 * `tracing((tp, ctx, run) => tracer.startActiveSpan(ctx.type, {}, propagation.extract(context.active(), { traceparent: tp }), (span) => run().finally(() => span.end())))`.
 */
export function tracing(
  hook: (traceparent: string | undefined, ctx: JobContext, run: Next) => Promise<unknown>,
): Middleware {
  return (ctx, next) => hook(ctx.traceparent, ctx, next);
}
