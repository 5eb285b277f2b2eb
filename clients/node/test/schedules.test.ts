// SPDX-License-Identifier: Apache-2.0
// Schedules (periodic jobs) and attempt history through the library, against
// a real server: a schedule of `@every 1s` submits jobs; it is listed, read,
// paused and deleted; a bad cron expression or zone rejects with InvalidError
// naming the field and creates nothing; a job that failed twice and then
// succeeded lists its three attempts.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import { InvalidError, NotFoundError, RetryError, Tenq, type Attempt, type Schedule } from "tenq";

import { Server, until, withWorker } from "./harness";

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

const isField = (field: string) => (x: unknown): boolean => x instanceof InvalidError && x.field === field && x.status === 400;

describe("schedules", () => {
  it("a schedule of @every 1s submits jobs; it is read, listed, paused, replaced and deleted", async () => {
    const app = server.app({ queue: "sched" });
    const s: Schedule = await app.client.putSchedule("every-second", {
      cron: "@every 1s",
      missed: "once",
      job: { type: "S.tick", args: { n: 1 }, priority: 3, maxAttempts: 2, timeoutMs: 200_000, key: "lane-s" },
    });
    assert.equal(s.name, "every-second");
    assert.equal(s.cron, "@every 1s");
    assert.equal(s.timezone, "UTC");
    assert.equal(s.missed, "once");
    assert.equal(s.paused, false);
    assert.deepEqual(
      [s.job.tenant, s.job.queue, s.job.type, s.job.args, s.job.priority, s.job.maxAttempts, s.job.timeoutMs, s.job.key],
      ["acme", "sched", "S.tick", { n: 1 }, 3, 2, 200_000, "lane-s"],
    );
    assert.equal(s.nextRuns.length, 5);
    assert.equal(s.nextTick, s.nextRuns[0]);
    for (let i = 1; i < 5; i++) assert.equal(s.nextRuns[i]! - s.nextRuns[i - 1]!, 1000);

    await until(async () => (await app.client.list({ queue: "sched" })).jobs.length > 0, "a job of the schedule", 10_000);
    const job = (await app.client.list({ queue: "sched" })).jobs[0]!;
    assert.deepEqual([job.type, job.args, job.priority, job.key], ["S.tick", { n: 1 }, 3, "lane-s"]);
    assert.match(job.idempotencyKey ?? "", /^cron:every-second:\d+$/);
    const got = await app.client.getSchedule("every-second");
    assert.ok(got.lastTick !== null && got.lastJob !== null);

    const listed = (await app.client.listSchedules({ tenant: "acme", runs: 3 })).filter((x) => x.name === "every-second");
    assert.equal(listed.length, 1);
    assert.equal(listed[0]!.nextRuns.length, 3);

    const paused = await app.client.pauseSchedule("every-second");
    assert.equal(paused.paused, true);
    assert.equal(paused.nextTick, null);
    assert.equal((await app.client.resumeSchedule("every-second")).paused, false);

    const again = await app.client.putSchedule("every-second", { cron: "0 3 * * *", timezone: "Europe/Berlin", paused: true, job: { type: "S.tick" } });
    assert.deepEqual([again.cron, again.timezone, again.paused, again.job.priority], ["0 3 * * *", "Europe/Berlin", true, 0]);
    assert.equal(again.createdAt, s.createdAt);

    assert.equal(await app.client.deleteSchedule("every-second"), true);
    await assert.rejects(app.client.getSchedule("every-second"), NotFoundError);
    await assert.rejects(app.client.deleteSchedule("every-second"), NotFoundError);
    assert.ok((await app.client.listSchedules()).every((x) => x.name !== "every-second"));
    app.close();
  });

  it("a bad cron expression or zone rejects with InvalidError naming the field, and nothing changes", async () => {
    const app = server.app({ queue: "badsched" });
    await assert.rejects(app.client.putSchedule("bad", { cron: "61 * * * *", job: { type: "S" } }), isField("cron"));
    await assert.rejects(app.client.putSchedule("bad", { cron: "@every 1s", timezone: "Mars/Olympus_Mons", job: { type: "S" } }), isField("timezone"));
    await assert.rejects(app.client.putSchedule("bad", { cron: "@every 1s", job: { type: "S", timeoutMs: 5 } }), isField("job.timeout_ms"));
    await assert.rejects(app.client.getSchedule("bad"), NotFoundError);
    assert.ok((await app.client.listSchedules()).every((x) => x.name !== "bad"));
    // one that exists stays as it was
    await app.client.putSchedule("bad", { cron: "0 3 * * *", paused: true, job: { type: "S" } });
    await assert.rejects(app.client.putSchedule("bad", { cron: "not cron", job: { type: "Other" } }), isField("cron"));
    const kept = await app.client.getSchedule("bad");
    assert.deepEqual([kept.cron, kept.job.type, kept.paused], ["0 3 * * *", "S", true]);
    await app.client.deleteSchedule("bad");
    assert.deepEqual((await app.client.list({ queue: "badsched" })).jobs, []);
    app.close();
  });
});

describe("attempts", () => {
  it("a job that failed twice and then succeeded lists its three attempts, with outcomes and errors", async () => {
    const app = server.app({ queue: "flaky" });
    let calls = 0;
    const seen: number[] = [];
    app.handle("Flaky", async (_args, ctx) => {
      seen.push(ctx.attempt);
      calls++;
      if (calls < 3) throw new RetryError(10, `boom ${calls}`);
      return "ok";
    });
    const h = await app.enqueue("Flaky");
    assert.deepEqual(await app.client.attempts(h.id), []);
    await withWorker(app, {}, async () => {
      assert.equal(await h.wait({ timeoutMs: 20_000 }), "ok");
    });
    const att: Attempt[] = await app.client.attempts(h.id);
    assert.deepEqual(att.map((a) => a.attempt), [1, 2, 3]);
    assert.deepEqual(seen, [1, 2, 3]); // the handler's attempt is the history's
    assert.deepEqual(att.map((a) => a.outcome), ["failed", "failed", "succeeded"]);
    assert.match(att[0]!.error ?? "", /boom 1/);
    assert.match(att[1]!.error ?? "", /boom 2/);
    assert.equal(att[2]!.error, null);
    assert.equal(att[2]!.jobState, "succeeded");
    assert.ok(att.every((a) => a.finishedAt !== null && a.worker));
    await assert.rejects(app.client.attempts(h.id + 1_000_000), NotFoundError);
    app.close();
  });
});

it("the README's schedules example runs as written and prints what the README says", async () => {
  const pkg = resolve(__dirname, "..");
  const readme = readFileSync(join(pkg, "README.md"), "utf8");
  const code = /<!-- schedules:schedules\.js -->\n```js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(code, "the README has schedules.js");
  const shown = /```sh\nnode schedules\.js\n([\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(shown, "the README shows schedules.js's output");
  const expected = shown.split("\n").filter((l) => l.startsWith("# ")).map((l) => l.slice(2));
  const fresh = await Server.start();
  const dir = mkdtempSync(join(tmpdir(), "tenq-sched-"));
  try {
    mkdirSync(join(dir, "node_modules"));
    symlinkSync(pkg, join(dir, "node_modules", "tenq"), "dir");
    writeFileSync(join(dir, "schedules.js"), code);
    const { stdout } = await promisify(execFile)(process.execPath, ["schedules.js"], {
      cwd: dir,
      env: { ...process.env, TENQ_SERVER: fresh.url },
      timeout: 60_000,
    });
    assert.deepEqual(stdout.trim().split("\n"), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await fresh.close();
  }
});
