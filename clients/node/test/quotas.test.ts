// SPDX-License-Identifier: Apache-2.0
// Quotas and backpressure against real servers (docs/SEMANTICS.md, "Quotas
// and backpressure"): a submit over a tenant's or a queue's maxQueued /
// maxQueuedBytes rejects with QuotaExceededError naming the limit and makes
// nothing; a server at its memory budget with OverloadedError; submits wait
// for room, sending the same request (the same Idempotency-Key) after the
// Retry-After, and make each job once; past backpressureBudgetMs they
// reject. (The transaction helpers' TQ429: tx.test.ts.)
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { Client, InvalidError, OverloadedError, QuotaExceededError, RateLimitedError, type BatchResult, type Job } from "tenq";

import { Server, sleep } from "./harness";
import { Proxy } from "./proxy";

let server: Server;
let n = 0;

before(async () => {
  server = await Server.start();
});
after(async () => {
  await server.close();
});

/** A queue and a tenant of the test's own, a client on them (the default budget), and a proxy that records keys. */
async function fresh(o: { budgetMs?: number } = {}): Promise<{ queue: string; tenant: string; admin: Client; c: Client; proxy: Proxy; close(): Promise<void> }> {
  const queue = `quota-${process.pid}-${++n}`;
  const tenant = `t-${queue}`;
  const admin = server.client({ tenant, queue });
  const proxy = new Proxy(() => server.port);
  await proxy.listen();
  const c = new Client({ servers: proxy.url, tenant, queue, ...(o.budgetMs !== undefined ? { backpressureBudgetMs: o.budgetMs } : {}) });
  return {
    queue,
    tenant,
    admin,
    c,
    proxy,
    async close() {
      c.close();
      admin.close();
      await proxy.close();
    },
  };
}

/** After `afterMs`, leases and acks `count` jobs of `queue`; their ids. */
async function drain(c: Client, queue: string, count: number, afterMs = 0): Promise<number[]> {
  await sleep(afterMs);
  const done: number[] = [];
  while (done.length < count) {
    const got = await c.lease({ queues: [queue], max: Math.min(1000, count - done.length), waitMs: 1000 });
    if (got.jobs.length) await c.outcomes(got.jobs.map((j) => ({ id: j.id, token: j.token, ok: true as const })));
    done.push(...got.jobs.map((j) => j.id));
  }
  return done;
}

async function jobsOf(c: Client, queue: string): Promise<Job[]> {
  return (await c.list({ queue, limit: 1000 })).jobs;
}

const made = (rs: BatchResult[]): number => rs.filter((r) => r.ok && r.created && !r.replayed).length;

describe("quotas", () => {
  it("a submit over a quota rejects with QuotaExceededError naming the limit, and makes nothing", async () => {
    const t = await fresh({ budgetMs: 0 });
    try {
      const set = await t.admin.setTenant(t.tenant, { maxQueued: 2 });
      assert.equal(set.maxQueued, 2);
      assert.equal(set.queued, 0);
      const t0 = performance.now();
      const err = await t.c.submitMany([0, 1, 2].map((i) => ({ type: "Q.t", args: { i } }))).then(
        () => undefined,
        (x: unknown) => x,
      );
      assert.ok(performance.now() - t0 < 1000); // a budget of 0: no wait
      assert.ok(err instanceof QuotaExceededError, String(err));
      assert.ok(err instanceof RateLimitedError);
      assert.equal(err.status, 429);
      assert.equal(err.code, "quota_exceeded");
      assert.equal(err.field, "max_queued");
      assert.equal(err.retryAfterMs, 1000);
      assert.match(err.message, new RegExp(`tenant ${t.tenant}`));
      let info = await t.admin.getTenant(t.tenant);
      assert.deepEqual([info.queued, info.submittedTotal], [0, 0]); // nothing of the batch
      await assert.rejects(t.c.createBatch([0, 1, 2].map((i) => ({ type: "Q.t", args: { i } }))), QuotaExceededError);
      assert.equal(made(await t.c.submitMany([0, 1].map((i) => ({ type: "Q.t", args: { i } })))), 2);
      await assert.rejects(t.c.submit({ type: "Q.t", args: { i: 2 } }), (x: unknown) => x instanceof QuotaExceededError && x.field === "max_queued");
      info = await t.admin.getTenant(t.tenant);
      assert.deepEqual([info.queued, info.submittedTotal], [2, 2]);

      // a queue's bytes of args
      const other = `${t.queue}-bytes`;
      const q = await t.admin.setQueue(other, { maxQueuedBytes: 100 });
      assert.deepEqual([q.maxQueuedBytes, q.queuedBytes], [100, 0]);
      await assert.rejects(
        t.c.submit({ type: "Q.t", queue: other, tenant: "t-other", args: { pad: "x".repeat(200) } }),
        (x: unknown) => x instanceof QuotaExceededError && x.field === "max_queued_bytes" && x.message.includes(`queue ${other}`),
      );
      assert.equal((await t.admin.getQueue(other)).queued, 0);
      assert.equal((await t.c.submit({ type: "Q.t", queue: other, tenant: "t-other", args: { pad: "y" } })).created, true);
      const after = await t.admin.getQueue(other);
      assert.deepEqual([after.queued, after.queuedBytes], [1, '{"pad":"y"}'.length]);
      // null clears a quota
      assert.equal((await t.admin.setTenant(t.tenant, { maxQueued: null })).maxQueued, null);
      assert.equal((await t.c.submit({ type: "Q.t", args: { i: 2 } })).created, true);
    } finally {
      await t.close();
    }
  });

  it("a bulk submit waits for room, under one request key, and makes each job once", async () => {
    const t = await fresh();
    try {
      assert.equal(t.c.options.backpressureBudgetMs, 60_000);
      await t.admin.setTenant(t.tenant, { maxQueued: 3 });
      assert.equal(made(await t.admin.submitMany([0, 1, 2].map((i) => ({ type: "Q.w", args: { first: i } })))), 3);
      const t0 = performance.now();
      const [out, freed] = await Promise.all([t.c.submitMany([0, 1, 2].map((i) => ({ type: "Q.w", args: { i } }))), drain(t.admin, t.queue, 3, 1000)]);
      const took = performance.now() - t0;
      assert.equal(freed.length, 3);
      assert.equal(made(out), 3);
      assert.ok(took >= 900, `took ${took} ms`); // it waited for the room made after 1 s
      // refused at least once, then sent again: the same request, the same key
      const keys = t.proxy.requestKeys;
      assert.ok(keys.length >= 2, String(keys));
      assert.equal(new Set(keys).size, 1);
      const args = (await jobsOf(t.admin, t.queue)).map((j) => (j.args as { i?: number }).i ?? -1).sort();
      assert.deepEqual(args, [-1, -1, -1, 0, 1, 2]); // each once
      const info = await t.admin.getTenant(t.tenant);
      assert.deepEqual([info.queued, info.submittedTotal], [3, 6]);
    } finally {
      await t.close();
    }
  });

  it("a batch, jobs added to it and a single submit wait too", async () => {
    const t = await fresh({ budgetMs: 30_000 });
    try {
      await t.admin.setQueue(t.queue, { maxQueued: 2 });
      await t.admin.submit({ type: "Q.b", args: { first: 0 } });
      const [batch] = await Promise.all([t.c.createBatch([0, 1].map((i) => ({ type: "Q.b", args: { i } }))), drain(t.admin, t.queue, 1, 1000)]);
      assert.deepEqual(batch.jobs.map((j) => j.created), [true, true]);
      // the batch's jobs hold the room: jobs added to it wait (one of them
      // done, the batch stays open)
      const [added] = await Promise.all([t.c.addToBatch(batch.id, [{ type: "Q.b", args: { i: 2 } }]), drain(t.admin, t.queue, 1, 1000)]);
      assert.equal(added[0]!.created, true);
      const [one] = await Promise.all([t.c.submit({ type: "Q.b", args: { i: 3 } }), drain(t.admin, t.queue, 1, 1000)]);
      assert.equal(one.created, true);
      // three calls, each refused then let in, each under a key of its own
      const keys = t.proxy.requestKeys;
      assert.ok(keys.length >= 6, String(keys));
      assert.equal(new Set(keys).size, 3);
      assert.deepEqual([...keys].sort(), keys);
      const args = (await jobsOf(t.admin, t.queue)).map((j) => (j.args as { i?: number }).i ?? -1).sort();
      assert.deepEqual(args, [-1, 0, 1, 2, 3]);
    } finally {
      await t.close();
    }
  });

  it("past backpressureBudgetMs the refusal is thrown and nothing was made", async () => {
    const t = await fresh({ budgetMs: 2_500 });
    try {
      await t.admin.setTenant(t.tenant, { maxQueuedBytes: 20 });
      await t.admin.submit({ type: "Q.p", args: { pad: "z" } });
      const t0 = performance.now();
      await assert.rejects(
        t.c.submitMany([0, 1].map(() => ({ type: "Q.p", args: { pad: "zz" } }))),
        (x: unknown) => x instanceof QuotaExceededError && x.field === "max_queued_bytes" && x.retryAfterMs === 1000,
      );
      const took = performance.now() - t0;
      // tried at once, after 1 s, after 2 s and at 2.5 s: then thrown
      assert.ok(took >= 2400 && took < 15_000, `took ${took} ms`);
      const keys = t.proxy.requestKeys;
      assert.ok(keys.length >= 3, String(keys));
      assert.equal(new Set(keys).size, 1);
      const info = await t.admin.getTenant(t.tenant);
      assert.deepEqual([info.queued, info.submittedTotal], [1, 1]);
    } finally {
      await t.close();
    }
  });

  it("a bad budget is refused", () => {
    for (const bad of [-1, Number.NaN, "60" as unknown as number])
      assert.throws(() => new Client({ servers: server.url, backpressureBudgetMs: bad }), (x: unknown) => x instanceof InvalidError && x.field === "backpressureBudgetMs");
  });
});

describe("a server at its memory budget", () => {
  it("refuses submits with OverloadedError, which a bulk submit waits out", async () => {
    const srv = await Server.start({ args: ["--memory-budget", "4MiB"] });
    const fill = srv.client({ tenant: "flood", queue: "q-flood", backpressureBudgetMs: 0 });
    const c = srv.client({ tenant: "flood", queue: "q-flood" });
    try {
      let count = 0;
      let err: unknown;
      while (count < 200_000) {
        try {
          await fill.submitMany(Array.from({ length: 1000 }, (_, i) => ({ type: "O.f", args: { n: count + i } })));
        } catch (x) {
          err = x;
          break;
        }
        count += 1000;
      }
      assert.ok(err instanceof OverloadedError, String(err));
      assert.ok(err instanceof RateLimitedError);
      assert.equal(err.status, 429);
      assert.equal(err.code, "overloaded");
      assert.equal(err.retryAfterMs, 1000);
      assert.match(err.message, /memory budget/);
      assert.ok(count >= 1000 && count < 200_000, String(count));
      assert.equal((await fill.getTenant("flood")).queued, count); // nothing of the refused batch

      const t0 = performance.now();
      let settled = false;
      const waiting = c.submitMany(Array.from({ length: 1000 }, (_, i) => ({ type: "O.w", args: { w: i } }))).finally(() => (settled = true));
      await sleep(1000);
      assert.equal(settled, false); // still refused: waiting
      await drain(fill, "q-flood", count);
      const out = await waiting;
      assert.equal(made(out), 1000);
      assert.ok(performance.now() - t0 >= 1000);
      const info = await fill.getTenant("flood");
      assert.deepEqual([info.queued, info.submittedTotal], [1000, count + 1000]);
    } finally {
      fill.close();
      c.close();
      await srv.close();
    }
  });
});
