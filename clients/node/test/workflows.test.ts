// SPDX-License-Identifier: Apache-2.0
// Workflows against a real server: dependencies (a chain, index references,
// a parent's death with each policy, a bad parent) and batches (callbacks
// fired once when the library's worker drains one, fan-out from a running
// job, a closed batch); the test modes with dependsOn; the README's example.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import { BatchClosedError, ConflictError, InvalidError, NotFoundError, Tenq, index, type JobContext } from "tenq";

import { Server, until, withWorker } from "./harness";

let server: Server;

before(async () => {
  server = await Server.start();
});
after(async () => {
  await server.close();
});

let n = 0;
const fresh = (): Tenq => server.app({ queue: `wf${++n}` });

describe("dependencies", () => {
  it("a chain A -> B: B is leased only after A succeeded, and reads A's result", async () => {
    const app = fresh();
    const c = app.client;
    const q = app.client.options.queue!;
    const a = await c.submit({ type: "W.a" });
    const b = await c.submit({ type: "W.b", dependsOn: [a], onParentFailure: "cancel" });
    assert.equal(b.state, "waiting");
    const jb = await c.get(b.id);
    assert.deepEqual(jb.parents, [a.id]);
    assert.equal(jb.onParentFailure, "cancel");
    assert.equal(jb.waiting?.reason, "parents");
    assert.deepEqual(jb.waiting?.parents, [a.id]);
    const ja = await c.get(a.id);
    assert.deepEqual(ja.children, [b.id]);
    assert.equal(ja.childrenCount, 1);
    const la = await c.lease({ queues: [q], max: 10 });
    assert.deepEqual(la.jobs.map((j) => j.id), [a.id]);
    await c.ack(a.id, la.jobs[0]!.token, { result: { rows: 42 } });
    const lb = await c.lease({ queues: [q], max: 10 });
    assert.deepEqual(lb.jobs.map((j) => j.id), [b.id]);
    assert.deepEqual(lb.jobs[0]!.parents, [a.id]);
    const ps = await c.parents(b.id);
    assert.deepEqual(ps.parents, [{ id: a.id, state: "succeeded", result: { rows: 42 } }]);
    assert.deepEqual((await c.parents(a.id)).children.map((x) => x.id), [b.id]);
    await c.ack(b.id, lb.jobs[0]!.token);
    app.close();
  });

  it("the worker runs the chain; the child reads its parents through its context", async () => {
    const app = fresh();
    let seen: number[] = [];
    app.handle("W.first", () => ({ rows: 7 }));
    app.handle("W.second", async (_args, ctx: JobContext) => {
      seen = ctx.parents;
      const ps = await ctx.parentResults();
      return (ps.parents[0]!.result as { rows: number }).rows * 2;
    });
    const a = await app.enqueue("W.first");
    const b = await app.enqueue<number>("W.second", undefined, { dependsOn: [a] });
    await withWorker(app, { pollMs: 200 }, async () => {
      assert.equal(await b.wait({ timeoutMs: 30_000 }), 14);
    });
    assert.deepEqual(seen, [a.id]);
    app.close();
  });

  it("a many-submit names earlier jobs by index(i), across requests too", async () => {
    const app = fresh();
    const c = app.client;
    const out = await c.submitMany([
      { type: "W.root" },
      { type: "W.leaf", dependsOn: [index(0)] },
      { type: "W.join", dependsOn: [index(0), index(1)] },
      { type: "W.bad", dependsOn: [index(7)] },
    ]);
    assert.ok(out[0]!.ok && out[1]!.ok && out[2]!.ok);
    assert.ok(!out[3]!.ok && out[3]!.error instanceof InvalidError && out[3]!.error.field === "depends_on");
    const [root, leaf, join_] = out.map((r) => (r.ok ? r.id : 0));
    assert.deepEqual((await c.get(leaf!)).parents, [root]);
    assert.deepEqual((await c.get(join_!)).parents, [root, leaf]);
    // split into requests of 2: an index into an earlier request goes as the id
    const split = await c.submitMany(
      [{ type: "W.s0" }, { type: "W.s1" }, { type: "W.s2", dependsOn: [index(0), index(2 - 1)] }, { type: "W.s3", dependsOn: [index(2)] }],
      { batchSize: 2 },
    );
    const ids = split.map((r) => (r.ok ? r.id : 0));
    assert.deepEqual((await c.get(ids[2]!)).parents, [ids[0], ids[1]]);
    assert.deepEqual((await c.get(ids[3]!)).parents, [ids[2]]);
    app.close();
  });

  for (const policy of ["cancel", "run"] as const) {
    it(`a parent that dies: policy ${policy}`, async () => {
      const app = fresh();
      const c = app.client;
      const q = app.client.options.queue!;
      const a = await c.submit({ type: "W.doomed", maxAttempts: 1 });
      const b = await c.submit({ type: "W.child", dependsOn: [a.id], onParentFailure: policy });
      const la = await c.lease({ queues: [q], max: 1 });
      await c.fail(a.id, la.jobs[0]!.token, { error: "boom" });
      assert.equal((await c.get(a.id)).state, "dead");
      if (policy === "cancel") {
        const jb = await c.get(b.id);
        assert.equal(jb.state, "cancelled");
        assert.match(jb.error ?? "", /parent/);
      } else {
        const lb = await c.lease({ queues: [q], max: 1 });
        assert.deepEqual(lb.jobs.map((j) => j.id), [b.id]);
        assert.equal((await c.parents(b.id)).parents[0]!.state, "dead");
        await c.ack(b.id, lb.jobs[0]!.token);
      }
      app.close();
    });
  }

  it("a parent that is not there: NotFoundError naming depends_on, nothing made", async () => {
    const app = fresh();
    const c = app.client;
    const q = app.client.options.queue!;
    await assert.rejects(c.submit({ type: "W.orphan", dependsOn: [987_654_321] }), (e: unknown) => e instanceof NotFoundError && e.field === "depends_on");
    await assert.rejects(
      c.createBatch([{ type: "W.x" }, { type: "W.y", dependsOn: [987_654_321] }]),
      (e: unknown) => e instanceof NotFoundError && e.field === "jobs[1].depends_on",
    );
    assert.deepEqual((await c.list({ queue: q })).jobs, []);
    app.close();
  });
});

describe("batches", () => {
  it("a batch drained by the worker fires onComplete and onSuccess once", async () => {
    const app = fresh();
    const c = app.client;
    const fired: string[] = [];
    app.handle("B.item", (args) => (args as { i: number }).i);
    app.handle("B.cb", (_args, ctx: JobContext) => void fired.push(`${ctx.batchCallback}:${ctx.batch}`));
    const created = await c.createBatch(
      [0, 1, 2, 3, 4].map((i) => ({ type: "B.item", args: { i } })),
      { onComplete: { type: "B.cb", args: { user: 7 } }, onSuccess: { type: "B.cb" }, onDeath: { type: "B.dead" } },
    );
    assert.equal(created.jobs.length, 5);
    assert.equal((await c.get(created.jobs[0]!.id)).batch, created.id);
    let st = await c.batch(created.id);
    assert.equal(st.status, "open");
    assert.equal(st.total, 5);
    assert.equal(st.pending, 5);
    await withWorker(app, {}, async () => {
      await until(() => fired.length === 2, "both callbacks ran");
    });
    st = await c.getBatch(created.id);
    assert.equal(st.status, "closed");
    assert.equal(st.counts["succeeded"], 5);
    assert.equal(st.progress, 1);
    assert.deepEqual(fired.sort(), [`on_complete:${created.id}`, `on_success:${created.id}`]);
    assert.equal(st.callbacks.on_death?.job, null);
    const cb = st.callbacks.on_complete!.job!;
    assert.equal((await c.get(cb)).batchCallback, "on_complete");
    assert.ok((await c.listBatches({ limit: 1000 })).batches.some((b) => b.id === created.id));
    app.close();
  });

  it("a running job fans out into its own batch; a closed batch refuses more", async () => {
    const app = fresh();
    const c = app.client;
    app.handle("F.fan", async (_args, ctx: JobContext) => (await ctx.addToBatch([0, 1, 2].map((i) => ({ type: "F.part", args: { i } })))).length);
    app.handle("F.part", (_args, ctx: JobContext) => ctx.batch ?? null);
    app.handle("F.done", () => null);
    const created = await c.createBatch([{ type: "F.fan" }], { onSuccess: { type: "F.done" } });
    await withWorker(app, {}, async () => {
      await until(async () => (await c.batch(created.id)).status === "closed", "the batch closed");
    });
    const st = await c.batch(created.id);
    assert.equal(st.total, 4);
    assert.equal(st.counts["succeeded"], 4);
    assert.notEqual(st.callbacks.on_success?.job, null);
    await assert.rejects(
      c.addToBatch(created.id, [{ type: "F.late" }]),
      (e: unknown) => e instanceof BatchClosedError && e instanceof ConflictError && e.code === "batch_closed",
    );
    await assert.rejects(c.addToBatch(987_654_321, [{ type: "F.late" }]), NotFoundError);
    app.close();
  });
});

describe("test modes", () => {
  it("take dependsOn: inline runs after the parents, fake drains in order", async () => {
    const app = new Tenq({ servers: "http://127.0.0.1:1", queue: "q", testMode: "inline" });
    app.handle("T.a", () => 3);
    app.handle("T.b", async (_args, ctx: JobContext) => ((await ctx.parentResults()).parents[0]!.result as number) + 1);
    app.handle("T.die", () => {
      throw new Error("boom");
    });
    const a = await app.enqueue("T.a");
    const b = await app.enqueue("T.b", undefined, { dependsOn: [a] });
    assert.equal(await b.wait(), 4);
    await assert.rejects(app.enqueue("T.die"));
    const dead = app.testing.jobs.find((j) => j.type === "T.die")!;
    const child = await app.enqueue("T.b", undefined, { dependsOn: [dead.id] });
    assert.equal((await child.job()).state, "cancelled");
    await assert.rejects(app.enqueue("T.b", undefined, { dependsOn: [999] }), NotFoundError);
    app.testing.clear();
    app.testing.fake();
    const b2 = await app.enqueue("T.b", undefined, { dependsOn: [await app.enqueue("T.a")] });
    assert.equal(await app.testing.drain(), 2);
    assert.equal(await b2.wait(), 4);
  });
});

it("the README's workflows example runs as written and prints what the README says", async () => {
  const pkg = resolve(__dirname, "..");
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const code = /<!-- workflows:workflows\.js -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, "the README has workflows.js");
  const shown = /```sh\nnode workflows\.js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(shown, "the README shows workflows.js's output");
  const expected = shown.split("\n").filter((l) => l.startsWith("# ")).map((l) => l.slice(2));
  const srv = await Server.start();
  const dir = mkdtempSync(join(tmpdir(), "tenq-wf-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkg, join(dir, "node_modules", "tenq"), "dir");
    writeFileSync(join(dir, "workflows.js"), code);
    const { stdout } = await promisify(execFile)(process.execPath, ["workflows.js"], {
      cwd: dir,
      env: { ...process.env, TENQ_SERVER: srv.url },
      timeout: 60_000,
    });
    assert.deepEqual(stdout.trim().split("\n"), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await srv.close();
  }
});
