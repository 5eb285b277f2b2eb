// SPDX-License-Identifier: Apache-2.0
// Keyed limits, debounce and expiry through the library, against a real
// server: concurrency and rate keys sent and read back, a held job's reason,
// the keys at their limit, key settings, a debounced submit, an expired
// job's wait, and the refusals naming their field.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { InvalidError, JobExpiredError, NotFoundError, Tenq } from "tenq";

import { Server } from "./harness";

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

describe("keyed limits", () => {
  it("a concurrency key holds the second job until the first ends", async () => {
    const app = server.app({ queue: "ck" });
    const a = await app.client.submit({ type: "K", args: { i: 1 }, concurrencyKeys: [{ key: "acct:1", limit: 1 }] });
    const b = await app.client.submit({ type: "K", args: { i: 2 }, concurrencyKeys: ["acct:1"] });
    const c = await app.client.submit({ type: "K", args: { i: 3 }, concurrencyKeys: ["acct:2"] });
    assert.deepEqual((await app.client.get(a.id)).concurrencyKeys, [{ key: "acct:1", limit: 1 }]);
    const got = (await app.client.lease({ queues: ["ck"], max: 10 })).jobs;
    assert.deepEqual(got.map((j) => j.id).sort((x, y) => x - y), [a.id, c.id]);
    const held = await app.client.get(b.id);
    assert.equal(held.waiting?.reason, "concurrency_key");
    assert.equal(held.waiting?.key, "acct:1");
    assert.equal(held.waiting?.heldBy, a.id);
    const page = await app.client.listKeys({ atLimit: true });
    assert.ok(page.keysAtLimit >= 1 && page.keys.some((k) => k.key === "acct:1" && k.atLimit));
    const one = (await app.client.listKeys({ key: "acct:1" })).keys;
    assert.deepEqual(one.map((k) => [k.key, k.active, k.held, k.limit, k.holders, k.jobs]), [["acct:1", 1, 1, 1, [a.id], [b.id]]]);
    const first = got.find((j) => j.id === a.id);
    assert.ok(first);
    await app.client.ack(first.id, first.token);
    assert.deepEqual((await app.client.lease({ queues: ["ck"], max: 10 })).jobs.map((j) => j.id), [b.id]);
    app.close();
  });

  it("key settings round trip; a prefix's limit holds its keys", async () => {
    const app = server.app({ queue: "ks" });
    const s = await app.client.setKeySetting({ tenant: "acme", key: "nodeacct:*", concurrency: 2, rate: 10 });
    assert.deepEqual([s.key, s.concurrency, s.rate, s.ratePeriodMs], ["nodeacct:*", 2, 10, 1000]);
    assert.ok((await app.client.keySettings("acme")).some((r) => r.key === "nodeacct:*"));
    for (let i = 0; i < 3; i++) await app.client.submit({ type: "K", args: { i }, concurrencyKeys: ["nodeacct:7"] });
    assert.equal((await app.client.lease({ queues: ["ks"], max: 10 })).jobs.length, 2);
    const [info] = (await app.client.listKeys({ key: "nodeacct:7" })).keys;
    assert.deepEqual([info?.limit, info?.setting, info?.atLimit], [2, "nodeacct:*", true]);
    assert.equal(info?.rate?.rate, 10);
    await app.client.deleteKeySetting("acme", "nodeacct:*");
    assert.ok(!(await app.client.keySettings("acme")).some((r) => r.key === "nodeacct:*"));
    await assert.rejects(app.client.deleteKeySetting("acme", "nodeacct:*"), NotFoundError);
    await assert.rejects(app.client.setKeySetting({ tenant: "acme", key: "x", concurrency: 0 }), (e: unknown) => e instanceof InvalidError && e.field === "concurrency");
    app.close();
  });

  it("a rate key's cost: used up at the server's start, a cost above the burst refused", async () => {
    const app = server.app({ queue: "rk" });
    const h = await app.client.submit({ type: "K", rateKeys: [{ key: "api", cost: 3, rate: 4, ratePeriodMs: 60_000, rateBurst: 4 }] });
    assert.deepEqual((await app.client.get(h.id)).rateKeys, [{ key: "api", cost: 3, rate: 4, ratePeriodMs: 60_000, rateBurst: 4 }]);
    assert.deepEqual((await app.client.lease({ queues: ["rk"], max: 1 })).jobs, []);
    const w = (await app.client.get(h.id)).waiting;
    assert.deepEqual([w?.reason, w?.key], ["rate_key", "api"]);
    await assert.rejects(
      app.client.submit({ type: "K", rateKeys: [{ key: "api", cost: 5, rate: 4 }] }),
      (e: unknown) => e instanceof InvalidError && e.field === "rate_keys[0].cost",
    );
    app.close();
  });

  it("bad keys and timings are refused naming the field", async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ concurrencyKeys: [{ key: "k", limit: 0 }] }, "concurrency_keys[0].limit"],
      [{ concurrencyKeys: ["x".repeat(257)] }, "concurrency_keys[0].key"],
      [{ concurrencyKeys: ["a", "b", "c", "d", "e"] }, "concurrency_keys"],
      [{ debounceMs: 100 }, "debounce_ms"],
      [{ expireAt: 1, startWithinMs: 5 }, "start_within_ms"],
    ];
    for (const [options, field] of cases)
      await assert.rejects(
        tenq.client.submit({ type: "K", queue: "bad", ...options }),
        (e: unknown) => e instanceof InvalidError && e.field === field,
        JSON.stringify(options),
      );
  });
});

describe("priority aging", () => {
  it("agingMs and agingCap go in camelCase; a waiting job rises", async () => {
    const app = server.app({ queue: "age" });
    const q = await app.client.setQueue("age", { agingMs: 100, agingCap: 5 });
    assert.deepEqual([q.agingMs, q.agingCap], [100, 5]);
    const low = await app.client.submit({ type: "A", priority: 0 });
    await new Promise((r) => setTimeout(r, 1000)); // low ranks 5 (the cap) by now
    const high = await app.client.submit({ type: "A", priority: 4 });
    assert.deepEqual((await app.client.lease({ queues: ["age"], max: 2 })).jobs.map((j) => j.id), [low.id, high.id]);
    await assert.rejects(app.client.setQueue("age", { agingCap: 40000 }), (e: unknown) => e instanceof InvalidError && e.field === "aging_cap");
    app.close();
  });
});

describe("debounce and expiry", () => {
  it("a debounced submit replaces the pending job of its key", async () => {
    const app = server.app({ queue: "deb" });
    const first = await app.client.submit({ type: "D", args: { v: 1 }, key: "doc:1", debounceMs: 60_000, debounceMaxMs: 120_000 });
    assert.ok(first.created && !first.debounced);
    const second = await app.client.submit({ type: "D", args: { v: 2 }, key: "doc:1", debounceMs: 60_000 });
    assert.ok(second.debounced && !second.created);
    assert.equal(second.id, first.id);
    const job = await app.client.get(first.id);
    assert.deepEqual([job.args, job.debounced, job.state], [{ v: 2 }, true, "scheduled"]);
    assert.ok((job.runAt ?? 0) > Date.now() + 50_000);
    assert.ok((job.debounceUntil ?? 0) >= (job.runAt ?? Infinity));
    app.close();
  });

  it("a job not started by its expiry ends expired: wait() throws JobExpiredError", async () => {
    const app = server.app({ queue: "exp" });
    const h = await app.enqueue("E", {}, { runAt: Date.now() + 60_000, startWithinMs: 200 });
    await assert.rejects(h.wait({ timeoutMs: 20_000 }), (e: unknown) => e instanceof JobExpiredError && e.job?.state === "expired");
    assert.equal((await app.client.getQueue("exp")).expiredTotal, 1);
    const later = new Date(Date.now() + 600_000);
    const [a] = await app.client.submitMany([{ type: "E", expireAt: later }]);
    assert.ok(a?.ok);
    assert.equal((await app.client.get(a.id)).expireAt, later.getTime());
    app.close();
  });
});
