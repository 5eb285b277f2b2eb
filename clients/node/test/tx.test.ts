// SPDX-License-Identifier: Apache-2.0
// Jobs submitted and completed in the application's own PostgreSQL
// transaction (submitTx, submitManyTx, completeTx, failTx), against a real
// server on a real PostgreSQL (TENQ_TEST_PG_URL: run-tests.sh runs the suite
// under tests/with-pg.sh), a fresh database per test, with node-postgres.
// Without PostgreSQL or the pg package these tests are skipped, except
// when CI is set: then they fail.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, it } from "node:test";
import { promisify } from "node:util";

import type * as Pg from "pg";

import {
  ConflictError,
  InvalidError,
  LeaseLostError,
  NotFoundError,
  QuotaExceededError,
  RateLimitedError,
  Tenq,
  TimeoutError,
  completeTx,
  failTx,
  sendEventTx,
  submitManyTx,
  submitTx,
  type OutcomeResult,
  type Queryable,
} from "tenq";

import { Server, until, withWorker } from "./harness";

const pgUrl = process.env["TENQ_TEST_PG_URL"];
let pg: typeof Pg | undefined;
let pgMissing = "";
try {
  pg = require("pg") as typeof Pg;
} catch (e) {
  pgMissing = String(e);
}
const need = pgUrl && pg ? false : process.env["CI"] ? false : pgUrl ? `needs the pg package (npm ci): ${pgMissing}` : "needs TENQ_TEST_PG_URL (run under tests/with-pg.sh)";

// the helpers take node-postgres's connections as they are (checked by the compiler)
const _typesFit: Queryable[] = [undefined as unknown as Pg.Client, undefined as unknown as Pg.PoolClient, undefined as unknown as Pg.Pool];
void _typesFit;

let dbs = 0;

interface Env {
  server: Server;
  /** The database's URL (the server's store, and the application's database). */
  url: string;
  /** A connection of the application. */
  db: Pg.Client;
  app: Tenq;
  close(): Promise<void>;
}

/** A fresh database, a server on it (which installs the tenq schema), and a connection to it. */
async function setup(queue = "tx"): Promise<Env> {
  if (!pgUrl) throw new Error("TENQ_TEST_PG_URL is not set: these tests need PostgreSQL (tests/with-pg.sh)");
  if (!pg) throw new Error(`the pg package is missing (npm ci in clients/node): ${pgMissing}`);
  const name = `node_tx_${process.pid}_${++dbs}`;
  const admin = new pg.Client({ connectionString: pgUrl });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const u = new URL(pgUrl);
  u.pathname = `/${name}`;
  const url = u.toString();
  const server = await Server.start({ store: url });
  const app = server.app({ queue });
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  await until(async () => (await db.query("SELECT to_regproc('tenq.submit_many') IS NOT NULL AS ok")).rows[0].ok === true, "the tenq schema");
  await until(async () => (await app.client.health().catch(() => ({ role: "" }))).role === "leader", "the server to lead");
  await db.query("CREATE TABLE orders (id serial PRIMARY KEY, note text, job bigint)");
  return {
    server,
    url,
    db,
    app,
    async close() {
      app.close();
      await db.end();
      await server.close();
    },
  };
}

/** Runs `body` in a transaction on `db`: committed when it resolves, rolled back when it throws. */
async function inTx<T>(db: Pg.ClientBase, body: () => Promise<T>): Promise<T> {
  await db.query("BEGIN");
  try {
    const r = await body();
    await db.query("COMMIT");
    return r;
  } catch (e) {
    await db.query("ROLLBACK");
    throw e;
  }
}

async function count(db: Pg.ClientBase, sql: string, values: unknown[] = []): Promise<number> {
  return Number((await db.query(`SELECT count(*)::int AS n FROM (${sql}) x`, values)).rows[0].n);
}

const TP = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("in the application's transaction", () => {
  it("a committed submit is leased, with the id the transaction got", { skip: need }, async () => {
    const e = await setup();
    try {
      const [id, id2] = await inTx(e.db, async () => {
        await e.db.query("INSERT INTO orders (note) VALUES ('order 7')");
        const a = await submitTx(e.db, { tenant: "acme", queue: "tx", type: "Mail.send", args: { order: 7 } });
        const b = await e.app.client.submitTx(e.db, { type: "Mail.copy", priority: -1 }); // the client's tenant and queue
        return [a, b];
      });
      assert.equal(typeof id, "number");
      assert.equal(id % 2, 1, `${id}: ids made in transactions are odd`);
      assert.ok(id2 > id);
      // right after the commit (before the leader has taken it in), a wait finds it
      await assert.rejects(e.app.client.wait(id, { timeoutMs: 300 }), TimeoutError);
      const got = await e.app.client.lease({ queues: ["tx"], max: 10, waitMs: 5000 });
      const more = got.jobs.length < 2 ? await e.app.client.lease({ queues: ["tx"], max: 10, waitMs: 5000 }) : { jobs: [] };
      const jobs = [...got.jobs, ...more.jobs];
      assert.deepEqual(
        jobs.map((j) => [j.id, j.tenant, j.queue, j.type]),
        [
          [id, "acme", "tx", "Mail.send"],
          [id2, "acme", "tx", "Mail.copy"],
        ],
      );
      assert.deepEqual(jobs[0]!.args, { order: 7 });
      assert.equal(await count(e.db, "SELECT 1 FROM orders"), 1);
    } finally {
      await e.close();
    }
  });

  it("a rolled-back submit never appears", { skip: need }, async () => {
    const e = await setup();
    try {
      let id = 0;
      await assert.rejects(
        inTx(e.db, async () => {
          await e.db.query("INSERT INTO orders (note) VALUES ('gone')");
          id = await e.app.client.submitTx(e.db, { type: "Mail.send" });
          throw new Error("the application changed its mind");
        }),
        /changed its mind/,
      );
      assert.ok(id > 0);
      assert.deepEqual((await e.app.client.lease({ queues: ["tx"], max: 10, waitMs: 700 })).jobs, []);
      await assert.rejects(e.app.client.get(id), NotFoundError);
      await assert.rejects(e.app.client.wait(id, { timeoutMs: 10_000 }), NotFoundError); // after 2 s
      assert.equal(await count(e.db, "SELECT 1 FROM tenq.inbox"), 0);
      assert.equal(await count(e.db, "SELECT 1 FROM orders"), 0);
    } finally {
      await e.close();
    }
  });

  it("submitManyTx gives the ids in order, and every field arrives", { skip: need }, async () => {
    const e = await setup("txm");
    try {
      const runAt = new Date("2030-01-01T00:00:00Z");
      const ids = await inTx(e.db, () =>
        e.app.client.submitManyTx(e.db, [
          { type: "A", args: { n: 1 }, priority: 5 },
          { type: "B", key: "lane-1", traceparent: TP, maxAttempts: 3, args: [1, "two"] },
          { type: "C", runAt, score: 2.5 },
          { type: "D", uniqueKey: "u-1", idempotencyKey: "i-1" },
          { type: "E", queue: "txm-other", tenant: "globex" },
        ]),
      );
      assert.equal(ids.length, 5);
      for (const id of ids) assert.ok(Number.isSafeInteger(id) && id % 2 === 1, String(id));
      assert.deepEqual(ids, [...ids].sort((x, y) => x - y));
      assert.deepEqual(await submitManyTx(e.db, []), []);
      const c = e.app.client;
      await until(async () => (await c.get(ids[4]!).then(() => true, () => false)), "the jobs to be taken in");
      const [a, b, cc, d, ee] = await Promise.all(ids.map((id) => c.get(id)));
      assert.deepEqual([a!.type, a!.args, a!.priority, a!.queue, a!.tenant], ["A", { n: 1 }, 5, "txm", "acme"]);
      assert.deepEqual([b!.key, b!.maxAttempts, b!.traceparent, b!.args], ["lane-1", 3, TP, [1, "two"]]);
      assert.deepEqual([cc!.state, cc!.runAt], ["scheduled", runAt.getTime()]);
      assert.deepEqual([d!.uniqueKey, d!.idempotencyKey], ["u-1", "i-1"]);
      assert.deepEqual([ee!.tenant, ee!.queue, ee!.type], ["globex", "txm-other", "E"]);
      // the standalone helper takes the defaults as an argument
      const [f] = await submitManyTx(e.db, [{ type: "F" }], { tenant: "acme", queue: "txm" });
      await until(async () => (await c.get(f!).then(() => true, () => false)), "F to be taken in");
      assert.equal((await c.get(f!)).type, "F");
    } finally {
      await e.close();
    }
  });

  it("completeTx in a handler's transaction: succeeded with the app's row, never delivered again, the worker's ack harmless", { skip: need }, async () => {
    const e = await setup("xo");
    const pool = new pg!.Pool({ connectionString: e.url, max: 2 });
    try {
      await e.app.client.setQueue("xo", { delivery: "exactly-once" });
      const h = await e.app.enqueue("Order.ship", { order: 7 });
      let runs = 0;
      const seen: Array<[number, number]> = [];
      e.app.handle("Order.ship", async (args, ctx) => {
        runs++;
        seen.push([ctx.id, ctx.token]);
        const conn = await pool.connect();
        try {
          await inTx(conn, async () => {
            await conn.query("INSERT INTO orders (note, job) VALUES ($1, $2)", [JSON.stringify(args), ctx.id]);
            await completeTx(conn, ctx, { shipped: true });
          });
        } finally {
          conn.release();
        }
        // returns nothing: the worker's ack carries the transaction's result
      });
      const reported: OutcomeResult[] = [];
      const w = e.app.worker({ logger: null, handleSignals: false, onReported: (r) => reported.push(...r) });
      const running = w.run();
      assert.deepEqual(await h.wait({ timeoutMs: 20_000 }), { shipped: true });
      await until(() => reported.length === 1, "the worker's ack to be answered");
      await w.stop();
      const stats = await running;
      assert.deepEqual(reported.map((r) => [r.id, r.ok]), [[h.id, true]]);
      assert.equal(stats.succeeded, 1);
      assert.equal(stats.dropped, 0);
      assert.equal(runs, 1);
      const job = await e.app.client.get(h.id);
      assert.deepEqual([job.state, job.result, job.attempts], ["succeeded", { shipped: true }, 1]);
      assert.equal(await count(e.db, "SELECT 1 FROM orders WHERE job = $1", [h.id]), 1);
      assert.deepEqual((await e.app.client.lease({ queues: ["xo"], max: 10, waitMs: 500 })).jobs, []);
      // completing the same lease again raises
      const [id, token] = seen[0]!;
      await assert.rejects(completeTx(e.db, { id, token }), ConflictError);
    } finally {
      await pool.end();
      await e.close();
    }
  });

  it("a stale token rejects (ConflictError) and the app's writes roll back", { skip: need }, async () => {
    const e = await setup("xo");
    try {
      await e.app.client.setQueue("xo", { delivery: "exactly-once" });
      await e.app.enqueue("T");
      const [j] = (await e.app.client.lease({ queues: ["xo"], max: 1, waitMs: 5000 })).jobs;
      assert.ok(j);
      const err = await inTx(e.db, async () => {
        await e.db.query("INSERT INTO orders (note, job) VALUES ('x', $1)", [j.id]);
        await completeTx(e.db, { id: j.id, token: j.token - 1 }, { no: 1 });
      }).then(
        () => undefined,
        (x: unknown) => x,
      );
      assert.ok(err instanceof ConflictError, String(err));
      assert.equal(err.field, "token");
      assert.match(err.message, /is not leased under token/);
      assert.equal((err.cause as { code?: string }).code, "TQ002");
      assert.equal(await count(e.db, "SELECT 1 FROM orders"), 0);
      assert.equal((await e.app.client.get(j.id)).state, "leased");
      // the holder of the lease completes it
      await inTx(e.db, () => completeTx(e.db, j));
      await until(async () => (await e.app.client.get(j.id)).state === "succeeded", "the job to succeed");

      // only an exactly-once queue's jobs can be completed in a transaction
      await e.app.enqueue("T", {}, { queue: "plain" });
      const [p] = (await e.app.client.lease({ queues: ["plain"], max: 1, waitMs: 5000 })).jobs;
      assert.ok(p);
      await until(async () => (await count(e.db, "SELECT 1 FROM tenq.jobs WHERE id = $1 AND state = 'leased'", [p.id])) === 1, "the lease stored");
      await assert.rejects(completeTx(e.db, p), (x: unknown) => x instanceof ConflictError && /exactly-once/.test(x.message));
    } finally {
      await e.close();
    }
  });

  it("failTx retries the job, and the worker's report after it is harmless", { skip: need }, async () => {
    const e = await setup("xo");
    try {
      await e.app.client.setQueue("xo", { delivery: "exactly-once" });
      const h = await e.app.enqueue("Order.ship", { order: 8 });
      const attempts: number[] = [];
      e.app.handle("Order.ship", async (_args, ctx) => {
        attempts.push(ctx.attempt);
        await inTx(e.db, async () => {
          if (ctx.attempt === 1) {
            await e.db.query("INSERT INTO orders (note, job) VALUES ('no stock', $1)", [ctx.id]);
            await failTx(e.db, ctx, "no stock", { retryInMs: 0 });
          } else {
            await e.db.query("INSERT INTO orders (note, job) VALUES ('shipped', $1)", [ctx.id]);
            await completeTx(e.db, { id: ctx.id, token: ctx.token }, { try: ctx.attempt });
          }
        });
        return "ignored: the transaction decided";
      });
      const reported: OutcomeResult[] = [];
      const w = e.app.worker({ logger: null, handleSignals: false, onReported: (r) => reported.push(...r) });
      const running = w.run();
      assert.deepEqual(await h.wait({ timeoutMs: 20_000 }), { try: 2 });
      await until(() => reported.length === 2, "both reports answered");
      await w.stop();
      const stats = await running;
      assert.deepEqual(attempts, [1, 2]);
      assert.deepEqual(reported.map((r) => r.ok), [true, true]);
      assert.equal(stats.dropped, 0);
      assert.equal(stats.failed, 1);
      assert.equal(stats.succeeded, 1);
      const job = await e.app.client.get(h.id);
      assert.deepEqual([job.state, job.attempts, job.error], ["succeeded", 2, "no stock"]);
      assert.deepEqual((await e.db.query("SELECT note FROM orders ORDER BY id")).rows.map((r: { note: string }) => r.note), ["no stock", "shipped"]);

      // outside a worker: a failure in a transaction that rolls back changes nothing
      await e.app.enqueue("T");
      const [j] = (await e.app.client.lease({ queues: ["xo"], max: 1, waitMs: 5000 })).jobs;
      assert.ok(j);
      await assert.rejects(
        inTx(e.db, async () => {
          await failTx(e.db, j, "no");
          throw new Error("rolled back");
        }),
        /rolled back/,
      );
      await new Promise((r) => setTimeout(r, 300));
      assert.equal((await e.app.client.get(j.id)).state, "leased");
      await failTx(e.db, j, "out of stock"); // autocommit: its own transaction
      await until(async () => (await e.app.client.get(j.id)).attempts === 1 && (await e.app.client.get(j.id)).state !== "leased", "the retry");
      assert.equal((await e.app.client.get(j.id)).error, "out of stock");
    } finally {
      await e.close();
    }
  });

  it("a job's own timeoutMs goes through the transaction and the server times the attempt out", { skip: need }, async () => {
    const e = await setup("txtmo");
    try {
      await e.app.client.setQueue("txtmo", { leaseMs: 1500 }); // heartbeats every 0.5 s
      let reason: unknown;
      e.app.handle("Stuck", async (_a, ctx) => {
        await new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve()));
        reason = ctx.signal.reason;
        throw ctx.signal.reason;
      });
      const [id, many] = await inTx(e.db, async () => [
        await submitTx(e.db, { tenant: "acme", queue: "txtmo", type: "Stuck", maxAttempts: 1, timeoutMs: 700 }),
        await submitManyTx(e.db, [{ type: "Later", timeoutMs: 900 }], { tenant: "acme", queue: "txtmo" }),
      ] as const);
      await until(async () => (await e.app.client.get(id).catch(() => null))?.timeoutMs === 700, "the job taken in");
      assert.equal((await e.app.client.get(many[0]!)).timeoutMs, 900);
      await withWorker(e.app, { types: ["Stuck"] }, async () => {
        await until(async () => (await e.app.client.get(id)).state === "dead", "the job to time out", 15_000);
        await until(() => reason !== undefined, "the handler to be stopped", 10_000);
      });
      assert.ok(reason instanceof LeaseLostError, String(reason));
      const att = await e.app.client.attempts(id);
      assert.deepEqual(att.map((a) => a.outcome), ["timed_out"]);
    } finally {
      await e.close();
    }
  });

  it("keys, debounce and expiry go through the transaction; the server holds the keyed jobs to their limit", { skip: need }, async () => {
    const e = await setup("txkeys");
    try {
      const later = new Date(Date.now() + 3_600_000);
      const [a, many] = await inTx(e.db, async () => [
        await submitTx(e.db, { tenant: "acme", queue: "txkeys", type: "K", concurrencyKeys: [{ key: "acct:1", limit: 1 }], rateKeys: ["r:1"], expireAt: later }),
        await submitManyTx(
          e.db,
          [
            { type: "K", concurrencyKeys: ["acct:1"], startWithinMs: 3_600_000 },
            { type: "D", key: "doc", debounceMs: 60_000, debounceMaxMs: 120_000 },
          ],
          { tenant: "acme", queue: "txkeys" },
        ),
      ] as const);
      const [b, c] = many;
      await until(async () => (await e.app.client.get(c!).catch(() => null)) !== null, "the jobs taken in");
      const ja = await e.app.client.get(a);
      assert.deepEqual([ja.concurrencyKeys, ja.rateKeys, ja.expireAt], [[{ key: "acct:1", limit: 1 }], [{ key: "r:1", cost: 1 }], later.getTime()]);
      assert.ok((await e.app.client.get(b!)).expireAt !== undefined);
      const jc = await e.app.client.get(c!);
      assert.deepEqual([jc.state, jc.debounced], ["scheduled", true]);
      const got = await e.app.client.lease({ queues: ["txkeys"], max: 10 });
      assert.deepEqual(got.jobs.map((j) => j.id), [a]); // b waits for acct:1, c for its quiet period
      assert.equal((await e.app.client.get(b!)).waiting?.reason, "concurrency_key");
      await assert.rejects(
        inTx(e.db, () => submitTx(e.db, { tenant: "acme", queue: "txkeys", type: "K", concurrencyKeys: [{ key: "k", limit: 0 }] })),
        (x: unknown) => x instanceof InvalidError && /concurrency_keys\[0\]\.limit must be/.test(x.message),
      );
      await assert.rejects(
        inTx(e.db, () => submitTx(e.db, { tenant: "acme", queue: "txkeys", type: "K", debounceMs: 10 })),
        (x: unknown) => x instanceof InvalidError && /debounce_ms needs a key/.test(x.message),
      );
    } finally {
      await e.close();
    }
  });

  it("refuses bad arguments: before sending, or as the server's functions raise", { skip: need }, async () => {
    const e = await setup();
    try {
      const sent: string[] = [];
      const spy: Queryable = { query: (text: string, values?: unknown[]) => (sent.push(text), e.db.query(text, values)) };
      await assert.rejects(submitTx(spy, { queue: "q", type: "T" }), (x: unknown) => x instanceof InvalidError && x.field === "tenant");
      await assert.rejects(submitTx(spy, { tenant: "acme", type: "T" }), (x: unknown) => x instanceof InvalidError && x.field === "queue");
      await assert.rejects(submitTx(spy, { tenant: "acme", queue: "q", type: "T", args: new Date() }), InvalidError);
      await assert.rejects(failTx(spy, { id: 1, token: 1 }, "x", { retryInMs: -1 }), InvalidError);
      await assert.rejects(completeTx(spy, { id: 0, token: 1 }), InvalidError);
      assert.deepEqual(sent, []);
      // a job's own timeout below a third of the queue's lease (300000 ms): refused by the database, naming the field
      const tmo = (x: unknown): boolean => x instanceof InvalidError && x.field === "timeout_ms" && /timeout_ms must be/.test(x.message);
      await assert.rejects(submitTx(e.db, { tenant: "acme", queue: "q", type: "T", timeoutMs: 60_000 }), tmo);
      await assert.rejects(submitManyTx(e.db, [{ type: "T", timeoutMs: 60_000 }], { tenant: "acme", queue: "q" }), tmo);
      // the server's checks, in the transaction: InvalidError with the driver's error as its cause
      const err = await inTx(e.db, () => submitTx(e.db, { tenant: "bad tenant", queue: "q", type: "T" })).then(
        () => undefined,
        (x: unknown) => x,
      );
      assert.ok(err instanceof InvalidError, String(err));
      assert.match(err.message, /^tenq\.submit: .*tenant/);
      assert.equal((err.cause as { code?: string }).code, "22023");
      await assert.rejects(submitManyTx(e.db, [{ type: "T", priority: 40000 }], { tenant: "acme", queue: "q" }), /tenq\.submit_many: job 0: .*priority/);
      await assert.rejects(completeTx(e.db, { id: 999999, token: 1 }), (x: unknown) => x instanceof ConflictError && /no job/.test(x.message));
      assert.equal(await count(e.db, "SELECT 1 FROM tenq.inbox"), 0);
    } finally {
      await e.close();
    }
  });

  it("a submit over a quota rejects with QuotaExceededError naming the limit, and the transaction rolls back", { skip: need }, async () => {
    const e = await setup("txq");
    try {
      const c = e.app.client;
      assert.equal((await c.setTenant("acme", { maxQueued: 2 })).maxQueued, 2);
      assert.equal((await c.setQueue("txq", { maxQueuedBytes: 40 })).maxQueuedBytes, 40);
      const refused = (field: string, what: RegExp) => (x: unknown): boolean => {
        assert.ok(x instanceof QuotaExceededError, String(x));
        assert.ok(x instanceof RateLimitedError);
        assert.equal(x.code, "quota_exceeded");
        assert.equal(x.field, field);
        assert.match(x.message, what);
        assert.equal((x.cause as { code?: string }).code, "TQ429"); // the driver's error
        return true;
      };
      await assert.rejects(
        inTx(e.db, async () => {
          await e.db.query("INSERT INTO orders (note) VALUES ('over')");
          return submitManyTx(e.db, [0, 1, 2].map((i) => ({ type: "T", args: { i } })), { tenant: "acme", queue: "txq" });
        }),
        refused("max_queued", /^tenq\.submit: quota_exceeded: tenant acme /),
      );
      await assert.rejects(
        inTx(e.db, () => c.submitTx(e.db, { type: "T", args: { pad: "x".repeat(40) } })),
        refused("max_queued_bytes", /queue txq .*max_queued_bytes 40/),
      );
      assert.equal(await count(e.db, "SELECT 1 FROM orders"), 0);
      assert.equal(await count(e.db, "SELECT 1 FROM tenq.inbox"), 0);
      // within the quotas: made
      const ids = await inTx(e.db, () => c.submitManyTx(e.db, [{ type: "T", args: { i: 0 } }, { type: "T", args: { i: 1 } }]));
      for (const [i, id] of ids.entries()) {
        await until(async () => (await c.get(id).catch(() => undefined)) !== undefined, "the job taken in");
        assert.deepEqual((await c.get(id)).args, { i });
      }
      const q = await c.getQueue("txq");
      assert.equal(q.submittedTotal, 2);
      assert.equal(q.queued, 2);
    } finally {
      await e.close();
    }
  });

  it("sendEventTx: a committed event wakes the waiting job with its payload, a rolled-back one nothing", { skip: need }, async () => {
    const e = await setup("txev");
    try {
      e.app.handle("Order.wait", async (_args, ctx) => ctx.waitForEvent(`paid-${ctx.id}`));
      const h = await e.app.enqueue("Order.wait");
      await withWorker(e.app, {}, async () => {
        await until(async () => (await e.app.client.get(h.id)).waiting?.reason === "event", "the wait");
        await assert.rejects(
          inTx(e.db, async () => {
            await sendEventTx(e.db, "acme", `paid-${h.id}`, { rolled: "back" });
            throw new Error("the application changes its mind");
          }),
          /changes its mind/,
        );
        const n = await inTx(e.db, () => sendEventTx(e.db, "acme", `paid-${h.id}`, { amount: 5 }));
        assert.equal(typeof n, "number");
        assert.deepEqual(await h.wait({ timeoutMs: 30_000 }), { amount: 5 });
      });
      await assert.rejects(sendEventTx(e.db, "acme", "k", { big: "x".repeat(1_100_000) }), InvalidError);
      await assert.rejects(sendEventTx(e.db, "", "k"), InvalidError);
    } finally {
      await e.close();
    }
  });

  it("the README's example runs as written and prints what the README says", { skip: need }, async () => {
    const pkg = resolve(__dirname, "..");
    const readme = readFileSync(join(pkg, "README.md"), "utf8");
    const code = /<!-- tx:orders\.js -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(code, "the README has the transaction example orders.js");
    const shown = /```sh\nDATABASE_URL=\S+ node orders\.js\n([\s\S]*?)```/.exec(readme)?.[1];
    assert.ok(shown, "the README shows orders.js's output");
    const expected = shown.split("\n").filter((l) => l.startsWith("# ")).map((l) => l.slice(2));
    const e = await setup();
    await e.db.query("DROP TABLE orders");
    const dir = mkdtempSync(join(tmpdir(), "tenq-tx-demo-"));
    try {
      mkdirSync(join(dir, "node_modules"));
      symlinkSync(pkg, join(dir, "node_modules", "tenq"), "dir");
      symlinkSync(join(pkg, "node_modules", "pg"), join(dir, "node_modules", "pg"), "dir");
      writeFileSync(join(dir, "orders.js"), code);
      const { stdout } = await promisify(execFile)(process.execPath, ["orders.js"], {
        cwd: dir,
        env: { ...process.env, TENQ_SERVER: e.server.url, DATABASE_URL: e.url },
        timeout: 60_000,
      });
      assert.deepEqual(stdout.trim().split("\n"), expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await e.close();
    }
  });
});
