// SPDX-License-Identifier: Apache-2.0
// The client against a real server: submit (every field), many, get, wait, cancel, list, errors.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
  Client,
  ConflictError,
  ConnectionError,
  InvalidError,
  JobCancelledError,
  JobFailedError,
  NotFoundError,
  RequestKeys,
  TenqError,
  TimeoutError,
  UnauthenticatedError,
  type Job,
} from "tenq";

import { Server, deadPort } from "./harness";

let server: Server;
let c: Client;

before(async () => {
  server = await Server.start();
  c = server.client({ tenant: "acme", queue: "q" });
});
after(async () => {
  c.close();
  await server.close();
});

describe("submit", () => {
  it("sends every field and gets the job back", async () => {
    const runAt = Date.now() + 3_600_000;
    const r = await c.submit({
      tenant: "acme",
      queue: "reports",
      type: "DataReport.execute",
      args: { report_id: 42, tags: ["a", "b"], nested: { x: null } },
      key: "report:42",
      uniqueKey: "u-42",
      idempotencyKey: "mine-1",
      priority: 7,
      runAt: new Date(runAt),
      maxAttempts: 3,
    });
    assert.equal(r.created, true);
    const job = await c.get(r.id);
    assert.equal(job.tenant, "acme");
    assert.equal(job.queue, "reports");
    assert.equal(job.type, "DataReport.execute");
    assert.deepEqual(job.args, { nested: { x: null }, report_id: 42, tags: ["a", "b"] });
    assert.equal(job.key, "report:42");
    assert.equal(job.uniqueKey, "u-42");
    assert.equal(job.idempotencyKey, "mine-1");
    assert.equal(job.priority, 7);
    assert.equal(job.maxAttempts, 3);
    assert.equal(job.state, "scheduled");
    assert.equal(job.runAt, runAt);
  });

  it("puts no idempotency_key on a job the caller gave none", async () => {
    const a = await c.submit({ queue: "nokey", type: "T" });
    const many = await c.submitMany([{ queue: "nokey", type: "T" }, { queue: "nokey", type: "T" }]);
    const ids = [a.id, ...many.map((m) => (m.ok ? m.id : 0))];
    for (const id of ids) {
      const raw = (await c.call("GET", `/v1/jobs/${id}`)) as Record<string, unknown>;
      assert.equal(raw["id"], id);
      assert.equal(raw["idempotency_key"] ?? null, null, `job ${id} has an idempotency_key`);
      assert.equal((await c.get(id)).idempotencyKey, null);
    }
  });

  it("a caller's own per-job idempotency key deduplicates across submits", async () => {
    const a = await c.submit({ queue: "ownkey", type: "T", idempotencyKey: "same" });
    const b = await c.submit({ queue: "ownkey", type: "T", idempotencyKey: "same" });
    const [m] = await c.submitMany([{ queue: "ownkey", type: "T", idempotencyKey: "same" }]);
    assert.equal(a.created, true);
    assert.equal(b.id, a.id);
    assert.equal(b.replayed, true);
    assert.equal(b.created, false);
    assert.ok(m?.ok && m.id === a.id && m.replayed);
    assert.deepEqual((await c.list({ queue: "ownkey" })).jobs.map((j) => j.id), [a.id]);
    assert.equal((await c.get(a.id)).idempotencyKey, "same");
  });

  it("the same request sent again under the same Idempotency-Key: the same ids, nothing made", async () => {
    const spec = { queue: "rkey", type: "T", args: { n: 1 } };
    const first = await c.submit(spec, { requestKey: "node-test-key-1" });
    const again = await c.submit(spec, { requestKey: "node-test-key-1" });
    assert.equal(first.replayed, false);
    assert.equal(again.id, first.id);
    assert.equal(again.replayed, true);
    const specs = [{ queue: "rkey", type: "M", args: 1 }, { queue: "rkey", type: "M", args: 2 }];
    const m1 = await c.submitMany(specs, { requestKey: "node-test-key-2" });
    const m2 = await c.submitMany(specs, { requestKey: "node-test-key-2" });
    const ids = (rs: typeof m1): number[] => rs.map((r) => (r.ok ? r.id : 0));
    assert.deepEqual(ids(m2), ids(m1));
    assert.ok(m1.every((r) => r.ok && !r.replayed) && m2.every((r) => r.ok && r.replayed));
    assert.equal((await c.list({ queue: "rkey" })).jobs.length, 3);
    // without a key of its own, each call is a new request: a new job
    const other = await c.submit(spec);
    assert.notEqual(other.id, first.id);
    assert.equal((await c.list({ queue: "rkey" })).jobs.length, 4);
  });

  it("the same Idempotency-Key with another body is a ConflictError naming the header", async () => {
    await c.submit({ queue: "rkc", type: "T", args: 1 }, { requestKey: "node-test-key-3" });
    await assert.rejects(c.submit({ queue: "rkc", type: "T", args: 2 }, { requestKey: "node-test-key-3" }), (e: unknown) => {
      assert.ok(e instanceof ConflictError, String(e));
      assert.equal(e.code, "conflict");
      assert.equal(e.status, 409);
      assert.equal(e.field, "Idempotency-Key");
      return true;
    });
    await assert.rejects(c.submit({ queue: "rkc", type: "T" }, { requestKey: "has space" }), (e: unknown) => {
      assert.ok(e instanceof InvalidError, String(e));
      assert.equal(e.field, "Idempotency-Key");
      return true;
    });
    assert.equal((await c.list({ queue: "rkc" })).jobs.length, 1);
  });

  it("request keys are tq1 + 27 hex digits, time-ordered, never the same twice", () => {
    const k = new RequestKeys();
    const keys = Array.from({ length: 1000 }, () => k.next());
    for (const key of keys) assert.match(key, /^tq1[0-9a-f]{27}$/);
    assert.equal(new Set(keys).size, keys.length);
    assert.deepEqual([...keys].sort(), keys);
    const ms = parseInt(keys[0]!.slice(3, 14), 16);
    assert.ok(Math.abs(ms - Date.now()) < 60_000, `the key's clock ${ms} is not now`);
    assert.equal(keys[0]!.slice(14, 22), keys[999]!.slice(14, 22)); // one random part per maker
    assert.notEqual(new RequestKeys().next().slice(14, 22), keys[0]!.slice(14, 22));
  });

  it("deduplicates on a unique key and on unique: true", async () => {
    const a = await c.submit({ type: "U", uniqueKey: "one" });
    const b = await c.submit({ type: "U", uniqueKey: "one" });
    assert.equal(b.id, a.id);
    assert.equal(b.duplicate, true);
    const x = await c.submit({ type: "U", args: { a: 1, b: 2 }, unique: true });
    const y = await c.submit({ type: "U", args: { b: 2, a: 1 }, unique: true });
    assert.equal(y.id, x.id);
    assert.equal(y.duplicate, true);
  });

  it("merges payloads on a merging queue (score)", async () => {
    await c.setQueue("merging", { merge: true });
    const a = await c.submit({ queue: "merging", type: "M", key: "k", args: 1, score: 5 });
    const b = await c.submit({ queue: "merging", type: "M", key: "k", args: 2, score: 1 });
    assert.equal(b.id, a.id);
    assert.equal(b.merged, true);
    const job = await c.get(a.id);
    assert.deepEqual(job.payloads?.map((p) => p.payload), [2, 1]);
  });

  it("refuses args that are not JSON before sending anything", async () => {
    const before = (await c.list({ queue: "nojson" })).jobs.length;
    for (const args of [{ when: new Date() }, { n: 1n }, { f: () => 1 }, [undefined], { x: NaN }, new Map()]) {
      await assert.rejects(c.submit({ queue: "nojson", type: "T", args }), (e: unknown) => {
        assert.ok(e instanceof InvalidError, String(e));
        assert.equal(e.code, "invalid");
        assert.equal(e.field, "args");
        return true;
      });
    }
    const cyclic: Record<string, unknown> = {};
    cyclic["self"] = cyclic;
    await assert.rejects(c.submit({ queue: "nojson", type: "T", args: cyclic }), InvalidError);
    assert.equal((await c.list({ queue: "nojson" })).jobs.length, before);
  });

  it("maps the server's refusals to typed errors with field and status", async () => {
    await assert.rejects(c.submit({ type: "has space" }), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.equal(e.status, 400);
      assert.equal(e.field, "type");
      return true;
    });
    await assert.rejects(c.get(987654), (e: unknown) => {
      assert.ok(e instanceof NotFoundError);
      assert.equal(e.status, 404);
      assert.equal(e.code, "not_found");
      return true;
    });
  });
});

describe("submitMany", () => {
  it("splits past 10,000 jobs and answers each at its index", async () => {
    const specs = Array.from({ length: 10_050 }, (_, i) => ({ queue: "many", type: "N", args: { i } }));
    specs[3] = { queue: "many", type: "bad type", args: { i: 3 } };
    const res = await c.submitMany(specs);
    assert.equal(res.length, 10_050);
    const bad = res[3]!;
    assert.equal(bad.ok, false);
    if (!bad.ok) {
      assert.ok(bad.error instanceof InvalidError);
      assert.equal(bad.error.field, "type");
    }
    const ok = res.filter((r) => r.ok);
    assert.equal(ok.length, 10_049);
    assert.equal(new Set(ok.map((r) => (r.ok ? r.id : 0))).size, 10_049);
    const last = res[10_049]!;
    assert.ok(last.ok);
    if (last.ok) assert.deepEqual((await c.get(last.id)).args, { i: 10_049 });
  });
});

describe("wait", () => {
  it("answers when the job finishes, and gives up after the caller's timeout", async () => {
    const r = await c.submit({ queue: "w", type: "T" });
    const t0 = Date.now();
    await assert.rejects(c.wait(r.id, { timeoutMs: 300 }), TimeoutError);
    assert.ok(Date.now() - t0 >= 290);
    const waiting = c.wait(r.id, { timeoutMs: 20_000 });
    const lease = await c.lease({ queues: ["w"], max: 1 });
    assert.equal(lease.jobs[0]?.id, r.id);
    await c.ack(r.id, lease.jobs[0]!.token, { result: { rows: 3 } });
    const job = await waiting;
    assert.equal(job.state, "succeeded");
    assert.deepEqual(job.result, { rows: 3 });
  });

  it("follows a merged job to the job that took its payloads", async () => {
    await c.setQueue("mf", { merge: true, backoff: "fixed", backoffBaseMs: 0 });
    const a = await c.submit({ queue: "mf", type: "M", key: "lane", args: "first" });
    const lease = await c.lease({ queues: ["mf"], max: 1 });
    const b = await c.submit({ queue: "mf", type: "M", key: "lane", args: "second" });
    assert.notEqual(b.id, a.id);
    await c.fail(a.id, lease.jobs[0]!.token, { error: "again", retryInMs: 0 });
    const merged = await c.get(b.id);
    assert.equal(merged.state, "merged");
    assert.equal(merged.mergedInto, a.id);
    const waiting = c.wait(b.id, { timeoutMs: 20_000 });
    const again = await c.lease({ queues: ["mf"], max: 1, waitMs: 5_000 });
    assert.equal(again.jobs[0]?.id, a.id);
    await c.ack(a.id, again.jobs[0]!.token, { result: "both" });
    const job: Job = await waiting;
    assert.equal(job.id, a.id);
    assert.equal(job.result, "both");
  });
});

describe("cancel", () => {
  it("cancels a waiting job at once, and refuses a finished one", async () => {
    const r = await c.submit({ queue: "cx", type: "T" });
    const res = await c.cancel(r.id);
    assert.equal(res.state, "cancelled");
    assert.equal(res.cancelRequested, false);
    await assert.rejects(c.cancel(r.id), ConflictError);
  });

  it("marks a leased job cancel_requested", async () => {
    const r = await c.submit({ queue: "cy", type: "T" });
    await c.lease({ queues: ["cy"], max: 1 });
    const res = await c.cancel(r.id);
    assert.equal(res.cancelRequested, true);
    assert.equal((await c.get(r.id)).cancelRequested, true);
  });
});

describe("list", () => {
  it("pages through jobs newest first", async () => {
    const ids: number[] = [];
    for (let i = 0; i < 7; i++) ids.push((await c.submit({ queue: "pages", type: "P" })).id);
    const first = await c.list({ queue: "pages", limit: 3 });
    assert.deepEqual(first.jobs.map((j) => j.id), ids.slice(4).reverse());
    assert.notEqual(first.next, null);
    const second = await c.list({ queue: "pages", limit: 3, afterId: first.next! });
    assert.deepEqual(second.jobs.map((j) => j.id), ids.slice(1, 4).reverse());
    const all: number[] = [];
    for await (const j of c.listAll({ queue: "pages", limit: 2 })) all.push(j.id);
    assert.deepEqual(all, [...ids].reverse());
    const cancelled = await c.list({ queue: "pages", state: "cancelled" });
    assert.equal(cancelled.jobs.length, 0);
  });
});

describe("handles and typed outcomes", () => {
  it("a handle's wait throws JobFailedError for a dead job and JobCancelledError for a cancelled one", async () => {
    const { Tenq } = await import("tenq");
    const tenq = new Tenq({ servers: server.url, tenant: "acme", queue: "h" });
    const h1 = await tenq.enqueue("T", { n: 1 });
    const h2 = await tenq.enqueue("T", { n: 2 });
    const l = await tenq.client.lease({ queues: ["h"], max: 1 });
    await tenq.client.fail(h1.id, l.jobs[0]!.token, { error: "broken", retry: false });
    await assert.rejects(h1.wait({ timeoutMs: 5_000 }), (e: unknown) => {
      assert.ok(e instanceof JobFailedError);
      assert.match(e.message, /broken/);
      assert.equal(e.job?.state, "dead");
      return true;
    });
    await h2.cancel();
    await assert.rejects(h2.wait({ timeoutMs: 5_000 }), JobCancelledError);
    tenq.close();
  });
});

describe("authentication", () => {
  it("a wrong token is unauthenticated", async () => {
    const s = await Server.start({ env: { TENQ_ADMIN_TOKEN: "s3cret-admin-token" } });
    try {
      const bad = s.client({ token: "wrong", tenant: "acme", queue: "q" });
      await assert.rejects(bad.submit({ type: "T" }), (e: unknown) => {
        assert.ok(e instanceof UnauthenticatedError);
        assert.equal(e.status, 401);
        return true;
      });
      bad.close();
      const good = s.client({ token: "s3cret-admin-token", tenant: "acme", queue: "q" });
      const r = await good.submit({ type: "T" });
      assert.equal((await good.get(r.id)).state, "ready");
      good.close();
    } finally {
      await s.close();
    }
  });
});

describe("options", () => {
  it("takes servers and token from TENQ_SERVER / TENQ_TOKEN", async () => {
    const port = await deadPort();
    const saved = { s: process.env["TENQ_SERVER"], t: process.env["TENQ_TOKEN"] };
    process.env["TENQ_SERVER"] = `http://127.0.0.1:${port}, ${server.url}`;
    process.env["TENQ_TOKEN"] = "tok";
    try {
      const e = new Client({ tenant: "acme", queue: "env" });
      assert.deepEqual(e.servers, [`http://127.0.0.1:${port}`, server.url]);
      assert.equal(e.options.token, "tok");
      const r = await e.submit({ type: "T" });
      assert.equal(e.currentServer, server.url);
      assert.ok(r.id > 0);
      e.close();
    } finally {
      if (saved.s === undefined) delete process.env["TENQ_SERVER"];
      else process.env["TENQ_SERVER"] = saved.s;
      if (saved.t === undefined) delete process.env["TENQ_TOKEN"];
      else process.env["TENQ_TOKEN"] = saved.t;
    }
  });

  it("refuses a bad server URL", () => {
    assert.throws(() => new Client({ servers: "ftp://x" }), TenqError);
  });

  it("a server that is down: the connection error after the failover budget", async () => {
    const port = await deadPort();
    const down = new Client({ servers: `http://127.0.0.1:${port}`, failoverBudgetMs: 600, tenant: "acme", queue: "q" });
    const t0 = Date.now();
    await assert.rejects(down.submit({ type: "T" }), ConnectionError);
    const took = Date.now() - t0;
    assert.ok(took >= 500 && took < 5_000, `took ${took} ms`);
    down.close();
  });
});
