// SPDX-License-Identifier: Apache-2.0
// OpenTelemetry with @opentelemetry/api present: spans of submits (PRODUCER)
// and of handlers' runs (CONSUMER), exported to an in-memory exporter of the
// real SDK, against a real server: one trace from the caller's span through
// the submit, the job's traceparent, the handler's run, its own span and the
// job it submits, to that job's run.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, it } from "node:test";

import * as api from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { Tenq, findOtelApi, toTraceparent } from "tenq";

import { Server, until, withWorker } from "./harness";

const exporter = new InMemorySpanExporter();
let server: Server;

before(async () => {
  api.context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  api.trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
  server = await Server.start();
});
after(async () => {
  await server.close();
});
beforeEach(() => exporter.reset());

const parentOf = (s: ReadableSpan): string | undefined => s.parentSpanContext?.spanId;
const idOf = (s: ReadableSpan): string => s.spanContext().spanId;

describe("OpenTelemetry", () => {
  it("finds the API the application has", () => {
    assert.equal(findOtelApi()?.trace, api.trace);
  });

  it("links the caller's span, the submit, the run, the handler's spans and the jobs it submits in one trace", async () => {
    const app: Tenq = server.app({ queue: "otel" });
    const tracer = api.trace.getTracer("test");
    app.handle("Parent", async (args: unknown) => {
      await tracer.startActiveSpan("inside the handler", async (span) => {
        await app.enqueue("Child", args);
        span.end();
      });
      return "parent done";
    });
    const childRan: number[] = [];
    app.handle("Child", (_a, ctx) => void childRan.push(ctx.id));
    const { handle, root } = await tracer.startActiveSpan("http request", async (span) => {
      const h = await app.enqueue("Parent", { n: 1 });
      span.end();
      return { handle: h, root: span };
    });
    await withWorker(app, {}, async () => {
      assert.equal(await handle.wait({ timeoutMs: 20_000 }), "parent done");
      await until(() => childRan.length === 1, "the child job");
      await until(() => exporter.getFinishedSpans().filter((s) => s.name === "process otel").length === 2, "both runs' spans");
    });
    const spans = exporter.getFinishedSpans();
    const byName = (n: string): ReadableSpan[] => spans.filter((s) => s.name === n);
    const sends = byName("send otel");
    assert.equal(sends.length, 2, spans.map((s) => s.name).join(", "));
    const send1 = sends.find((s) => parentOf(s) === root.spanContext().spanId)!;
    const send2 = sends.find((s) => s !== send1)!;
    const runs = byName("process otel");
    const run1 = runs.find((s) => s.attributes["tenq.job.type"] === "Parent")!;
    const run2 = runs.find((s) => s.attributes["tenq.job.type"] === "Child")!;
    const inner = byName("inside the handler")[0]!;
    // one trace
    const traceId = root.spanContext().traceId;
    assert.ok(spans.every((s) => s.spanContext().traceId === traceId));
    // parent / child, across the server
    assert.equal(parentOf(send1), root.spanContext().spanId);
    assert.equal(parentOf(run1), idOf(send1));
    assert.equal(parentOf(inner), idOf(run1));
    assert.equal(parentOf(send2), idOf(inner));
    assert.equal(parentOf(run2), idOf(send2));
    // kinds and attributes
    assert.deepEqual([send1.kind, send2.kind, run1.kind, run2.kind], [api.SpanKind.PRODUCER, api.SpanKind.PRODUCER, api.SpanKind.CONSUMER, api.SpanKind.CONSUMER]);
    assert.equal(send1.attributes["messaging.system"], "tenq");
    assert.equal(send1.attributes["messaging.destination.name"], "otel");
    assert.equal(send1.attributes["messaging.message.id"], String(handle.id));
    assert.equal(run1.attributes["messaging.message.id"], String(handle.id));
    assert.equal(run1.attributes["tenq.job.attempt"], 1);
    // the job carries the producer span's context
    const job = await app.client.get(handle.id);
    assert.equal(job.traceparent, toTraceparent(send1.spanContext()));
    app.close();
  });

  it("a handler that throws: its span has the error; submitMany is one span for the call", async () => {
    const app: Tenq = server.app({ queue: "otel-bad" });
    await app.client.setQueue("otel-bad", { maxAttempts: 1 });
    app.handle("Bad", () => {
      throw new Error("it broke");
    });
    const results = await app.client.submitMany([{ type: "Bad" }, { type: "Bad" }, { type: "Bad" }]);
    await withWorker(app, {}, async () => {
      for (const r of results) if (r.ok) await app.client.wait(r.id, { timeoutMs: 20_000 });
      await until(() => exporter.getFinishedSpans().filter((s) => s.name === "process otel-bad").length === 3, "the runs' spans");
    });
    const spans = exporter.getFinishedSpans();
    const sends = spans.filter((s) => s.name === "send otel-bad");
    assert.equal(sends.length, 1);
    assert.equal(sends[0]!.attributes["messaging.batch.message_count"], 3);
    const runs = spans.filter((s) => s.name === "process otel-bad");
    assert.ok(runs.every((s) => parentOf(s) === idOf(sends[0]!)));
    assert.ok(runs.every((s) => s.status.code === api.SpanStatusCode.ERROR && s.status.message === "it broke"));
    assert.ok(runs.every((s) => s.events.some((e) => e.name === "exception")));
    app.close();
  });

  it("openTelemetry: false makes no spans; a traceparent of the caller's own is kept", async () => {
    const app = new Tenq({ servers: server.url, tenant: "acme", queue: "otel-off", openTelemetry: false });
    const h = await app.enqueue("Off");
    assert.equal((await app.client.get(h.id)).traceparent, undefined);
    const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const on = server.app({ queue: "otel-off", openTelemetry: api });
    const h2 = await on.enqueue("Own", null, { traceparent: own });
    assert.equal((await on.client.get(h2.id)).traceparent, own);
    assert.deepEqual(exporter.getFinishedSpans().map((s) => s.name), ["send otel-off"]);
    app.close();
    on.close();
  });
});
