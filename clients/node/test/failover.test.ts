// SPDX-License-Identifier: Apache-2.0
// Several servers, failover, and the idempotent retry of a submit whose answer was lost.
import assert from "node:assert/strict";
import { describe, it } from "node:test";

import { Client, ConnectionError, NotLeaderError, TimeoutError } from "tenq";

import { Proxy } from "./proxy";
import { Server, deadPort, sleep, until } from "./harness";

describe("failover", () => {
  it("goes to the next server when one is down, and stays with the one that answered", async () => {
    const s = await Server.start();
    const dead = `http://127.0.0.1:${await deadPort()}`;
    const c = new Client({ servers: [dead, s.url], tenant: "acme", queue: "q", failoverBudgetMs: 5_000 });
    try {
      const r = await c.submit({ type: "T" });
      assert.equal(c.currentServer, s.url);
      assert.equal((await c.get(r.id)).state, "ready");
    } finally {
      c.close();
      await s.close();
    }
  });

  it("a server with no answer (SIGSTOP): the next server; alone, a timeout after the budget", async () => {
    const a = await Server.start();
    const b = await Server.start();
    const c = new Client({ servers: [a.url, b.url], requestTimeoutMs: 400, failoverBudgetMs: 3_000 });
    const alone = new Client({ servers: a.url, requestTimeoutMs: 300, failoverBudgetMs: 900 });
    try {
      await c.health(); // a keep-alive connection to a
      a.pause();
      const h = await c.health();
      assert.equal(h.status, "ok");
      assert.equal(c.currentServer, b.url);
      const t0 = Date.now();
      await assert.rejects(alone.health(), TimeoutError);
      assert.ok(Date.now() - t0 >= 800);
    } finally {
      a.resume();
      c.close();
      alone.close();
      await a.close();
      await b.close();
    }
  });

  it("a server that is down: the connect error after the budget, and nothing made", async () => {
    const s = await Server.start();
    const c = s.client({ tenant: "acme", queue: "q", failoverBudgetMs: 800 });
    try {
      await c.health();
      await s.kill("SIGKILL");
      const t0 = Date.now();
      await assert.rejects(c.submit({ type: "T" }), ConnectionError);
      assert.ok(Date.now() - t0 >= 700, `gave up after ${Date.now() - t0} ms`);
      await s.restart();
      assert.equal((await c.list({ queue: "q" })).jobs.length, 0);
    } finally {
      c.close();
      await s.close();
    }
  });

  it("an answer lost with a server restart: the retry carries the same key, one job, the same ids", async () => {
    const s = await Server.start();
    const proxy = new Proxy(() => s.port);
    await proxy.listen();
    const c = new Client({ servers: proxy.url, tenant: "acme", queue: "idem", failoverBudgetMs: 15_000 });
    const direct = s.client({ tenant: "acme", queue: "idem" });
    try {
      // the first try is made and answered; the proxy drops the answer, the
      // server is killed and started again on the same store; the retry is
      // answered from the store
      let made: number[] = [];
      const restarts: Promise<void>[] = [];
      proxy.onAnswer = async () => {
        made = (await direct.list({ queue: "idem" })).jobs.map((j) => j.id);
        direct.close();
        const restarted = s.restart(); // the client may be answered before this resolves
        restarts.push(restarted);
        await restarted;
      };
      proxy.dropAnswers = 1;
      const r = await c.submit({ type: "Once", args: { n: 1 } });
      assert.equal(restarts.length, 1, "the answer was dropped and the server restarted");
      await Promise.all(restarts);
      assert.equal(made.length, 1, "the first try made the job");
      assert.equal(r.id, made[0]);
      assert.equal(r.replayed, true, "the retry was answered as a replay");
      assert.deepEqual((await c.list({ queue: "idem" })).jobs.map((j) => j.id), [r.id]);
      // (tries while the server was down reached the proxy too)
      const keys = proxy.requestKeys;
      assert.ok(keys.length >= 2, `tries: ${keys.join(", ")}`);
      assert.deepEqual(new Set(keys), new Set([keys[0]]), `one key on every try: ${keys.join(", ")}`);
      assert.match(keys[0]!, /^tq1[0-9a-f]{27}$/);

      // the same through submitMany: one request, made, its answer lost, sent again
      c.close(); // the next request opens a connection, whose answer the proxy drops
      proxy.dropAnswers = 1;
      const many = await c.submitMany([{ type: "Many", args: 1 }, { type: "Many", args: 2 }]);
      assert.equal(restarts.length, 2);
      await Promise.all(restarts);
      assert.ok(many.every((m) => m.ok && m.replayed));
      const listed = (await c.list({ queue: "idem", type: "Many" })).jobs.map((j) => j.id).sort((x, y) => x - y);
      assert.deepEqual(many.map((m) => (m.ok ? m.id : 0)).sort((x, y) => x - y), listed);
      assert.equal(listed.length, 2);
      const k2 = proxy.requestKeys.slice(keys.length);
      assert.ok(k2.length >= 2, `tries: ${k2.join(", ")}`);
      assert.deepEqual(new Set(k2), new Set([k2[0]]), `one key on every try: ${k2.join(", ")}`);
      assert.notEqual(k2[0], keys[0]);
    } finally {
      c.close();
      direct.close();
      await proxy.close();
      await s.close();
    }
  });

  it("a submit that fails over to another server carries the same Idempotency-Key there", async () => {
    const a = await Server.start();
    const b = await Server.start();
    const pa = new Proxy(() => a.port);
    const pb = new Proxy(() => b.port);
    await pa.listen();
    await pb.listen();
    const c = new Client({ servers: [pa.url, pb.url], tenant: "acme", queue: "fo", failoverBudgetMs: 5_000 });
    try {
      pa.dropAnswers = 1; // a makes the job, its answer is lost: the retry goes to b
      const r = await c.submit({ type: "T" });
      assert.equal(c.currentServer, pb.url);
      assert.ok(r.id > 0);
      const [ka] = pa.requestKeys;
      assert.deepEqual(pb.requestKeys, [ka]);
      assert.match(ka ?? "", /^tq1[0-9a-f]{27}$/);
    } finally {
      c.close();
      await pa.close();
      await pb.close();
      await a.close();
      await b.close();
    }
  });
});

describe("acks whose answer was lost", () => {
  it("an ack sent again after its answer was lost is answered 200 (the job succeeded)", async () => {
    const s = await Server.start();
    const proxy = new Proxy(() => s.port);
    await proxy.listen();
    const direct = s.client({ tenant: "acme", queue: "acks" });
    const via = new Client({ servers: proxy.url, failoverBudgetMs: 5_000 });
    try {
      const r = await direct.submit({ type: "T" });
      const l = await direct.lease({ queues: ["acks"], max: 1 });
      proxy.dropAnswers = 1; // the ack reaches the server; its answer is lost
      const res = await via.ack(r.id, l.jobs[0]!.token, { result: 1 });
      assert.ok(res.ok);
      if (res.ok) assert.equal(res.state, "succeeded");
      assert.equal(proxy.sent.filter((t) => t.includes(`POST /v1/jobs/${r.id}/ack `)).length, 2, "the ack was sent twice");
      const job = await direct.get(r.id);
      assert.equal(job.state, "succeeded");
      assert.equal(job.result, 1);
      // the same for a fail that kills the job
      const f = await direct.submit({ type: "T" });
      const lf = await direct.lease({ queues: ["acks"], max: 1 });
      via.close(); // a new connection, whose answer the proxy drops
      proxy.dropAnswers = 1;
      const fr = await via.fail(f.id, lf.jobs[0]!.token, { error: "no", retry: false });
      assert.ok(fr.ok && fr.state === "dead", JSON.stringify(fr));
      assert.equal(proxy.sent.filter((t) => t.includes(`POST /v1/jobs/${f.id}/fail `)).length, 2, "the fail was sent twice");
      assert.equal((await direct.get(f.id)).state, "dead");
    } finally {
      direct.close();
      via.close();
      await proxy.close();
      await s.close();
    }
  });
});

describe("leader following", () => {
  const pg = process.env["TENQ_TEST_PG_URL"];
  const need = pg ? false : process.env["CI"] ? false : "needs TENQ_TEST_PG_URL (run under tests/with-pg.sh)";
  it("a standby redirects (307) to the leader, which the client adds and keeps", { skip: need }, async () => {
    if (!pg) throw new Error("TENQ_TEST_PG_URL is not set: two servers need one PostgreSQL (tests/with-pg.sh)");
    const first = await Server.start({ store: pg, args: ["--leader-ttl", "2s"] });
    await sleep(300);
    const second = await Server.start({ store: pg, args: ["--leader-ttl", "2s"] });
    try {
      const role = async (s: Server): Promise<string> => {
        const one = new Client({ servers: s.url, failoverBudgetMs: 0 });
        try {
          return String((await one.health()).role);
        } finally {
          one.close();
        }
      };
      await until(async () => (await role(first)) === "leader" || (await role(second)) === "leader", "a leader");
      const leader = (await role(first)) === "leader" ? first : second;
      const standby = leader === first ? second : first;
      await until(async () => (await role(standby)) === "standby", "a standby");
      const direct = new Client({ servers: standby.url, failoverBudgetMs: 0 });
      const raw = await direct.health();
      direct.close();
      assert.equal(raw["leader"], leader.url);

      const c = new Client({ servers: standby.url, tenant: "acme", queue: "lead" });
      const r = await c.submit({ type: "T", args: { x: 1 } });
      assert.deepEqual(c.servers, [standby.url, leader.url]);
      assert.equal(c.currentServer, leader.url);
      const page = await c.list({ queue: "lead", type: "T" }); // a GET with a query, redirected
      assert.deepEqual(page.jobs.map((j) => j.id), [r.id]);

      // the leader gone and no one named: not_leader or a connection error, then the budget
      await leader.kill("SIGKILL");
      const lost = new Client({ servers: standby.url, tenant: "acme", queue: "lead", failoverBudgetMs: 800 });
      const got = await lost.submit({ type: "T" }).then(
        () => "made",
        (e: unknown) => e,
      );
      // the standby may take over within the budget; else the error is typed
      if (got !== "made") assert.ok(got instanceof NotLeaderError || got instanceof ConnectionError, String(got));
      c.close();
      lost.close();
    } finally {
      await first.close();
      await second.close();
    }
  });
});
