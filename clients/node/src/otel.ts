// SPDX-License-Identifier: Apache-2.0
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
import { Parked } from "./steps";
import { isTraceparent } from "./tracing";

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
  setStatus(status: { code: number; message?: string }): unknown;
  recordException(exception: Error | string): void;
  end(): void;
}

export interface OtelTracer {
  startSpan(name: string, options?: { kind?: number; attributes?: Record<string, Attr> }, context?: unknown): OtelSpan;
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
  SpanKind: { PRODUCER: number; CONSUMER: number };
  SpanStatusCode: { ERROR: number };
}

/** The client's option: `undefined`/`true`: use `@opentelemetry/api` when it is installed; `false`: never; or the API module. */
export type OpenTelemetryOption = boolean | OtelApi | undefined;

let found: OtelApi | null | undefined;

/** `@opentelemetry/api` when the application has it, else null (looked for once). */
export function findOtelApi(): OtelApi | null {
  if (found === undefined) {
    try {
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      found = require("@opentelemetry/api") as OtelApi;
    } catch {
      found = null;
    }
  }
  return found;
}

/** A producer span under way: the traceparent its jobs carry, and its end. */
export interface Sending {
  readonly traceparent: string | undefined;
  done(jobId?: number): void;
  fail(error: unknown): void;
}

/** The spans of one client (and its workers). */
export class Instrumentation {
  private readonly tracer: OtelTracer;

  constructor(
    private readonly api: OtelApi,
    version: string,
  ) {
    this.tracer = api.trace.getTracer("tenq", version);
  }

  /** Opens the PRODUCER span of a submit call of `count` jobs to `queue`. */
  send(queue: string | undefined, count: number, tenant: string | undefined): Sending {
    const api = this.api;
    const attributes: Record<string, Attr> = {
      "messaging.system": "tenq",
      "messaging.operation.type": "send",
      "messaging.operation.name": "send",
    };
    if (queue) attributes["messaging.destination.name"] = queue;
    if (tenant) attributes["tenq.tenant"] = tenant;
    if (count !== 1) attributes["messaging.batch.message_count"] = count;
    const span = this.tracer.startSpan(`send ${queue ?? "jobs"}`, { kind: api.SpanKind.PRODUCER, attributes }, api.context.active());
    const sc = span.spanContext();
    const traceparent = api.trace.isSpanContextValid(sc as never) ? toTraceparent(sc) : undefined;
    return {
      traceparent,
      done(jobId) {
        if (jobId !== undefined) span.setAttribute("messaging.message.id", String(jobId));
        span.end();
      },
      fail(error) {
        failed(api, span, error);
        span.end();
      },
    };
  }

  /** Runs a handler inside its CONSUMER span, the child of the job's traceparent. */
  process<T>(ctx: JobContext, run: () => Promise<T>): Promise<T> {
    const api = this.api;
    const job = ctx.job;
    const parentSc = ctx.traceparent !== undefined ? fromTraceparent(ctx.traceparent) : undefined;
    const parent = parentSc ? api.trace.setSpanContext(api.context.active() as never, parentSc as never) : api.context.active();
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
    const active = api.trace.setSpan(parent as never, span as never);
    let p: Promise<T>;
    try {
      p = (api.context.with as (c: unknown, fn: () => Promise<T>) => Promise<T>)(active, run);
    } catch (e) {
      p = Promise.reject(e);
    }
    return p.then(
      (v) => {
        span.end();
        return v;
      },
      (e: unknown) => {
        // a step that parked the job ended the attempt without failing it
        if (e instanceof Parked) span.setAttribute("tenq.parked", e.kind);
        else failed(api, span, e);
        span.end();
        throw e;
      },
    );
  }
}

function failed(api: OtelApi, span: OtelSpan, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: api.SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
}

/** The W3C traceparent of a span context. */
export function toTraceparent(sc: OtelSpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${(sc.traceFlags & 0xff).toString(16).padStart(2, "0")}`;
}

function fromTraceparent(tp: string): OtelSpanContext | undefined {
  if (!isTraceparent(tp)) return undefined;
  const [, traceId, spanId, flags] = tp.split("-");
  return { traceId: traceId!, spanId: spanId!, traceFlags: parseInt(flags!, 16), isRemote: true };
}

/** The instrumentation a client's option asks for, or none. */
export function instrumentation(option: OpenTelemetryOption, version: string): Instrumentation | undefined {
  if (option === false) return undefined;
  const api = option === undefined || option === true ? findOtelApi() : option;
  return api ? new Instrumentation(api, version) : undefined;
}
