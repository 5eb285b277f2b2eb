// SPDX-License-Identifier: Apache-2.0
// Graceful stop of a worker process: SIGTERM lets running jobs finish within
// the grace period and gives back the rest; a second signal stops at once.
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";

import type { Client } from "tenq";

import { Server, until } from "./harness";

let server: Server;
let c: Client;

before(async () => {
  server = await Server.start();
  c = server.client({ tenant: "acme" });
});
after(async () => {
  c.close();
  await server.close();
});

interface Proc {
  p: ChildProcess;
  events: { event: string; id?: number; stats?: Record<string, number> }[];
  exit: Promise<number | null>;
}

function startWorker(queue: string, env: Record<string, string> = {}): Proc {
  const p = spawn(process.execPath, [join(__dirname, "fixtures", "stop-worker.js")], {
    env: { ...process.env, TENQ_SERVER: server.url, QUEUE: queue, ...env },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const events: Proc["events"] = [];
  let buf = "";
  p.stdout!.on("data", (d: Buffer) => {
    buf += d.toString();
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      events.push(JSON.parse(buf.slice(0, i)) as Proc["events"][number]);
      buf = buf.slice(i + 1);
    }
  });
  const exit = new Promise<number | null>((r) => p.once("exit", (code) => r(code)));
  return { p, events, exit };
}

const started = (w: Proc): number[] => w.events.filter((e) => e.event === "started").map((e) => e.id!);

describe("stopping a worker process", () => {
  it("SIGTERM: running jobs finish and are reported; cut-off and waiting ones are given back", async () => {
    const q = "stop1";
    const short = await c.submit({ queue: q, type: "Sleep", args: { ms: 700 } });
    const stubborn = await c.submit({ queue: q, type: "Sleep", args: { ms: 60_000 } });
    const obedient = await c.submit({ queue: q, type: "Sleep", args: { ms: 60_000, obey: true } });
    const waiting = await c.submit({ queue: q, type: "Sleep", args: { ms: 10 } });
    const w = startWorker(q, { CONCURRENCY: "3", PREFETCH: "1", GRACE_MS: "1500" });
    await until(() => started(w).length === 3, "three jobs to start");
    assert.deepEqual(started(w).sort(), [short.id, stubborn.id, obedient.id].sort());
    const t0 = Date.now();
    w.p.kill("SIGTERM");
    assert.equal(await w.exit, 0);
    const took = Date.now() - t0;
    assert.ok(took >= 1400 && took < 8_000, `stopped after ${took} ms`);

    const s = (await c.get(short.id));
    assert.equal(s.state, "succeeded");
    assert.deepEqual(s.result, { slept: 700 });
    for (const id of [stubborn.id, obedient.id]) {
      const j = await c.get(id);
      assert.equal(j.state, "ready", `job ${id} is ${j.state}`);
      assert.equal(j.error, "worker stopped");
      assert.equal(j.attempts, 1);
    }
    const wj = await c.get(waiting.id);
    assert.equal(wj.state, "ready");
    assert.ok(!started(w).includes(waiting.id));
    const stats = w.events.find((e) => e.event === "stopped")?.stats;
    assert.equal(stats?.["succeeded"], 1);
    assert.equal(stats?.["givenBack"], 3);
  });

  it("a second signal stops at once, reporting nothing", async () => {
    const q = "stop2";
    const long = await c.submit({ queue: q, type: "Sleep", args: { ms: 60_000 } });
    const w = startWorker(q, { GRACE_MS: "30000" });
    await until(() => started(w).length === 1, "the job to start");
    const t0 = Date.now();
    w.p.kill("SIGTERM");
    await new Promise((r) => setTimeout(r, 200));
    w.p.kill("SIGINT");
    assert.equal(await w.exit, 1);
    assert.ok(Date.now() - t0 < 5_000);
    const j = await c.get(long.id);
    assert.ok(j.state === "leased" || j.state === "running", `job is ${j.state}`);
    await c.cancel(long.id);
  });
});
