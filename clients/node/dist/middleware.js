"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.compose = compose;
exports.describeError = describeError;
exports.logging = logging;
exports.errorReporter = errorReporter;
exports.tracing = tracing;
const steps_1 = require("./steps");
const log_1 = require("./log");
/** `inner` wrapped in `list`, the first outermost. */
function compose(list, ctx, inner) {
    let next = inner;
    for (let i = list.length - 1; i >= 0; i--) {
        const mw = list[i];
        const after = next;
        next = () => mw(ctx, after);
    }
    return next;
}
/** `Name: message` for an error: its class (or name) and message. */
function describeError(e) {
    if (e instanceof Error) {
        const ctor = e.constructor;
        const cls = typeof ctor?.name === "string" && ctor.name !== "" && ctor.name !== "Error" ? ctor.name : e.name;
        return e.message ? `${cls}: ${e.message}` : cls;
    }
    return typeof e === "string" ? e : `thrown: ${String(e)}`;
}
/** Logs each job's start and end, with its duration. */
function logging(logger = log_1.stderrLogger) {
    return async (ctx, next) => {
        const t0 = performance.now();
        logger.info(`job ${ctx.id} ${ctx.type} started (attempt ${ctx.attempt})`);
        try {
            const r = await next();
            logger.info(`job ${ctx.id} ${ctx.type} succeeded in ${(performance.now() - t0).toFixed(1)} ms`);
            return r;
        }
        catch (e) {
            if (e instanceof steps_1.Parked) {
                logger.info(`job ${ctx.id} ${ctx.type} parked (${e.kind} "${e.stepName}") in ${(performance.now() - t0).toFixed(1)} ms`);
                throw e;
            }
            logger.warn(`job ${ctx.id} ${ctx.type} failed in ${(performance.now() - t0).toFixed(1)} ms: ${describeError(e)}`);
            throw e;
        }
    };
}
/** Hands every error a handler throws to `report` (an error tracker), then lets it fail the attempt (a step's Parked is no error: not reported). */
function errorReporter(report) {
    return async (ctx, next) => {
        try {
            return await next();
        }
        catch (e) {
            if (e instanceof steps_1.Parked)
                throw e;
            try {
                await report(e, ctx);
            }
            catch {
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
function tracing(hook) {
    return (ctx, next) => hook(ctx.traceparent, ctx, next);
}
