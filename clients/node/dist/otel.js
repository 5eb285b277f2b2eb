"use strict";
Object.defineProperty(exports, "__esModule", { value: true });
exports.Instrumentation = void 0;
exports.findOtelApi = findOtelApi;
exports.toTraceparent = toTraceparent;
exports.instrumentation = instrumentation;
const steps_1 = require("./steps");
const tracing_1 = require("./tracing");
let found;
/** `@opentelemetry/api` when the application has it, else null (looked for once). */
function findOtelApi() {
    if (found === undefined) {
        try {
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            found = require("@opentelemetry/api");
        }
        catch {
            found = null;
        }
    }
    return found;
}
/** The spans of one client (and its workers). */
class Instrumentation {
    api;
    tracer;
    constructor(api, version) {
        this.api = api;
        this.tracer = api.trace.getTracer("tenq", version);
    }
    /** Opens the PRODUCER span of a submit call of `count` jobs to `queue`. */
    send(queue, count, tenant) {
        const api = this.api;
        const attributes = {
            "messaging.system": "tenq",
            "messaging.operation.type": "send",
            "messaging.operation.name": "send",
        };
        if (queue)
            attributes["messaging.destination.name"] = queue;
        if (tenant)
            attributes["tenq.tenant"] = tenant;
        if (count !== 1)
            attributes["messaging.batch.message_count"] = count;
        const span = this.tracer.startSpan(`send ${queue ?? "jobs"}`, { kind: api.SpanKind.PRODUCER, attributes }, api.context.active());
        const sc = span.spanContext();
        const traceparent = api.trace.isSpanContextValid(sc) ? toTraceparent(sc) : undefined;
        return {
            traceparent,
            done(jobId) {
                if (jobId !== undefined)
                    span.setAttribute("messaging.message.id", String(jobId));
                span.end();
            },
            fail(error) {
                failed(api, span, error);
                span.end();
            },
        };
    }
    /** Runs a handler inside its CONSUMER span, the child of the job's traceparent. */
    process(ctx, run) {
        const api = this.api;
        const job = ctx.job;
        const parentSc = ctx.traceparent !== undefined ? fromTraceparent(ctx.traceparent) : undefined;
        const parent = parentSc ? api.trace.setSpanContext(api.context.active(), parentSc) : api.context.active();
        const span = this.tracer.startSpan(`process ${job.queue}`, { kind: api.SpanKind.CONSUMER }, parent);
        const recording = span.isRecording();
        if (!recording && parentSc === undefined) {
            span.end();
            return run(); // nothing records and no trace came with the job: no context to carry
        }
        if (recording)
            span.setAttributes({
                "messaging.system": "tenq",
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": job.queue,
                "messaging.message.id": String(job.id),
                "tenq.tenant": job.tenant,
                "tenq.job.type": job.type,
                "tenq.job.attempt": ctx.attempt,
            });
        const active = api.trace.setSpan(parent, span);
        let p;
        try {
            p = api.context.with(active, run);
        }
        catch (e) {
            p = Promise.reject(e);
        }
        return p.then((v) => {
            span.end();
            return v;
        }, (e) => {
            // a step that parked the job ended the attempt without failing it
            if (e instanceof steps_1.Parked)
                span.setAttribute("tenq.parked", e.kind);
            else
                failed(api, span, e);
            span.end();
            throw e;
        });
    }
}
exports.Instrumentation = Instrumentation;
function failed(api, span, error) {
    span.recordException(error instanceof Error ? error : String(error));
    span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}
/** The W3C traceparent of a span context. */
function toTraceparent(sc) {
    return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}
function fromTraceparent(tp) {
    if (!(0, tracing_1.isTraceparent)(tp))
        return undefined;
    const [, traceId, spanId, flags] = tp.split("-");
    return { traceId: traceId, spanId: spanId, traceFlags: parseInt(flags, 16), isRemote: true };
}
/** The instrumentation a client's option asks for, or none. */
function instrumentation(option, version) {
    if (option === false)
        return undefined;
    const api = option === undefined || option === true ? findOtelApi() : option;
    return api ? new Instrumentation(api, version) : undefined;
}
