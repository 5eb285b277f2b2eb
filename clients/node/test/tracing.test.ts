// SPDX-License-Identifier: Apache-2.0
// Tracing: the client's hook sets traceparent on submit; the worker's tracing
// middleware hands it to the application's hook, which runs the job in its span.
import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import { InvalidError, Tenq, tracing } from "tenq";

import { Server, deadPort } from "./harness";

const TP = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

let server: Server;

before(async () => {
  server = await Server.start();
});
after(async () => {
  await server.close();
});

describe("tracing", () => {
  it("the client's hook gives each submit its traceparent; a spec's own wins; a bad one is refused", async () => {
    let current: string | undefined = TP;
    const t = new Tenq({ servers: `http://127.0.0.1:${await deadPort()}`, tenant: "acme", queue: "q", trace: () => current });
    t.testing.fake();
    await t.enqueue("A");
    await t.enqueue("B", null, { traceparent: "00-11111111111111111111111111111111-2222222222222222-00" });
    current = undefined;
    await t.enqueue("C");
    assert.deepEqual(
      t.testing.jobs.map((j) => j.traceparent),
      [TP, "00-11111111111111111111111111111111-2222222222222222-00", undefined],
    );
    current = "00-NOT-HEX";
    await assert.rejects(t.enqueue("D"), (e: unknown) => e instanceof InvalidError && e.field === "traceparent");
  });

  it("the worker's tracing middleware sees each job's traceparent", async () => {
    const seen: (string | undefined)[] = [];
    const t = server.app({ queue: "plain" });
    t.handle("Run", () => "ran");
    const h = await t.enqueue("Run");
    const w = t.worker({
      logger: null,
      handleSignals: false,
      middleware: [tracing((tp, ctx, run) => (seen.push(tp), assert.equal(ctx.type, "Run"), run()))],
    });
    const running = w.run();
    assert.equal(await h.wait({ timeoutMs: 15_000 }), "ran");
    await w.stop();
    await running;
    assert.deepEqual(seen, [undefined]);
    t.close();
  });

  it("submit -> wait -> run is one trace on the server", async () => {
    const seen: (string | undefined)[] = [];
    const t = server.app({ queue: "traced", trace: () => TP });
    t.handle("Traced", () => "ok");
    const h = await t.enqueue("Traced");
    const own = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    const h2 = await t.enqueue("Traced", null, { traceparent: own });
    assert.equal((await h.job()).traceparent, TP);
    assert.equal((await t.client.get(h2.id)).traceparent, own);
    // the server refuses a malformed one, naming the field
    const bad = await t.client.send("POST", "/v1/jobs", {
      body: JSON.stringify({ tenant: "acme", queue: "traced", type: "Traced", traceparent: "00-XYZ" }),
    });
    assert.equal(bad.status, 400);
    assert.equal((bad.body as { error: { field: string } }).error.field, "traceparent");
    const w = t.worker({ logger: null, handleSignals: false, middleware: [tracing((tp, _ctx, run) => (seen.push(tp), run()))] });
    const running = w.run();
    try {
      assert.equal(await h.wait({ timeoutMs: 15_000 }), "ok");
      assert.equal(await h2.wait({ timeoutMs: 15_000 }), "ok");
    } finally {
      await w.stop();
      await running;
      t.close();
    }
    assert.deepEqual(seen.sort(), [own, TP].sort());
  });
});
