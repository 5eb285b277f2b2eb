// SPDX-License-Identifier: Apache-2.0
// Test modes: inline and fake, without a server (the client points at a port nothing listens on).
import assert from "node:assert/strict";
import { before, describe, it } from "node:test";

import { InvalidError, Tenq, TenqError, currentJob } from "tenq";

import { deadPort } from "./harness";

let nowhere: string;
before(async () => {
  nowhere = `http://127.0.0.1:${await deadPort()}`;
});

class Invoice {
  send(id: number): { sent: number; mode: string } {
    currentJob()?.progress({ sending: id });
    return { sent: id, mode: currentJob()?.mode ?? "none" };
  }
  fail(): void {
    throw new Error("nope");
  }
}

function app(): Tenq {
  const t = new Tenq({ servers: nowhere, failoverBudgetMs: 0, tenant: "acme", queue: "billing" });
  t.register(Invoice);
  return t;
}

describe("inline mode", () => {
  it("runs the handler at submit time, in-process", async () => {
    const t = app();
    t.testing.inline();
    const h = await t.async(new Invoice()).send(7);
    assert.deepEqual(await h.wait(), { sent: 7, mode: "inline" });
    assert.equal(t.testing.jobs.length, 1);
    assert.deepEqual(t.testing.jobs[0]!.progress, { sending: 7 });
    assert.equal((await h.job()).state, "succeeded");
  });

  it("throws the handler's error from the submit", async () => {
    const t = app();
    t.testing.inline();
    await assert.rejects(t.async(Invoice).fail(), /nope/);
  });

  it("still checks what a submit would send", async () => {
    const t = app();
    t.testing.inline();
    await assert.rejects(t.async(Invoice).send(1n as unknown as number), InvalidError);
    await assert.rejects(t.enqueue("Unknown.type"), InvalidError);
    assert.equal(t.testing.jobs.filter((j) => j.state === "succeeded").length, 0);
  });
});

describe("fake mode", () => {
  it("records submissions for assertions and drains them through the handlers", async () => {
    const t = app();
    t.testing.fake();
    const order: string[] = [];
    t.handle("Chain.first", async (args) => {
      order.push(`first ${String(args)}`);
      await t.enqueue("Chain.second", "from first");
      return "one";
    });
    t.handle("Chain.second", (args) => {
      order.push(`second ${String(args)}`);
      return "two";
    });
    const a = await t.async(new Invoice(), { key: "inv:1" }).send(1);
    const b = await t.enqueue("Chain.first", "go");
    assert.equal(order.length, 0);
    assert.equal(t.testing.jobs.length, 2);
    const rec = t.testing.jobsOf("Invoice.send")[0]!;
    assert.deepEqual(rec.args, [1]);
    assert.equal(rec.fields["key"], "inv:1");
    assert.equal(rec.fields["queue"], "billing");
    assert.equal(rec.fields["idempotency_key"], undefined); // none unless the caller gives one
    await assert.rejects(a.wait(), TenqError); // not run yet
    assert.equal(await t.testing.drain(), 3);
    assert.deepEqual(order, ["first go", "second from first"]);
    assert.deepEqual(await a.wait(), { sent: 1, mode: "fake" });
    assert.equal(await b.wait(), "one");
    assert.equal(t.testing.enqueued.length, 0);
    t.testing.clear();
    assert.equal(t.testing.jobs.length, 0);
  });

  it("cancels a recorded job, and drains by type", async () => {
    const t = app();
    t.testing.fake();
    const a = await t.async(Invoice).send(1);
    await t.async(Invoice).send(2);
    await a.cancel();
    assert.equal(await t.testing.drain({ type: "Invoice.send" }), 1);
    assert.deepEqual(
      t.testing.jobs.map((j) => j.state),
      ["cancelled", "succeeded"],
    );
  });

  it("goes back to the server when disabled", async () => {
    const t = app();
    t.testing.fake();
    t.testing.disable();
    await assert.rejects(t.async(Invoice).send(1), (e: unknown) => e instanceof TenqError && e.code === "connection");
  });
});
