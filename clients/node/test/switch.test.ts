// SPDX-License-Identifier: Apache-2.0
// The sync/async switch: a method written once runs inline or as a job.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { InvalidError, Tenq, currentJob, type Worker } from "tenq";

import { Server } from "./harness";

class DataReport {
  constructor(private readonly prefix = "report") {}
  async execute(reportId: number, opts: { format: string }): Promise<{ name: string; format: string; ranIn: string }> {
    return { name: `${this.prefix}-${reportId}`, format: opts.format, ranIn: currentJob()?.mode ?? "caller" };
  }
  summary(): string {
    return "summary";
  }
  _internal(): void {}
}

class Mailer {
  constructor(private readonly from: string) {}
  send(to: string): string {
    return `${this.from} -> ${to}`;
  }
}

let server: Server;
let tenq: Tenq;
let worker: Worker;
let running: Promise<unknown>;

before(async () => {
  server = await Server.start();
  tenq = server.app({ queue: "switch" });
  tenq.register(DataReport);
  tenq.register(Mailer, { factory: () => new Mailer("noreply@example.com") });
  worker = tenq.worker({ logger: null, handleSignals: false, concurrency: 2 });
  running = worker.run();
});
after(async () => {
  await worker.stop();
  await running;
  tenq.close();
  await server.close();
});

describe("the switch", () => {
  it("runs inline when called directly", async () => {
    const r = await new DataReport().execute(1, { format: "csv" });
    assert.deepEqual(r, { name: "report-1", format: "csv", ranIn: "caller" });
  });

  it("runs as a job with tenq.async(instance), typed Class.method, args as a JSON array", async () => {
    const h = await tenq.async(new DataReport()).execute(42, { format: "pdf" });
    const job = await h.job();
    assert.equal(job.type, "DataReport.execute");
    assert.deepEqual(job.args, [42, { format: "pdf" }]);
    const result = await h.wait({ timeoutMs: 15_000 });
    assert.deepEqual(result, { name: "report-42", format: "pdf", ranIn: "worker" });
  });

  it("takes the class itself and submit options", async () => {
    const h = await tenq.async(DataReport, { key: "report:7", priority: 3 }).summary();
    const job = await h.job();
    assert.equal(job.type, "DataReport.summary");
    assert.equal(job.key, "report:7");
    assert.equal(job.priority, 3);
    assert.equal(await h.wait({ timeoutMs: 15_000 }), "summary");
  });

  it("routes back through a registered factory", async () => {
    const h = await tenq.async(Mailer).send("ann@example.com");
    assert.equal(await h.wait({ timeoutMs: 15_000 }), "noreply@example.com -> ann@example.com");
  });

  it("refuses arguments that are not JSON before sending", async () => {
    const before = (await tenq.client.list({ queue: "switch", type: "DataReport.execute" })).jobs.length;
    await assert.rejects(tenq.async(new DataReport()).execute(1, { format: new Date() as unknown as string }), (e: unknown) => {
      assert.ok(e instanceof InvalidError);
      assert.equal(e.field, "args");
      return true;
    });
    assert.equal((await tenq.client.list({ queue: "switch", type: "DataReport.execute" })).jobs.length, before);
  });

  it("refuses classes and methods that are not registered", async () => {
    class Other {
      run(): void {}
    }
    await assert.rejects(tenq.async(new Other()).run(), InvalidError);
    await assert.rejects((tenq.async(new DataReport()) as unknown as { _internal(): Promise<unknown> })._internal(), InvalidError);
  });

  it("tasks: a function called inline, or enqueued", async () => {
    const add = tenq.task("Math.add", (a: number, b: number) => ({ sum: a + b, ranIn: currentJob()?.mode ?? "caller" }));
    assert.equal(add.type, "Math.add");
    assert.deepEqual(await add(1, 2), { sum: 3, ranIn: "caller" });
    const h = await add.enqueue(20, 22);
    assert.deepEqual(await h.wait({ timeoutMs: 15_000 }), { sum: 42, ranIn: "worker" });
    const k = await add.with({ key: "sums", timeoutMs: 600_000 }).enqueue(1, 1);
    assert.equal((await k.job()).key, "sums");
    assert.equal((await k.job()).timeoutMs, 600_000);
    assert.deepEqual(await k.wait({ timeoutMs: 15_000 }), { sum: 2, ranIn: "worker" });
  });
});
