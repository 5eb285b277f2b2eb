// SPDX-License-Identifier: Apache-2.0
// The worker against a real server: concurrency, retries to the morgue, cancel,
// progress, timeouts, middleware, unknown types, a server that goes away.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";
import { isDeepStrictEqual } from "node:util";

import {
  JobCancelledError,
  NoRetryError,
  RetryError,
  Tenq,
  Worker,
  errorReporter,
  logging,
  type JobContext,
  type Logger,
} from "tenq";

import { Server, clockOff, requestsServed, sleep, until, withWorker } from "./harness";

let server: Server;
let tenq: Tenq;

before(async () => {
  server = await Server.start();
  tenq = server.app();
});
after(async () => {
  tenq.close();
  await server.close();
});


const untilAborted = (signal: AbortSignal, ms = 15_000): Promise<void> =>
  new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error("never aborted")), ms);
    signal.addEventListener("abort", () => {
      clearTimeout(t);
      resolve();
    });
  });

describe("worker", () => {
  it("runs jobs concurrently, never more than its concurrency", async () => {
    let now = 0;
    let most = 0;
    const app = server.app({ queue: "conc" });
    app.handle("Slow", async () => {
      now++;
      most = Math.max(most, now);
      await sleep(300);
      now--;
      return "done";
    });
    const handles = await Promise.all(Array.from({ length: 6 }, () => app.enqueue("Slow")));
    const t0 = Date.now();
    await withWorker(app, { concurrency: 3 }, async () => {
      for (const h of handles) assert.equal(await h.wait({ timeoutMs: 20_000 }), "done");
    });
    const took = Date.now() - t0;
    assert.equal(most, 3);
    assert.ok(took < 6 * 300, `six 300 ms jobs on 3 slots took ${took} ms`);
    app.close();
  });

  it("fails a throwing handler's attempt with its class and message, retries, and sends it to the morgue", async () => {
    await tenq.client.setQueue("retry", { maxAttempts: 3, backoff: "fixed", backoffBaseMs: 0 });
    class ReportBroken extends Error {}
    let runs = 0;
    const app = server.app({ queue: "retry" });
    app.handle("Broken", () => {
      runs++;
      throw new ReportBroken("no data");
    });
    app.handle("Fine", () => "ok");
    const h = await app.enqueue("Broken");
    const fine = await app.enqueue("Fine");
    await withWorker(app, {}, async () => {
      await until(async () => (await app.client.get(h.id)).state === "dead", "the job to die");
      assert.equal(await fine.wait({ timeoutMs: 10_000 }), "ok"); // the worker lives on
    });
    const job = await app.client.get(h.id);
    assert.equal(runs, 3);
    assert.equal(job.attempts, 3);
    assert.equal(job.error, "ReportBroken: no data");
    const morgue = await app.client.morgue({ queue: "retry" });
    assert.deepEqual(morgue.jobs.map((j) => j.id), [h.id]);
    app.close();
  });

  it("retries after the delay a handler asks for, and not at all on NoRetryError", async () => {
    await tenq.client.setQueue("retryin", { maxAttempts: 5 });
    const app = server.app({ queue: "retryin" });
    const seen: number[] = [];
    app.handle("Later", (_a, ctx) => {
      seen.push(Date.now());
      if (ctx.attempt === 1) throw new RetryError(400, "not yet");
      return ctx.attempt;
    });
    app.handle("Never", () => {
      throw new NoRetryError("hopeless");
    });
    const later = await app.enqueue("Later");
    const never = await app.enqueue("Never");
    await withWorker(app, {}, async () => {
      assert.equal(await later.wait({ timeoutMs: 20_000 }), 2);
      await until(async () => (await app.client.get(never.id)).state === "dead", "NoRetryError to the morgue");
    });
    assert.equal(seen.length, 2);
    assert.ok(seen[1]! - seen[0]! >= 350, `retried after ${seen[1]! - seen[0]!} ms`);
    const n = await app.client.get(never.id);
    assert.equal(n.attempts, 1);
    assert.equal(n.error, "hopeless");
    app.close();
  });

  it("notices a cancel at a heartbeat, and records progress", async () => {
    await tenq.client.setQueue("cancel", { leaseMs: 1500 });
    const app = server.app({ queue: "cancel" });
    let reason: unknown;
    app.handle("Long", async (_a, ctx) => {
      ctx.progress({ step: 1, of: 3 });
      await untilAborted(ctx.signal);
      reason = ctx.signal.reason;
      throw ctx.signal.reason;
    });
    const h = await app.enqueue("Long");
    await withWorker(app, {}, async () => {
      // the progress goes with a heartbeat, the start in a notice 10 ms later: wait for both
      await until(async () => {
        const j = await app.client.get(h.id);
        return isDeepStrictEqual(j.progress, { step: 1, of: 3 }) && j.state === "running";
      }, "the progress to reach the running job");
      await h.cancel();
      await assert.rejects(h.wait({ timeoutMs: 10_000 }), JobCancelledError);
    });
    assert.ok(reason instanceof JobCancelledError);
    assert.equal((await app.client.get(h.id)).state, "cancelled");
    app.close();
  });

  it("keeps a long job's lease alive with heartbeats", async () => {
    await tenq.client.setQueue("beats", { leaseMs: 900 });
    const app = server.app({ queue: "beats" });
    app.handle("Long", async () => {
      await sleep(2_500);
      return "finished";
    });
    const h = await app.enqueue("Long");
    await withWorker(app, {}, async () => {
      assert.equal(await h.wait({ timeoutMs: 20_000 }), "finished");
    });
    const job = await app.client.get(h.id);
    assert.equal(job.attempts, 1);
    assert.equal(job.state, "succeeded");
    app.close();
  });

  for (const offset of [3600, -3600]) {
    it(`spaces heartbeats by the lease's time left, not the wall clock (server ${offset > 0 ? "+" : ""}${offset} s)`, async () => {
      // heartbeats 20 minutes apart would let the lease lapse (the job runs again); as fast as
      // they can would be 35 and more requests
      const off = await Server.start({ env: clockOff(offset) });
      const app = off.app({ queue: "beats" });
      try {
        await app.client.setQueue("beats", { leaseMs: 3_000 }); // heartbeats every second
        app.handle("Long", async () => {
          await sleep(3_500);
          return "finished";
        });
        const before = await requestsServed(off);
        const h = await app.enqueue("Long");
        await withWorker(app, {}, async () => {
          assert.equal(await h.wait({ timeoutMs: 20_000 }), "finished");
        });
        const served = (await requestsServed(off)) - before;
        const job = await app.client.get(h.id);
        assert.equal(job.attempts, 1);
        assert.ok(served < 20, `${served} requests`);
      } finally {
        app.close();
        await off.close();
      }
    });
  }

  it("stops a handler past its timeout and fails the job \"timeout\"", async () => {
    await tenq.client.setQueue("timeout", { maxAttempts: 1 });
    const app = server.app({ queue: "timeout" });
    let aborted: unknown;
    app.handle("Stuck", async (_a, ctx) => {
      await untilAborted(ctx.signal);
      aborted = ctx.signal.reason;
      throw new Error("stopped");
    });
    const h = await app.enqueue("Stuck");
    await withWorker(app, { timeoutMs: 300 }, async () => {
      await until(async () => (await app.client.get(h.id)).state === "dead", "the job to time out");
    });
    const job = await app.client.get(h.id);
    assert.equal(job.error, "timeout");
    assert.equal((aborted as Error).name, "JobTimeoutError");
    app.close();
  });

  it("runs middleware around each job, the first outermost, and reports errors", async () => {
    const app = server.app({ queue: "mw" });
    const order: string[] = [];
    const reported: string[] = [];
    const lines: string[] = [];
    const logger: Logger = { info: (m) => lines.push(m), warn: (m) => lines.push(m), error: (m) => lines.push(m) };
    const mark = (name: string) => async (ctx: JobContext, next: () => Promise<unknown>) => {
      order.push(`${name}>${ctx.type}`);
      try {
        return await next();
      } finally {
        order.push(`<${name}`);
      }
    };
    app.handle("Good", () => {
      order.push("handler");
      return 1;
    });
    app.handle("Bad", () => {
      throw new TypeError("bad input");
    });
    const good = await app.enqueue("Good");
    await withWorker(
      app,
      { middleware: [mark("a"), errorReporter((e, ctx) => void reported.push(`${ctx.id}:${String(e)}`)), logging(logger), mark("b")] },
      async () => {
        assert.equal(await good.wait({ timeoutMs: 10_000 }), 1);
        assert.deepEqual(order, ["a>Good", "b>Good", "handler", "<b", "<a"]);
        const bad = await app.enqueue("Bad", null, { maxAttempts: 1 });
        await until(async () => (await app.client.get(bad.id)).state === "dead", "Bad to die");
        assert.deepEqual(reported, [`${bad.id}:TypeError: bad input`]);
        assert.equal((await app.client.get(bad.id)).error, "TypeError: bad input");
      },
    );
    assert.ok(lines.some((l) => /job \d+ Good succeeded/.test(l)), lines.join("\n"));
    assert.ok(lines.some((l) => /job \d+ Bad failed .*TypeError: bad input/.test(l)), lines.join("\n"));
    app.close();
  });

  it("fails a job whose type has no handler, and goes on", async () => {
    await tenq.client.setQueue("unknown", { maxAttempts: 1 });
    const app = server.app({ queue: "unknown" });
    app.handle("Known", () => "yes");
    const nope = await app.client.submit({ type: "Nope" });
    const known = await app.enqueue("Known");
    await withWorker(app, {}, async () => {
      assert.equal(await known.wait({ timeoutMs: 10_000 }), "yes");
      await until(async () => (await app.client.get(nope.id)).state === "dead", "Nope to fail");
    });
    assert.match((await app.client.get(nope.id)).error ?? "", /no handler for job type "Nope"/);
    app.close();
  });

  for (const outcomes of ["separate", "with-lease"] as const)
    it(`reports the outcomes of many jobs (${outcomes}), each once`, async () => {
      const queue = `many-${outcomes}`;
      const app = server.app({ queue });
      const ran = new Set<number>();
      let acked = 0;
      app.handle("N", (args, ctx) => {
        ran.add(ctx.id);
        return args;
      });
      const res = await app.client.submitMany(Array.from({ length: 500 }, (_, i) => ({ type: "N", args: i })));
      const onReported = (rs: { ok: boolean }[]): void => void (acked += rs.filter((r) => r.ok).length);
      await withWorker(app, { concurrency: 4, prefetch: 50, outcomes, onReported }, async () => {
        await until(() => acked === 500, "500 outcomes acknowledged");
      });
      assert.equal(ran.size, 500);
      const done = await app.client.list({ queue, state: "succeeded", limit: 1000 });
      assert.equal(done.jobs.length, 500);
      const last = res[499]!;
      assert.ok(last.ok);
      if (last.ok) assert.equal((await app.client.get(last.id)).result, 499);
      app.close();
    });

  it("prefetches by default while jobs are short, and leases only for free slots when they are long", async () => {
    // short jobs: the worker holds many more than its 2 slots (one lease a batch)
    const short = server.app({ queue: "pf-short" });
    let w!: Worker;
    let most = 0;
    let ran = 0;
    short.handle("Quick", () => {
      ran++;
      most = Math.max(most, w.inHand);
    });
    await short.client.submitMany(Array.from({ length: 2000 }, () => ({ type: "Quick" })));
    await withWorker(short, { concurrency: 2 }, async (worker) => {
      w = worker; // its defaults: prefetch "auto"
      await until(() => ran === 2000, "2000 quick jobs to run");
    });
    assert.ok(most > 100, `held ${most} jobs at most`);
    short.close();

    // long jobs (150 ms, longer than the 50 ms of work the prefetch holds): no more than the slots
    const long = server.app({ queue: "pf-long" });
    let mostLong = 0;
    let wl!: Worker;
    long.handle("Slow", async () => {
      mostLong = Math.max(mostLong, wl.inHand);
      await sleep(150);
    });
    const hs = await Promise.all(Array.from({ length: 8 }, () => long.enqueue("Slow")));
    await withWorker(long, { concurrency: 2 }, async (worker) => {
      wl = worker;
      for (const h of hs) await h.wait({ timeoutMs: 20_000 });
      assert.equal(worker.prefetch, 0);
    });
    assert.equal(mostLong, 2);
    long.close();
  });

  it("prefetches fewer jobs when they are big (about 8 MiB in hand)", async () => {
    const app = server.app({ queue: "pf-big" });
    let w!: Worker;
    let most = 0;
    let ran = 0;
    app.handle("Big", () => {
      ran++;
      most = Math.max(most, w.inHand);
    });
    const blob = "x".repeat(256 * 1024); // 256 KiB of args: about 32 jobs make 8 MiB
    for (let i = 0; i < 4; i++) await app.client.submitMany(Array.from({ length: 40 }, () => ({ type: "Big", args: blob })));
    await withWorker(app, { concurrency: 2 }, async (worker) => {
      w = worker;
      await until(() => ran === 160, "160 big jobs to run");
    });
    assert.ok(most > 2 && most <= 2 + 34, `held ${most} jobs at most`);
    app.close();
  });

  it("gives back the jobs it prefetched and had not started when it stops", async () => {
    const queue = "pf-stop";
    const app = server.app({ queue });
    let quick = 0;
    const held: number[] = [];
    app.handle("Quick", () => void quick++);
    app.handle("Hold", (_a, ctx) => {
      held.push(ctx.id);
      return untilAborted(ctx.signal).then(() => Promise.reject(ctx.signal.reason as Error));
    });
    // the quick jobs teach the worker that jobs are short; the held ones are then prefetched
    await app.client.submitMany(Array.from({ length: 100 }, () => ({ type: "Quick" })));
    await app.client.submitMany(Array.from({ length: 200 }, () => ({ type: "Hold" })));
    const w = app.worker({ concurrency: 2, graceMs: 300, logger: null, handleSignals: false });
    const running = w.run();
    await until(() => held.length === 2 && quick === 100 && w.inHand > 2, "two held jobs running and more in hand");
    await sleep(300); // a lease under way is answered (then, with both slots stuck, none is sent)
    const inHand = w.inHand;
    assert.ok(inHand > 2, `${inHand} jobs in hand`);
    await w.stop();
    const stats = await running;
    assert.equal(stats.succeeded, 100);
    assert.equal(stats.givenBack, inHand); // the two cut off and every one waiting
    assert.equal(held.length, 2); // none of the waiting ones ran
    const hold = (await app.client.list({ queue, type: "Hold", limit: 1000 })).jobs;
    assert.equal(hold.length, 200);
    assert.deepEqual(hold.filter((j) => j.state !== "ready"), []);
    const back = hold.filter((j) => j.error === "worker stopped");
    assert.equal(back.length, inHand);
    for (const j of back) assert.equal(j.attempts, 1);
    app.close();
  });

  it("refuses a bad prefetch", () => {
    assert.throws(() => tenq.worker({ queues: ["x"], prefetch: -1 }), /prefetch/);
    assert.throws(() => tenq.worker({ queues: ["x"], prefetch: "many" as unknown as number }), /prefetch/);
  });

  it("keeps outcomes while the server is away and reports them when it is back", async () => {
    const s = await Server.start();
    const app = s.app({ queue: "away", failoverBudgetMs: 2_000 });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let started = false;
    app.handle("Gated", async () => {
      started = true;
      await gate;
      return "survived";
    });
    const h = await app.enqueue("Gated");
    try {
      await withWorker(app, {}, async () => {
        await until(() => started, "the job to start");
        await sleep(600); // the lease is stored (--lease-write-delay 200 ms)
        await s.kill("SIGKILL");
        release(); // the outcome is made while the server is down
        await sleep(800);
        await s.restart();
        await until(async () => (await app.client.get(h.id)).state === "succeeded", "the outcome to be reported", 30_000);
      });
      const job = await app.client.get(h.id);
      assert.equal(job.result, "survived");
      assert.equal(job.attempts, 1);
    } finally {
      app.close();
      await s.close();
    }
  });
});
