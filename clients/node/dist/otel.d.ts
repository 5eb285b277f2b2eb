/**
 * OpenTelemetry, when the application has `@opentelemetry/api` (an optional
 * peer dependency; nothing else is needed here): a PRODUCER span `send
 * <queue>` around each submit call, whose context the jobs carry as their
 * `traceparent` (unless they have one, or the client's `trace` hook gives
 * one), and a CONSUMER span `process <queue>` around each run of a handler,
 * the child of that traceparent, active while the handler runs (its own
 * spans, and the jobs it submits, are its children). Spans follow the
 * messaging conventions (`messaging.system` "tenq",
 * `messaging.destination.name`, `messaging.operation.type`,
 * `messaging.message.id`, `messaging.batch.message_count`) with `tenq.*`
 * attributes besides. Without an SDK registered, the API's spans record
 * nothing and cost little.
 *
 * The API is typed here by the little this file uses, so that the
 * library's types do not need the package.
 */
import type { JobContext } from "./context";
type Attr = string | number | boolean;
export interface OtelSpanContext {
    traceId: string;
    spanId: string;
    traceFlags: number;
    isRemote?: boolean;
}
export interface OtelSpan {
    spanContext(): OtelSpanContext;
    isRecording(): boolean;
    setAttribute(key: string, value: Attr): unknown;
    setAttributes(attributes: Record<string, Attr>): unknown;
    setStatus(status: {
        code: number;
        message?: string;
    }): unknown;
    recordException(exception: Error | string): void;
    end(): void;
}
export interface OtelTracer {
    startSpan(name: string, options?: {
        kind?: number;
        attributes?: Record<string, Attr>;
    }, context?: unknown): OtelSpan;
}
/** What this library uses of `@opentelemetry/api` (pass the module itself as `openTelemetry`). */
export interface OtelApi {
    trace: {
        getTracer(name: string, version?: string): OtelTracer;
        setSpan(context: never, span: never): unknown;
        setSpanContext(context: never, spanContext: never): unknown;
        isSpanContextValid(spanContext: never): boolean;
    };
    context: {
        active(): unknown;
        with(context: never, fn: never): unknown;
    };
    SpanKind: {
        PRODUCER: number;
        CONSUMER: number;
    };
    SpanStatusCode: {
        ERROR: number;
    };
}
/** The client's option: `undefined`/`true`: use `@opentelemetry/api` when it is installed; `false`: never; or the API module. */
export type OpenTelemetryOption = boolean | OtelApi | undefined;
/** `@opentelemetry/api` when the application has it, else null (looked for once). */
export declare function findOtelApi(): OtelApi | null;
/** A producer span under way: the traceparent its jobs carry, and its end. */
export interface Sending {
    readonly traceparent: string | undefined;
    done(jobId?: number): void;
    fail(error: unknown): void;
}
/** The spans of one client (and its workers). */
export declare class Instrumentation {
    private readonly api;
    private readonly tracer;
    constructor(api: OtelApi, version: string);
    /** Opens the PRODUCER span of a submit call of `count` jobs to `queue`. */
    send(queue: string | undefined, count: number, tenant: string | undefined): Sending;
    /** Runs a handler inside its CONSUMER span, the child of the job's traceparent. */
    process<T>(ctx: JobContext, run: () => Promise<T>): Promise<T>;
}
/** The W3C traceparent of a span context. */
export declare function toTraceparent(sc: OtelSpanContext): string;
/** The instrumentation a client's option asks for, or none. */
export declare function instrumentation(option: OpenTelemetryOption, version: string): Instrumentation | undefined;
export {};
