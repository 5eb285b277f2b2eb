// SPDX-License-Identifier: Apache-2.0
// The worker's events against a real server: per job `active`, its
// `progress`, then `completed` (the server has it succeeded by then) or
// `failed` (with what the handler threw, or why it was stopped); `error`
// while the server is away; `closing` and `closed` around a stop.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { NoRetryError, type JobContext, type Tenq } from "tenq";

import { Server, sleep, until } from "./harness";

let server: Server;
before(async () => {
  server = await Server.start();
});
after(async () => {
  await server.close();
});

describe("worker events", () => {
  it("each job's events in order: active, progress, completed or failed; the server has the outcome by then", async () => {
    const app: Tenq = server.app({ queue: "events" });
    await app.client.setQueue("events", { maxAttempts: 1 });
    app.handle("Ok", async (args: unknown, ctx) => {
      ctx.progress({ step: 1 });
      await sleep(20);
      ctx.progress({ step: 2 });
      return { done: args };
    });
    app.handle("Bad", () => {
      throw new NoRetryError("bad input");
    });
    app.handle("Slow", () => sleep(5_000), { timeoutMs: 300 }); // ignores its signal: released after the grace
    const w = app.worker({ concurrency: 3, logger: null, handleSignals: false, graceMs: 200 });
    const seen = new Map<number, string[]>();
    const note = (ctx: JobContext, what: string): void => void seen.set(ctx.id, [...(seen.get(ctx.id) ?? []), what]);
    const states: Record<string, string> = {};
    const got: { result?: unknown; error?: unknown } = {};
    const life: string[] = [];
    w.on("active", (ctx) => note(ctx, "active"));
    w.on("progress", (ctx, p) => note(ctx, `progress ${JSON.stringify(p)}`));
    w.on("completed", (ctx, result) => {
      note(ctx, "completed");
      got.result = result;
      void app.client.get(ctx.id).then((j) => (states[ctx.type] = j.state));
    });
    w.on("failed", (ctx, error) => {
      note(ctx, `failed ${error instanceof Error ? error.name : String(error)}`);
      if (ctx.type === "Bad") got.error = error;
      void app.client.get(ctx.id).then((j) => (states[ctx.type] = j.state));
    });
    w.on("closing", () => life.push("closing"));
    w.on("closed", () => life.push("closed"));
    const running = w.run();
    const ok = await app.enqueue("Ok", 7);
    const bad = await app.enqueue("Bad");
    const slow = await app.enqueue("Slow");
    await until(() => seen.get(ok.id)?.at(-1) === "completed" && seen.has(bad.id) && (seen.get(slow.id)?.length ?? 0) >= 2, "the events");
    await until(() => Object.keys(states).length === 3, "the jobs' states");
    await w.stop();
    await running;
    assert.deepEqual(seen.get(ok.id), ["active", 'progress {"step":1}', 'progress {"step":2}', "completed"]);
    assert.deepEqual(seen.get(bad.id), ["active", "failed NoRetryError"]);
    assert.deepEqual(seen.get(slow.id), ["active", "failed JobTimeoutError"]);
    assert.deepEqual(got.result, { done: 7 });
    assert.ok(got.error instanceof NoRetryError);
    // read in the listener: the server had each outcome when it was emitted
    assert.deepEqual(states, { Ok: "succeeded", Bad: "dead", Slow: "dead" });
    assert.deepEqual(life, ["closing", "closed"]);
    app.close();
  });

  it("error while the server is away; the jobs' events once it is back", async () => {
    const s = await Server.start();
    const app = s.app({ queue: "away", failoverBudgetMs: 200 });
    app.handle("Echo", (a) => a);
    const w = app.worker({ logger: null, handleSignals: false, pollMs: 200 });
    const errors: Error[] = [];
    const done: number[] = [];
    w.on("error", (e) => errors.push(e));
    w.on("completed", (ctx) => done.push(ctx.id));
    const running = w.run();
    try {
      const h = await app.enqueue("Echo", 1);
      await until(() => done.includes(h.id), "the first job");
      assert.equal(errors.length, 0);
      await s.kill(); // away: leases fail
      await until(() => errors.length > 0, "an error event");
      await s.restart();
      const h2 = await app.enqueue("Echo", 2);
      await until(() => done.includes(h2.id), "a job after the outage", 30_000);
      assert.ok(errors.every((e) => e instanceof Error));
    } finally {
      await w.stop();
      await running;
      app.close();
      await s.close();
    }
  });

  it("without an error listener the worker only logs (an unheard error event would throw)", async () => {
    const s = await Server.start();
    const app = s.app({ queue: "noerr", failoverBudgetMs: 200 });
    const w = app.worker({ logger: null, handleSignals: false, pollMs: 200 });
    const running = w.run();
    await sleep(100);
    await s.close(); // gone: every lease fails
    await sleep(800);
    await w.stop();
    await running;
    app.close();
  });
});
