#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// Jobs submitted inside an application's own PostgreSQL transaction, side by
// side on one PostgreSQL: tenq (tenq.submit / tenq.submit_many), graphile-worker
// (graphile_worker.add_job / add_jobs) and pg-boss (send / insert with the
// transaction's client as its db). Run by bench/tx/run.sh (`make bench-tx`),
// which starts the PostgreSQL and tenq; the npm packages are bench/peers/node's.
//
//   node tx_bench.js --pg URL --tenq-db URL --tenq http://127.0.0.1:PORT
//        [--seconds 5] [--conc 8] [--batch 1000] [--batches 100] [--latency 2000]
//        [--runs 1] [--commit sync|async]
//
// singles: --conc connections, each a loop of BEGIN; one job; COMMIT for --seconds;
// batches: one connection, --batches transactions of --batch jobs each;
// latency (tenq): COMMIT returned -> the job's lease answered to a worker that
// was already waiting (a long poll), one job at a time.
'use strict';

const path = require('node:path');
const http = require('node:http');
const { performance } = require('node:perf_hooks');
const modules = path.join(__dirname, '..', 'peers', 'node', 'node_modules');
const { Client } = require(path.join(modules, 'pg'));

const opts = { seconds: 5, conc: 8, batch: 1000, batches: 100, latency: 2000, runs: 1,
  commit: 'sync' };
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    opts[k] = /^\d+$/.test(a[i + 1]) ? Number(a[i + 1]) : a[i + 1];
  }
  for (const k of ['pg', 'tenq-db', 'tenq']) if (!opts[k]) throw new Error(`--${k} is required`);
}
const now = () => performance.now();
const log = (...a) => console.error('[tx-bench]', ...a);

// --commit async: the applications' transactions commit without waiting for their WAL
// flush (synchronous_commit = off: a crash may lose the last commits, jobs and business
// rows alike), which shows what each queue costs beside PostgreSQL's own fsync.
async function connect(url) {
  const c = new Client({ connectionString: url });
  await c.connect();
  if (opts.commit === 'async') await c.query('SET synchronous_commit = off');
  return c;
}

async function createDb(name) {
  const admin = await connect(opts.pg);
  await admin.query(`DROP DATABASE IF EXISTS ${name}`);
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(opts.pg);
  u.pathname = '/' + name;
  return u.toString();
}

// ---------------------------------------------------------------- the systems
// Each: setup() -> url; one(client, n); many(client, ns); count(client) jobs stored.
const systems = {
  tenq: {
    note: 'tenq.submit (singles), tenq.submit_many (batches); the leader takes them in by LISTEN',
    async setup() { return opts['tenq-db']; },
    one: (c, n) => c.query("SELECT tenq.submit('acme', 'txb', 'T', $1::jsonb)",
      [JSON.stringify({ n })]),
    many: (c, ns) => c.query('SELECT tenq.submit_many($1::jsonb)', [JSON.stringify(
      ns.map((n) => ({ tenant: 'acme', queue: 'txb', type: 'T', args: { n } })))]),
    async taken(c) { // every committed job taken in by the server
      const { rows } = await c.query('SELECT count(*)::int AS c FROM tenq.inbox');
      return rows[0].c === 0;
    },
  },
  'graphile-worker': {
    note: 'graphile_worker.add_job (singles), add_jobs (batches)',
    async setup() {
      const url = await createDb('txb_gw');
      const gw = require(path.join(modules, 'graphile-worker'));
      const quiet = new gw.Logger(() => () => {});
      await gw.runMigrations({ connectionString: url, logger: quiet });
      return url;
    },
    one: (c, n) => c.query("SELECT graphile_worker.add_job('T', $1::json)",
      [JSON.stringify({ n })]),
    many: (c, ns) => c.query(
      `SELECT count(*) FROM graphile_worker.add_jobs(array(SELECT json_populate_recordset(
         null::graphile_worker.job_spec, $1::json)))`,
      [JSON.stringify(ns.map((n) => ({ identifier: 'T', payload: { n } })))]),
    async taken() { return true; },
  },
  'pg-boss': {
    note: "boss.send (singles), boss.insert (batches), each with the transaction's client as db",
    async setup() {
      const url = await createDb('txb_boss');
      const PgBoss = require(path.join(modules, 'pg-boss'));
      this.boss = new PgBoss({ connectionString: url, schedule: false, supervise: false });
      this.boss.on('error', (e) => log('pg-boss', e.message));
      await this.boss.start();
      await this.boss.createQueue('txb');
      return url;
    },
    db: (c) => ({ executeSql: (text, values) => c.query(text, values) }),
    one(c, n) { return this.boss.send('txb', { n }, { db: this.db(c) }); },
    many(c, ns) {
      return this.boss.insert(ns.map((n) => ({ name: 'txb', data: { n } })), { db: this.db(c) });
    },
    async taken() { return true; },
    async close() { await this.boss.stop({ graceful: false, wait: true, timeout: 2000 }); },
  },
};

// ---------------------------------------------------------------- the workloads
async function singles(sys, url) {
  const clients = await Promise.all(Array.from({ length: opts.conc }, () => connect(url)));
  let n = 0;
  const end = now() + opts.seconds * 1000;
  const t0 = now();
  await Promise.all(clients.map(async (c) => {
    while (now() < end) {
      await c.query('BEGIN');
      await sys.one(c, n++);
      await c.query('COMMIT');
    }
  }));
  const s = (now() - t0) / 1000;
  await until(() => sys.taken(clients[0]));
  const taken = (now() - t0) / 1000;
  await Promise.all(clients.map((c) => c.end()));
  return { jobs: n, per_s: n / s, taken_per_s: n / taken };
}

async function batches(sys, url) {
  const c = await connect(url);
  const ns = Array.from({ length: opts.batch }, (_, i) => i);
  const t0 = now();
  for (let b = 0; b < opts.batches; b++) {
    await c.query('BEGIN');
    await sys.many(c, ns);
    await c.query('COMMIT');
  }
  const s = (now() - t0) / 1000;
  await until(() => sys.taken(c));
  const taken = (now() - t0) / 1000;
  await c.end();
  const jobs = opts.batch * opts.batches;
  return { jobs, per_s: jobs / s, taken_per_s: jobs / taken };
}

async function until(pred) {
  const end = now() + 120000;
  while (!(await pred())) {
    if (now() > end) throw new Error('the server did not take the jobs in within 120 s');
    await new Promise((r) => setTimeout(r, 2));
  }
}

// tenq only: commit -> lease, the worker long-polling before the commit.
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
function post(p, body) {
  return new Promise((resolve, reject) => {
    const data = JSON.stringify(body);
    const r = http.request(opts.tenq + p, {
      method: 'POST', agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(data) },
    }, (res) => {
      let b = '';
      res.on('data', (d) => { b += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(b)) :
        reject(new Error(`${p}: ${res.statusCode} ${b}`))));
    });
    r.on('error', reject);
    r.end(data);
  });
}

async function latency(url) {
  const c = await connect(url);
  const ms = [];
  let outcomes = [];
  for (let i = 0; i < opts.latency; i++) {
    const body = { worker: 'bench', queues: ['txlat'], max: 1, wait_ms: 5000 };
    if (outcomes.length) body.outcomes = outcomes;
    const lease = post('/v1/lease', body);
    await new Promise((r) => setTimeout(r, 1)); // the long poll is waiting
    await c.query('BEGIN');
    await c.query("SELECT tenq.submit('acme', 'txlat', 'T')");
    await c.query('COMMIT');
    const t = now();
    const got = await lease;
    ms.push(now() - t);
    if (got.jobs.length !== 1) throw new Error('a committed job was not leased within 5 s');
    outcomes = [{ id: got.jobs[0].id, token: got.jobs[0].token, ok: true }];
  }
  await post('/v1/outcomes', { outcomes });
  await c.end();
  ms.sort((a, b) => a - b);
  const q = (p) => ms[Math.min(ms.length - 1, Math.ceil(p * ms.length) - 1)];
  return { n: ms.length, p50_ms: q(0.5), p99_ms: q(0.99), max_ms: ms[ms.length - 1] };
}

(async () => {
  const out = { commit: opts.commit, conc: opts.conc, seconds: opts.seconds, batch: opts.batch,
    batches: opts.batches, systems: {} };
  const urls = {};
  for (const [name, sys] of Object.entries(systems)) urls[name] = await sys.setup();
  // interleaved: each run takes every system in turn
  for (let run = 0; run < opts.runs; run++) {
    for (const [name, sys] of Object.entries(systems)) {
      const r = out.systems[name] || (out.systems[name] = { note: sys.note, singles: [], batches: [] });
      r.singles.push(await singles(sys, urls[name]));
      r.batches.push(await batches(sys, urls[name]));
      log(name, 'run', run, JSON.stringify(r.singles.at(-1)), JSON.stringify(r.batches.at(-1)));
    }
  }
  out.systems.tenq.latency = await latency(urls.tenq);
  for (const sys of Object.values(systems)) if (sys.close) await sys.close();
  console.log(JSON.stringify(out, null, 1));
})().catch((e) => { console.error(e); process.exit(1); });
