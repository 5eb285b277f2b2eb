// SPDX-License-Identifier: Apache-2.0
// Pauses, server-side timeouts and rate limits through the library, against a
// real server: a paused queue (or tenant) leases nothing to the worker until
// resumed; a job past its timeoutMs is failed by the server and the worker
// stops its handler (LeaseLostError) and reports nothing; a rate set with
// setQueue spaces the worker's starts.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { InvalidError, LeaseLostError, Tenq } from "tenq";
import type { Counts } from "tenq";

import { Server, sleep, until, withWorker } from "./harness";

let server: Server;
let tenq: Tenq;

// Every key of Counts, both ways checked by the compiler (a key of Counts
// missing here, or one here that Counts lacks, does not build); the test
// below checks the server's counts against it.
const COUNT_KEYS: { [K in keyof Required<Counts>]: true } = {
  ready: true, scheduled: true, blocked: true, waiting: true, leased: true, running: true, dead: true,
  queued: true, queuedBytes: true, eligible: true, held: true, rateLimitedUntil: true, lagMs: true,
  submittedTotal: true, succeededTotal: true, failedTotal: true, deadTotal: true, cancelledTotal: true, expiredTotal: true,
  completedPerS: true, failedPerS: true,
};
// the wire's snake_case name of a count, in this library's camelCase
const camel = (k: string): string => k.replace(/_(.)/g, (_m, c: string) => c.toUpperCase());

before(async () => {
  server = await Server.start();
  tenq = server.app();
});
after(async () => {
  tenq.close();
  await server.close();
});


describe("queue controls", () => {
  it("Counts names every count the server sends (the totals of GET /v1/stats)", async () => {
    const app = server.app({ queue: "counted" });
    const parent = await app.client.submit({ type: "P" });
    await app.client.submit({ type: "C", dependsOn: [parent] });
    const stats = (await app.client.call("GET", "/v1/stats")) as { totals: Record<string, unknown> };
    for (const k of Object.keys(stats.totals)) assert.ok(camel(k) in COUNT_KEYS, `Counts lacks "${camel(k)}"`);
    const q = await app.client.getQueue("counted");
    assert.equal(q.waiting, 1);
    app.close();
  });

  it("settings go in camelCase and come back so; the wire's names still work, with a deprecation warning", async () => {
    const q = await tenq.client.setQueue("camel", { leaseMs: 45_000, maxAttempts: 7, tenantRate: 3, ratePeriodMs: 2000, dedupWindowMs: 1000 });
    assert.deepEqual(
      [q.leaseMs, q.maxAttempts, q.tenantRate, q.ratePeriodMs, q.dedupWindowMs, q.pausedTenants, q.submittedTotal],
      [45_000, 7, 3, 2000, 1000, [], 0],
    );
    assert.ok(!Object.keys(q).some((k) => k.includes("_")), Object.keys(q).join(" "));
    const t = await tenq.client.setTenant("camel-t", { slots: 4, rateBurst: 2, rate: 10 });
    assert.deepEqual([t.slots, t.rateBurst, t.rate, t.inUse], [4, 2, 10, 0]);
    const warnings: Error[] = [];
    const onWarning = (w: Error): void => void warnings.push(w);
    process.on("warning", onWarning);
    try {
      const old = await tenq.client.setQueue("camel", { lease_ms: 50_000 });
      assert.equal(old.leaseMs, 50_000);
      await new Promise((r) => setImmediate(r));
    } finally {
      process.off("warning", onWarning);
    }
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]!.name, "DeprecationWarning");
    assert.match(warnings[0]!.message, /"lease_ms" is spelt "leaseMs"/);
    // a setting nobody knows: the server names it, and nothing changed
    await assert.rejects(
      tenq.client.setQueue("camel", { leaseMs: 1000, leaseMsec: 1 }),
      (e: unknown) => e instanceof InvalidError && e.field === "leaseMsec",
    );
    assert.equal((await tenq.client.getQueue("camel")).leaseMs, 50_000);
  });

  it("a paused queue leases nothing to the worker until resumed", async () => {
    const app = server.app({ queue: "paused" });
    await app.client.setQueue("paused", {}); // a pause takes a queue that exists
    const info = await app.client.pauseQueue("paused");
    assert.equal(info.name, "paused");
    assert.equal(info.paused, true);
    assert.deepEqual(info.pausedTenants, []);
    app.handle("P", async (a) => a);
    const hs = await Promise.all([0, 1, 2].map((i) => app.enqueue("P", i)));
    await withWorker(app, { concurrency: 3 }, async (w) => {
      await sleep(1500);
      assert.equal(w.stats.leased, 0);
      const job = await app.client.get(hs[0]!.id);
      assert.equal(job.state, "ready");
      assert.equal(job.waiting?.reason, "queue_paused");
      assert.equal((await app.client.getQueue("paused")).held, 3);
      assert.equal((await app.client.resumeQueue("paused")).paused, false);
      for (const [i, h] of hs.entries()) assert.equal(await h.wait({ timeoutMs: 20_000 }), i);
      assert.equal(w.stats.leased, 3);
    });
    app.close();
  });

  it("a tenant paused in a queue waits while other tenants run", async () => {
    const app = server.app({ queue: "tpaused" });
    await app.client.setQueue("tpaused", {});
    const info = await app.client.pauseQueue("tpaused", { tenant: "acme" });
    assert.equal(info.paused, false);
    assert.deepEqual(info.pausedTenants, ["acme"]);
    app.handle("P", async (a) => a);
    const mine = await app.enqueue("P", "acme");
    const other = await app.enqueue("P", "other", { tenant: "other" });
    await withWorker(app, {}, async () => {
      assert.equal(await other.wait({ timeoutMs: 20_000 }), "other");
      await sleep(300);
      const job = await app.client.get(mine.id);
      assert.equal(job.state, "ready");
      assert.equal(job.waiting?.reason, "tenant_paused");
      assert.deepEqual((await app.client.resumeQueue("tpaused", { tenant: "acme" })).pausedTenants, []);
      assert.equal(await mine.wait({ timeoutMs: 20_000 }), "acme");
    });
    app.close();
  });

  it("a job past its timeoutMs is failed by the server; the worker stops its handler and reports nothing", async () => {
    await tenq.client.setQueue("tmo", { leaseMs: 1500, maxAttempts: 1 }); // heartbeats every 0.5 s
    const app = server.app({ queue: "tmo" });
    let reason: unknown;
    let seenTimeout: number | undefined;
    app.handle("Stuck", async (_a, ctx) => {
      seenTimeout = ctx.job.timeoutMs;
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      reason = ctx.signal.reason;
      throw ctx.signal.reason;
    });
    const h = await app.enqueue("Stuck", null, { timeoutMs: 700 });
    assert.equal((await app.client.get(h.id)).timeoutMs, 700);
    const t0 = Date.now();
    await withWorker(app, {}, async (w) => {
      await until(() => reason !== undefined, "the handler to be stopped", 10_000);
      const took = Date.now() - t0;
      assert.ok(took < 5_000, `stopped after ${took} ms`);
      await sleep(600); // a report, had one been sent, would be in by now
      assert.equal(w.stats.succeeded + w.stats.failed, 0);
      assert.equal(w.stats.dropped, 1);
    });
    assert.ok(reason instanceof LeaseLostError, String(reason));
    assert.equal(seenTimeout, 700);
    const job = await app.client.get(h.id);
    assert.equal(job.state, "dead");
    assert.match(job.error ?? "", /^timed out:/);
    app.close();
  });

  it("the queue's timeout_ms applies to jobs without their own; fake mode records timeoutMs", async () => {
    const info = await tenq.client.setQueue("qtmo", { leaseMs: 1500, timeoutMs: 900, maxAttempts: 1 });
    assert.equal(info.timeoutMs, 900);
    const app = server.app({ queue: "qtmo" });
    app.handle("Nap", async (_a, ctx) => {
      await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
      throw ctx.signal.reason;
    });
    const h = await app.enqueue("Nap");
    assert.equal((await app.client.get(h.id)).timeoutMs, undefined);
    await withWorker(app, {}, async (w) => {
      await until(async () => (await app.client.get(h.id)).state === "dead", "the job to time out");
      await until(() => w.stats.dropped === 1, "the lost lease");
    });
    assert.match((await app.client.get(h.id)).error ?? "", /^timed out:/);
    app.testing.fake();
    const fh = await app.enqueue("Nap", null, { timeoutMs: 1234 });
    assert.equal(app.testing.jobs[0]!.timeoutMs, 1234);
    assert.equal(app.testing.jobs[0]!.fields["timeout_ms"], 1234);
    assert.equal((await fh.job()).timeoutMs, 1234);
    app.testing.disable();
    app.close();
  });

  it("a queue rate set with setQueue: a burst of 2, then one start each 500 ms", async () => {
    const info = await tenq.client.setQueue("rated", { rate: 2, ratePeriodMs: 1000 });
    assert.equal(info.rate, 2);
    assert.equal(info.ratePeriodMs, 1000);
    assert.equal(info.rateBurst, null);
    const app = server.app({ queue: "rated" });
    const starts: number[] = [];
    app.handle("R", async () => {
      starts.push(performance.now());
    });
    const hs = await app.client.submitMany(Array.from({ length: 6 }, (_, i) => ({ type: "R", args: i })));
    await withWorker(app, { concurrency: 6 }, async (w) => {
      await until(() => starts.length >= 2, "the burst");
      const q = await app.client.getQueue("rated");
      assert.ok((q.held ?? 0) >= 1 && (q.rateLimitedUntil ?? 0) > 0, JSON.stringify(q));
      const last = hs[5]!;
      assert.ok(last.ok);
      const held = await app.client.get(last.id);
      assert.equal(held.waiting?.reason, "queue_rate");
      assert.ok((held.waiting?.until ?? 0) > 0);
      await until(() => w.stats.succeeded === 6, "the six jobs");
    });
    const rel = starts.sort((a, b) => a - b).map((t) => t - starts[0]!);
    assert.ok(rel[1]! < 300, String(rel));
    for (let k = 2; k < 6; k++) assert.ok(rel[k]! >= (k - 1) * 500 - 150, String(rel));
    assert.ok(rel[5]! < 4000, String(rel));
    app.close();
  });

  it("a tenant's rate set with setTenant holds its jobs apart", async () => {
    const t = await tenq.client.setTenant("rated-node", { rate: 1, ratePeriodMs: 800, rateBurst: 1 });
    assert.equal(t.rate, 1);
    assert.equal(t.rateBurst, 1);
    assert.equal((await tenq.client.getTenant("rated-node")).ratePeriodMs, 800);
    const app = server.app({ queue: "trated", tenant: "rated-node" });
    const starts: number[] = [];
    app.handle("R", async () => {
      starts.push(performance.now());
    });
    const hs = await Promise.all([0, 1, 2].map((i) => app.enqueue("R", i)));
    await withWorker(app, { concurrency: 3 }, async () => {
      await until(() => starts.length >= 1, "the first start");
      assert.equal((await app.client.get(hs[2]!.id)).waiting?.reason, "tenant_rate");
      for (const h of hs) await h.wait({ timeoutMs: 20_000 });
    });
    starts.sort((a, b) => a - b);
    assert.ok(starts[1]! - starts[0]! >= 700 && starts[2]! - starts[1]! >= 700, String(starts));
    assert.equal((await tenq.client.setTenant("rated-node", { rate: null })).rate, null);
    app.close();
  });
});
