// SPDX-License-Identifier: Apache-2.0
// Durable steps against a real server (docs/SEMANTICS.md, "Durable steps"):
// a step's code runs once over retries and over a worker that vanished
// after step 2; a durable sleep, a wait for an event and a child job park
// the job and it resumes as the same attempt; a timeout and a child's death
// throw their errors; a child over a quota throws QuotaExceededError in the
// handler; a step sent again after a lost answer; events kept, answered and
// sent once; the test modes; the README's example.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import {
  ChildFailedError,
  EventTimeoutError,
  InvalidError,
  JobFailedError,
  NoRetryError,
  Parked,
  QuotaExceededError,
  RetryError,
  Tenq,
  isParked,
  type JobContext,
  type JsonValue,
} from "tenq";

import { Server, until, withWorker } from "./harness";

let server: Server;

before(async () => {
  server = await Server.start();
});
after(async () => {
  await server.close();
});

let n = 0;
const fresh = (o: { tenant?: string } = {}): Tenq => server.app({ queue: `st${++n}`, ...o });

describe("durable steps", () => {
  it("a step runs once: a retry gets the stored results back", async () => {
    const app = fresh();
    const ran: Record<string, number> = { a: 0, b: 0, c: 0 };
    const runs: number[] = [];
    const count = (k: string, v: JsonValue): JsonValue => {
      ran[k]!++;
      return v;
    };
    app.handle("S.four", async (_args, ctx) => {
      runs.push(ctx.attempt);
      const a = await ctx.step("a", () => count("a", { rows: 3 }));
      const b = await ctx.step("b", async () => count("b", [1, 2]));
      if (runs.length === 1) throw new RetryError(0, "after b");
      const c = await ctx.step("c", () => count("c", "done"));
      return { a, b, c, stored: (await ctx.steps()).map((s) => s.name) };
    });
    const h = await app.enqueue("S.four");
    const out = await withWorker(app, {}, () => h.wait({ timeoutMs: 30_000 }));
    assert.deepEqual(out, { a: { rows: 3 }, b: [1, 2], c: "done", stored: ["a", "b", "c"] });
    assert.deepEqual(ran, { a: 1, b: 1, c: 1 });
    assert.deepEqual(runs, [1, 2]);
    const steps = await app.client.steps(h.id);
    assert.deepEqual(
      steps.map((s) => [s.name, s.kind, s.attempt, s.result]),
      [
        ["a", "step", 1, { rows: 3 }],
        ["b", "step", 1, [1, 2]],
        ["c", "step", 2, "done"],
      ],
    );
    const att = await app.client.attempts(h.id);
    assert.deepEqual(
      att.map((a) => [a.outcome, a.steps]),
      [
        ["failed", ["a", "b"]],
        ["succeeded", ["c"]],
      ],
    );
    app.close();
  });

  it("a sleep, an event, a child and a timed-out wait park the job: one attempt", async () => {
    const app = fresh();
    const runs: number[] = [];
    const parkedSeen: string[] = [];
    app.handle("S.parent", async (_args, ctx) => {
      runs.push(ctx.attempt);
      await ctx.sleepFor(300);
      const paid = await ctx.waitForEvent(`paid-${ctx.id}`);
      const kid = await ctx.runChild({ type: "S.kid", args: { for: ctx.id } });
      let late = "";
      try {
        await ctx.waitForEvent("never", { timeoutMs: 200, name: "late" });
      } catch (e) {
        if (!(e instanceof EventTimeoutError)) throw e;
        late = `${e.key} ${e.stepName}`;
      }
      return { paid, kid, late };
    });
    app.handle("S.kid", (args) => ({ got: args ?? null }));
    const h = await app.enqueue("S.parent");
    const out = await withWorker(app, {}, async (w) => {
      w.on("parked", (ctx, p) => parkedSeen.push(`${ctx.id === h.id ? "parent" : ctx.id} ${p.kind}`));
      await until(async () => (await app.client.get(h.id)).waiting?.reason === "event", "the wait for the event");
      const j = await app.client.get(h.id);
      assert.equal(j.state, "waiting");
      assert.equal(j.waiting?.event, `paid-${h.id}`);
      const ev = await app.client.sendEvent(`paid-${h.id}`, { amount: 5 });
      assert.deepEqual([ev.delivered, ev.jobs, ev.kept, ev.tenant], [1, [h.id], false, "acme"]);
      const r = await h.wait({ timeoutMs: 30_000 });
      assert.equal(w.stats.parked, 4);
      assert.equal(w.stats.dropped, 0);
      return r;
    });
    assert.deepEqual(out, { paid: { amount: 5 }, kid: { got: { for: h.id } }, late: "never late" });
    assert.deepEqual(runs, [1, 1, 1, 1, 1]);
    assert.deepEqual(parkedSeen, ["parent sleep", "parent event", "parent child", "parent event"]);
    assert.equal((await app.client.get(h.id)).attempts, 1);
    const steps = await app.client.steps(h.id);
    assert.deepEqual(
      steps.map((s) => s.kind),
      ["sleep", "event", "child", "event"],
    );
    assert.equal(steps[2]!.childState, "succeeded");
    assert.equal(typeof steps[2]!.child, "number");
    assert.equal(steps[3]!.error, "timed out");
    assert.deepEqual(
      (await app.client.attempts(h.id)).map((a) => a.outcome),
      ["suspended", "suspended", "suspended", "suspended", "succeeded"],
    );
    app.close();
  });

  it("a child that dies throws ChildFailedError; one over a quota throws QuotaExceededError", async () => {
    const admin = server.client();
    await admin.setTenant("steps-quota", { maxQueued: 1 });
    const app = fresh({ tenant: "steps-quota" });
    const seen: string[] = [];
    app.handle("S.quota", async (_args, ctx) => {
      try {
        await ctx.runChild({ type: "S.any" });
      } catch (e) {
        if (e instanceof QuotaExceededError) seen.push(`quota ${e.field}`);
        throw new NoRetryError("no room for a child");
      }
    });
    const h = await app.enqueue("S.quota");
    await withWorker(app, {}, async () => {
      await assert.rejects(h.wait({ timeoutMs: 30_000 }), JobFailedError);
    });
    assert.deepEqual(seen, ["quota max_queued"]);
    app.close();

    const other = fresh();
    other.handle("S.parent2", async (_args, ctx) => {
      try {
        await ctx.runChild({ type: "S.doomed", maxAttempts: 1 });
      } catch (e) {
        if (e instanceof ChildFailedError) return { state: e.state ?? null, error: e.error, child: e.child };
        throw e;
      }
      return "no error";
    });
    other.handle("S.doomed", () => {
      throw new Error("disk full");
    });
    const p = await other.enqueue("S.parent2");
    const out = (await withWorker(other, {}, () => p.wait({ timeoutMs: 30_000 }))) as { state: string; error: string; child: number };
    assert.equal(out.state, "dead");
    assert.match(out.error, /disk full/);
    assert.equal((await other.client.get(out.child)).awaitedBy, p.id);
    other.close();
    admin.close();
  });

  it("a step sent again after its answer was lost is stored once, an event taken at once read back", async () => {
    const app = fresh();
    const c = app.client;
    // every step request goes twice: the first answer is lost
    const store = c.storeStep.bind(c);
    c.storeStep = async (id, body) => {
      await store(id, body);
      return store(id, body);
    };
    await c.sendEvent("twice-key", { early: true });
    let ran = 0;
    app.handle("S.twice", async (_args, ctx) => {
      const a = await ctx.step("a", () => ++ran);
      const ev = await ctx.waitForEvent("twice-key");
      return { a, ev };
    });
    const h = await app.enqueue("S.twice");
    const out = await withWorker(app, {}, () => h.wait({ timeoutMs: 30_000 }));
    assert.deepEqual(out, { a: 1, ev: { early: true } });
    assert.equal(ran, 1);
    assert.deepEqual(
      (await c.steps(h.id)).map((s) => [s.name, s.result]),
      [
        ["a", 1],
        ["event#1", { early: true }],
      ],
    );
    app.close();
  });

  it("a handler that catches everything must rethrow Parked (isParked)", async () => {
    const app = fresh();
    const caught: string[] = [];
    app.handle("S.careful", async (_args, ctx) => {
      try {
        return await ctx.waitForEvent(`k-${ctx.id}`);
      } catch (e) {
        if (isParked(e)) throw e;
        caught.push(String(e));
        return "swallowed";
      }
    });
    const h = await app.enqueue("S.careful");
    const out = await withWorker(app, {}, async () => {
      await until(async () => (await app.client.get(h.id)).state === "waiting", "the wait");
      await app.client.sendEvent(`k-${h.id}`, "ok");
      return h.wait({ timeoutMs: 30_000 });
    });
    assert.equal(out, "ok");
    assert.deepEqual(caught, []);
    app.close();
  });

  it("a handler that swallows Parked has its outcome dropped: the job still waits", async () => {
    const app = fresh();
    app.handle("S.careless", async (_args, ctx) => {
      try {
        return await ctx.waitForEvent(`c-${ctx.id}`);
      } catch {
        return "swallowed";
      }
    });
    const h = await app.enqueue("S.careless");
    const out = await withWorker(app, {}, async (w) => {
      await until(() => w.stats.parked === 1, "the park");
      assert.equal((await app.client.get(h.id)).state, "waiting");
      await app.client.sendEvent(`c-${h.id}`, "late");
      return h.wait({ timeoutMs: 30_000 });
    });
    assert.equal(out, "late");
    app.close();
  });

  it("events are kept for a later wait and sent once", async () => {
    const app = fresh();
    const ev = await app.client.sendEvent("early-key", [1]);
    assert.deepEqual([ev.delivered, ev.kept, ev.tenant, ev.key], [0, true, "acme", "early-key"]);
    assert.equal(typeof ev.expiresAt, "number");
    app.handle("S.early", (_args, ctx) => ctx.waitForEvent("early-key"));
    const h = await app.enqueue("S.early");
    assert.deepEqual(await withWorker(app, {}, () => h.wait({ timeoutMs: 30_000 })), [1]);
    assert.deepEqual(
      (await app.client.attempts(h.id)).map((a) => a.outcome),
      ["succeeded"],
    );
    // one request key, sent twice: delivered once (the second is the first's answer)
    const again = await app.client.sendEvent("k-once", 1, { requestKey: "ev-once-1" });
    const replay = await app.client.sendEvent("k-once", 1, { requestKey: "ev-once-1" });
    assert.deepEqual(replay, again);
    await assert.rejects(app.client.sendEvent(""), (e: unknown) => e instanceof InvalidError && e.field === "key");
    app.close();
  });

  it("a worker killed after step 2: the next attempt resumes at step 3", async () => {
    const app = fresh();
    const c = app.client;
    const q = c.options.queue!;
    await c.setQueue(q, { leaseMs: 500, backoff: "fixed", backoffBaseMs: 10 });
    const h = await app.enqueue("S.four");
    const [leased] = (await c.lease({ queues: [q], max: 1 })).jobs;
    for (const i of [1, 2]) await c.storeStep(h.id, { token: leased!.token, name: `step-${i}`, result: { n: i } });
    // (the worker is gone without a word: its lease runs out)
    const ran: string[] = [];
    app.handle("S.four", async (_args, ctx) => {
      const out: JsonValue[] = [];
      for (let i = 1; i <= 4; i++)
        out.push(
          await ctx.step(`step-${i}`, () => {
            ran.push(`step-${i}`);
            return { n: i };
          }),
        );
      return out;
    });
    const out = await withWorker(app, {}, () => h.wait({ timeoutMs: 30_000 }));
    assert.deepEqual(out, [{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    assert.deepEqual(ran, ["step-3", "step-4"]);
    app.close();
  });

  it("a stale lease's step is refused (409 on the token)", async () => {
    const app = fresh();
    const c = app.client;
    const q = c.options.queue!;
    const h = await app.enqueue("S.stale");
    const [l1] = (await c.lease({ queues: [q], max: 1 })).jobs;
    await c.fail(h.id, l1!.token, { retryInMs: 0 });
    await assert.rejects(
      c.storeStep(h.id, { token: l1!.token, name: "late", result: 1 }),
      (e: unknown) => e instanceof Error && (e as { field?: string }).field === "token",
    );
    assert.deepEqual(await c.steps(h.id), []);
    app.close();
  });
});

describe("steps in the test modes", () => {
  it("inline: a step just runs, a sleep sleeps, a wait or a child is InvalidError", async () => {
    const app = new Tenq({ servers: "http://127.0.0.1:1", tenant: "acme", queue: "inline" });
    const seen: unknown[] = [];
    app.handle("T.inline", async (_args, ctx: JobContext) => {
      seen.push(await ctx.step("a", () => 5));
      const t0 = Date.now();
      await ctx.sleepFor(20);
      seen.push(Date.now() - t0 >= 15);
      await assert.rejects(ctx.waitForEvent("k"), InvalidError);
      await assert.rejects(ctx.runChild({ type: "T.x" }), InvalidError);
      seen.push(ctx.parked, (await ctx.steps()).length);
      return "ok";
    });
    app.testing.inline();
    const h = await app.enqueue("T.inline");
    assert.equal(await h.wait(), "ok");
    assert.deepEqual(seen, [5, true, false, 0]);
    assert.ok(new Parked("sleep", "s", "scheduled") instanceof Error);
    app.close();
  });
});

it("the README's durable-steps example runs as written and prints what the README says", async () => {
  const pkg = resolve(__dirname, "..");
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const code = /<!-- durable:durable\.js -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, "the README has durable.js");
  const shown = /```sh\nnode durable\.js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(shown, "the README shows durable.js's output");
  const expected = shown.split("\n").filter((l) => l.startsWith("# ")).map((l) => l.slice(2));
  const dir = mkdtempSync(join(tmpdir(), "tenq-durable-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkg, join(dir, "node_modules", "tenq"), "dir");
    writeFileSync(join(dir, "durable.js"), code);
    const { stdout } = await promisify(execFile)(process.execPath, ["durable.js"], {
      cwd: dir,
      env: { ...process.env, TENQ_SERVER: server.url },
      timeout: 60_000,
    });
    assert.deepEqual(stdout.trim().split("\n"), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
