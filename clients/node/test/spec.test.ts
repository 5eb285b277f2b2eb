// SPDX-License-Identifier: Apache-2.0
// The library's types against the protocol the server exports (GET /v1/spec,
// made from the server's own tables): a state, a waiting reason, an attempt
// outcome, an error word, a field of a count or a setting the server knows
// and this library does not fails here, until it is added.
import assert from "node:assert/strict";
import { after, before, it } from "node:test";

import { ATTEMPT_OUTCOMES, Client, FINISHED_STATES, JOB_STATES, SETTING_NAMES, TenqError, WAITING_REASONS, errorFromWire, isFinished } from "tenq";

import { Server } from "./harness";

interface Spec {
  states: { name: string; live: boolean; finished: boolean }[];
  attempt_outcomes: string[];
  waiting_reasons: string[];
  errors: { word: string; status: number }[];
  counts: string[];
  settings: Record<"queue" | "tenant" | "key", { name: string }[]>;
}

let server: Server;
let spec: Spec;

before(async () => {
  server = await Server.start();
  spec = (await (await fetch(server.url + "/v1/spec")).json()) as Spec;
});
after(async () => {
  await server.close();
});

it("knows every state, and which are finished", () => {
  const names = spec.states.map((s) => s.name);
  assert.ok(names.includes("succeeded") && names.includes("waiting"));
  assert.deepEqual([...JOB_STATES], names);
  assert.deepEqual(new Set(FINISHED_STATES), new Set(spec.states.filter((s) => s.finished).map((s) => s.name)));
  for (const s of spec.states) assert.equal(isFinished(s.name), s.finished, s.name);
});

it("knows every waiting reason and attempt outcome", () => {
  assert.ok(spec.waiting_reasons.includes("no_worker"));
  assert.deepEqual(new Set(WAITING_REASONS), new Set(spec.waiting_reasons));
  assert.deepEqual([...ATTEMPT_OUTCOMES], spec.attempt_outcomes);
});

it("names every field of a count and every setting", () => {
  const wire = new Set<string>(Object.values(SETTING_NAMES));
  for (const s of spec.states.filter((x) => x.live)) assert.ok(spec.counts.includes(s.name), s.name);
  for (const f of spec.counts) assert.ok(wire.has(f), `count field ${f}`);
  for (const kind of ["queue", "tenant"] as const) {
    assert.ok(spec.settings[kind].length > 0, kind);
    for (const r of spec.settings[kind]) assert.ok(wire.has(r.name), `${kind} setting ${r.name}`);
  }
});

it("takes and reads every key setting", async () => {
  assert.deepEqual(Object.keys(spec.settings).sort(), ["key", "queue", "tenant"]);
  const names = spec.settings.key.map((r) => r.name);
  assert.ok(names.length > 0);
  const admin = new Client({ servers: server.url });
  try {
    const camel = (w: string): string => w.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase());
    const set = await admin.setKeySetting({ tenant: "spec", key: "acct:*", concurrency: 2, rate: 5, ratePeriodMs: 1000, rateBurst: 5 });
    const got = (await admin.keySettings("spec")).find((k) => k.key === "acct:*");
    for (const n of names) {
      assert.ok(camel(n) in (set as object), `setKeySetting's answer lacks ${camel(n)}`);
      assert.notEqual((got as unknown as Record<string, unknown> | undefined)?.[camel(n)], undefined, `keySettings lacks ${camel(n)}`);
    }
  } finally {
    admin.close();
  }
});

it("has a class for every error word", () => {
  assert.ok(spec.errors.some((e) => e.word === "invalid" && e.status === 400));
  for (const { word, status } of spec.errors) {
    const e = errorFromWire({ code: word, message: "m" }, { status });
    assert.notEqual(e.constructor, TenqError, word);
    assert.deepEqual([e.code, e.status], [word, status], word);
  }
});
