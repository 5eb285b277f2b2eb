#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// The Node drivers of the peer benchmark: BullMQ (Redis), graphile-worker and
// pg-boss (PostgreSQL). The contract (arguments, JSON printed on stdout) is in
// bench/peers/README.md.
//
//   node driver.js --system bullmq|graphile-worker|pg-boss --workload W1 \
//        --url redis://127.0.0.1:PORT | postgresql://... [--concurrency 5] [sizes]
'use strict';

process.env.NO_LOG_SUCCESS = '1'; // graphile-worker: no log line per job

const { performance } = require('node:perf_hooks');

// ---------------------------------------------------------------- options
const opts = {
  concurrency: 5, jobs: 100000, 'interval-ms': 5, flood: 50000, probe: 200,
  keys: 1000, 'per-key': 20, burst: 5, limit: 3, 'work-ms': 2, backlog: 10000, measure: 20000, timeout: 1800,
};
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    const v = a[i + 1];
    if (v === undefined) throw new Error(`missing value for ${a[i]}`);
    opts[k] = /^-?\d+(\.\d+)?$/.test(v) && !['url', 'system', 'workload'].includes(k) ? Number(v) : v;
  }
  for (const k of ['system', 'workload', 'url']) if (!opts[k]) throw new Error(`--${k} is required`);
}
const CONC = opts.concurrency;

// pg-boss: jobs fetched per poll by each of the CONC workers; graphile-worker:
// local queue size. Both can be overridden from the environment.
const PGBOSS_BATCH = Number(process.env.PGBOSS_BATCH || 100);
const PGBOSS_POLL_S = Number(process.env.PGBOSS_POLL_S || 0.5);
const GW_LOCAL_QUEUE = Number(process.env.GW_LOCAL_QUEUE || 500);
// graphile-worker's localQueue runs a named queue's jobs at once (graphile/worker#621, 0.17.3):
// the workloads that rely on named queues running one job at a time (W4, W6) go without it
const GW_NAMED_QUEUES = ['W4', 'W6'].includes(opts.workload);

// ---------------------------------------------------------------- helpers
const nowMs = () => performance.timeOrigin + performance.now(); // wall clock, ms with fraction
const mono = () => performance.now() / 1000;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const log = (...a) => console.error(`[${opts.system}]`, ...a);

function pct(sorted, p) {
  if (!sorted.length) return 0;
  const r = Math.min(sorted.length, Math.max(1, Math.ceil((p / 100) * sorted.length)));
  return sorted[r - 1];
}

async function until(pred, what, timeoutS = opts.timeout, stepMs = 2) {
  const end = mono() + timeoutS;
  while (!(await pred())) {
    if (mono() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(stepMs);
  }
}

// W4 submission order: bursts of BURST consecutive jobs of one key, keys round-robin.
function keyOrder(keys, perKey, burst) {
  burst = Math.min(burst, perKey);
  const out = [];
  for (let round = 0; round * burst < perKey; round++)
    for (let k = 0; k < keys; k++)
      for (let j = 0; j < burst; j++) {
        const q = round * burst + j;
        if (q < perKey) out.push([k, q]);
      }
  return out;
}

function countViolations(keys, perKey, rec) {
  // rec: Map "k:q" -> [start, end]
  let viol = 0;
  for (let k = 0; k < keys; k++)
    for (let q = 1; q < perKey; q++) {
      const [st] = rec.get(`${k}:${q}`);
      const [pst, pen] = rec.get(`${k}:${q - 1}`);
      if (st < pen || st < pst) viol++;
    }
  return viol;
}

// A recorder shared by all systems: the handler calls rec.job(data) at start
// and rec.end(data, tStart) when it returns.
class Recorder {
  constructor() {
    this.lat = []; this.keyed = new Map(); this.done = 0; this.first = null;
    this.running = new Map(); this.maxAtOnce = 0; this.overLimit = 0; // W6: by account
  }
  start(data) {
    const t = nowMs();
    if (this.first === null) this.first = t;
    if (data && data.s !== undefined) this.lat.push(t - data.s);
    if (data && data.a !== undefined) {
      const n = (this.running.get(data.a) || 0) + 1;
      this.running.set(data.a, n);
      if (n > this.maxAtOnce) this.maxAtOnce = n;
      if (n > opts.limit) this.overLimit++;
    }
    return t;
  }
  end(data, t) {
    if (data && data.k !== undefined) this.keyed.set(`${data.k}:${data.q}`, [t, nowMs()]);
    if (data && data.a !== undefined) this.running.set(data.a, this.running.get(data.a) - 1);
    this.done++;
  }
}

// A job's run: W6's jobs (data.a) work for --work-ms (a sleep), the others are blank.
async function runJob(rec, data) {
  const t = rec.start(data);
  if (data && data.a !== undefined && opts['work-ms'] > 0) await sleep(opts['work-ms']);
  rec.end(data, t);
}

// ---------------------------------------------------------------- systems
// Each adapter: setup(), bulk(datas, opts?), one(data), startWorkers(rec, {ordered}),
// settled() (true when the store has no unfinished job), stopWorkers(), size(), close().

function bullmqAdapter() {
  const { Queue, Worker } = require('bullmq');
  const u = new URL(opts.url);
  const connection = { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };
  const JOB_OPTS = { removeOnComplete: true, removeOnFail: true };
  let queue, worker;
  return {
    note: 'Queue.addBulk (1,000 jobs a call); Worker concurrency ' + CONC +
      '; removeOnComplete/removeOnFail: true',
    async setup() {
      queue = new Queue('bench', { connection });
      await queue.waitUntilReady();
    },
    async bulk(datas) {
      for (let i = 0; i < datas.length; i += 1000)
        await queue.addBulk(datas.slice(i, i + 1000).map((data) => ({ name: 'blank', data, opts: JOB_OPTS })));
    },
    async one(data) { await queue.add('blank', data, JOB_OPTS); },
    async startWorkers(rec) {
      worker = new Worker('bench', async (job) => {
        await runJob(rec, job.data);
      }, { connection, concurrency: CONC, autorun: false });
      worker.on('error', (e) => log('worker error', e.message));
      this.completed = 0;
      worker.on('completed', () => { this.completed++; });
      worker.run();
      await worker.waitUntilReady();
    },
    async settled(n) { return this.completed >= n; },
    async stopWorkers() { if (worker) await worker.close(true); worker = null; },
    async count() { return (await queue.getJobCounts('wait')).wait; },
    async close() { if (queue) await queue.close(); },
  };
}

function pgDirect() {
  const { Client } = require('pg');
  return new Client({ connectionString: opts.url });
}

async function schemaBytes(client, schema) {
  const { rows } = await client.query(
    `select coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint as b
       from pg_class c join pg_namespace n on n.oid = c.relnamespace
      where n.nspname = $1 and c.relkind in ('r', 'm')`, [schema]);
  return Number(rows[0].b);
}

function graphileAdapter() {
  const gw = require('graphile-worker');
  const quiet = new gw.Logger(() => (level, message) => { if (level === 'error') log(message); });
  let sql, runner, table;
  const preset = {
    worker: {
      connectionString: opts.url,
      concurrentJobs: CONC,
      maxPoolSize: CONC + 5,
      pollInterval: 2000, // only for future/retried jobs: new jobs arrive by LISTEN/NOTIFY
      ...(GW_NAMED_QUEUES ? {} : { localQueue: { size: GW_LOCAL_QUEUE } }),
      completeJobBatchDelay: 0,
      failJobBatchDelay: 0,
    },
  };
  return {
    note: `graphile_worker.add_jobs (10,000 job_specs a call); run() with concurrentJobs ${CONC}, ` +
      `maxPoolSize ${CONC + 5}, ${GW_NAMED_QUEUES ? 'no localQueue (it breaks named queues, graphile/worker#621)' : `localQueue.size ${GW_LOCAL_QUEUE}`}, completeJobBatchDelay 0, ` +
      'failJobBatchDelay 0, pollInterval 2000 (LISTEN/NOTIFY for new jobs)',
    async setup() {
      await gw.runMigrations({ connectionString: opts.url, logger: quiet });
      sql = pgDirect();
      await sql.connect();
      const { rows } = await sql.query(
        "select to_regclass('graphile_worker._private_jobs') is not null as p");
      table = rows[0].p ? 'graphile_worker._private_jobs' : 'graphile_worker.jobs';
    },
    // datas: objects; a "queue" field becomes the job's queue_name (W4)
    async bulk(datas, { queues } = {}) {
      for (let i = 0; i < datas.length; i += 10000) {
        const specs = datas.slice(i, i + 10000).map((d, j) => ({
          identifier: 'blank', payload: d, queue_name: queues ? queues[i + j] : null,
        }));
        await sql.query(
          `select count(*) from graphile_worker.add_jobs(
             array(select json_populate_recordset(null::graphile_worker.job_spec, $1::json)))`,
          [JSON.stringify(specs)]);
      }
    },
    async one(data) {
      await sql.query(`select graphile_worker.add_job('blank', $1::json)`, [JSON.stringify(data)]);
    },
    async startWorkers(rec) {
      runner = await gw.run({
        preset, logger: quiet, noHandleSignals: true,
        taskList: { blank: async (payload) => { await runJob(rec, payload); } },
      });
    },
    async settled(n, rec) {
      // completed jobs are deleted: done when the table is empty
      return rec.done >= n && (await this.count()) === 0;
    },
    async stopWorkers() { if (runner) await runner.stop(); runner = null; },
    async count() { const { rows } = await sql.query(`select count(*)::int as c from ${table}`); return rows[0].c; },
    async storeBytes() { return schemaBytes(sql, 'graphile_worker'); },
    storeNote: 'PostgreSQL table+index size of schema graphile_worker (on disk / shared buffers)',
    async close() { if (sql) await sql.end(); },
  };
}

function pgbossAdapter() {
  const PgBoss = require('pg-boss');
  let boss, sql;
  const ids = [];
  return {
    note: `boss.insert (10,000 jobs a call); ${CONC} × boss.work(batchSize ${PGBOSS_BATCH}, ` +
      `pollingIntervalSeconds ${PGBOSS_POLL_S}), each worker runs its batch one job at a time`,
    async setup() {
      boss = new PgBoss({ connectionString: opts.url, max: CONC + 5, schedule: false });
      boss.on('error', (e) => log('error', e.message));
      await boss.start();
      await boss.createQueue('bench');
      sql = pgDirect();
      await sql.connect();
    },
    async bulk(datas) {
      for (let i = 0; i < datas.length; i += 10000)
        await boss.insert(datas.slice(i, i + 10000).map((data) => ({ name: 'bench', data })));
    },
    async one(data) { await boss.send('bench', data); },
    async startWorkers(rec) {
      for (let w = 0; w < CONC; w++) {
        ids.push(await boss.work('bench', { batchSize: PGBOSS_BATCH, pollingIntervalSeconds: PGBOSS_POLL_S },
          async (jobs) => {
            for (const job of jobs) await runJob(rec, job.data);
          }));
      }
    },
    async settled(n, rec) {
      if (rec.done < n) return false;
      const { rows } = await sql.query(
        "select count(*)::int as c from pgboss.job where name = 'bench' and state < 'completed'");
      return rows[0].c === 0;
    },
    async stopWorkers() { for (const id of ids.splice(0)) await boss.offWork({ id }); },
    async count() {
      const { rows } = await sql.query(
        "select count(*)::int as c from pgboss.job where name = 'bench' and state = 'created'");
      return rows[0].c;
    },
    async storeBytes() { return schemaBytes(sql, 'pgboss'); },
    storeNote: 'PostgreSQL table+index size of schema pgboss (on disk / shared buffers)',
    async close() {
      if (sql) await sql.end();
      if (boss) await boss.stop({ graceful: false, wait: true, timeout: 2000 });
    },
  };
}

// ---------------------------------------------------------------- workloads
async function main() {
  const make = { bullmq: bullmqAdapter, 'graphile-worker': graphileAdapter, 'pg-boss': pgbossAdapter }[opts.system];
  if (!make) throw new Error(`unknown system ${opts.system}`);
  const sys = make();
  const head = { system: opts.system, workload: opts.workload, concurrency: CONC, driver_note: sys.note };
  await sys.setup();
  let out;
  try {
    out = await run(sys, head);
  } finally {
    await sys.stopWorkers().catch((e) => log('stop', e.message));
    await sys.close().catch((e) => log('close', e.message));
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

async function drain(sys, n, { partial = false } = {}) {
  // starts the workers, waits for n jobs done (and, unless partial, for the
  // store to have no unfinished job left)
  const rec = new Recorder();
  const t0 = mono();
  await sys.startWorkers(rec);
  await until(() => (partial ? rec.done >= n : sys.settled(n, rec)), `${n} jobs`);
  const t1 = mono();
  await sys.stopWorkers();
  return { rec, seconds: t1 - t0 };
}

async function run(sys, head) {
  switch (opts.workload) {
    case 'W1': {
      const n = opts.jobs;
      const t0 = mono();
      await sys.bulk(Array.from({ length: n }, () => ({})));
      const t1 = mono();
      const c = await sys.count();
      if (c !== n) throw new Error(`${c} jobs queued, expected ${n}`);
      const { seconds } = await drain(sys, n);
      return { ...head, jobs: n, enqueue_jobs_per_s: n / (t1 - t0), drain_jobs_per_s: n / seconds,
        ms_per_job: (seconds * 1000) / n };
    }
    case 'W2': {
      const n = opts.jobs;
      const rec = new Recorder();
      await sys.startWorkers(rec);
      await sleep(500);
      const t0 = mono();
      for (let i = 0; i < n; i++) {
        const d = (t0 + (i * opts['interval-ms']) / 1000 - mono()) * 1000;
        if (d > 0) await sleep(d);
        await sys.one({ s: nowMs() });
      }
      await until(() => sys.settled(n, rec), `${n} jobs`);
      const lat = rec.lat.sort((a, b) => a - b);
      return { ...head, jobs: lat.length, interval_ms: opts['interval-ms'], p50_ms: pct(lat, 50),
        p90_ms: pct(lat, 90), p99_ms: pct(lat, 99), max_ms: lat[lat.length - 1] };
    }
    case 'W3': {
      const a = opts.flood, b = opts.probe;
      const rec = new Recorder();
      await sys.startWorkers(rec);
      await sleep(500);
      const t0 = mono();
      await sys.bulk(Array.from({ length: a }, () => ({ t: 'A' })));
      for (let i = 0; i < b; i++) await sys.one({ s: nowMs() });
      await until(() => sys.settled(a + b, rec), `${a + b} jobs`);
      const t1 = mono();
      const lat = rec.lat.sort((x, y) => x - y);
      return { ...head, tenant_slots: 'not supported', a_jobs: a, b_jobs: lat.length,
        b_wait_p50_ms: pct(lat, 50), b_wait_p99_ms: pct(lat, 99), b_wait_max_ms: lat[lat.length - 1],
        total_jobs_per_s: (a + b) / (t1 - t0), note: 'one shared FIFO queue' };
    }
    case 'W4': {
      const keys = opts.keys, per = opts['per-key'];
      const order = keyOrder(keys, per, opts.burst);
      const ordered = opts.system === 'graphile-worker'; // named queues: one job at a time per queue
      await sys.bulk(order.map(([k, q]) => ({ k, q })),
        ordered ? { queues: order.map(([k]) => `k${k}`) } : {});
      const { rec, seconds } = await drain(sys, order.length);
      if (rec.keyed.size !== order.length) throw new Error(`${order.length - rec.keyed.size} W4 jobs missing`);
      return { ...head, ordered, ordering: ordered ? 'queue_name = key (named queues run serially)'
        : 'not supported (run unordered)', keys, per_key: per, jobs: order.length,
        jobs_per_s: order.length / seconds, order_violations: countViolations(keys, per, rec.keyed) };
    }
    case 'W6': {
      // at most LIMIT jobs of one account at once: the W4 order (bursts of one account)
      const accts = opts.keys, per = opts['per-key'];
      const order = keyOrder(accts, per, opts.burst);
      // graphile-worker: LIMIT named queues per account (a named queue runs one job at a
      // time), job q of an account in queue q % LIMIT; no other peer has a per-group limit
      // (BullMQ's groups are BullMQ Pro's)
      const limited = opts.system === 'graphile-worker';
      await sys.bulk(order.map(([a]) => ({ a })),
        limited ? { queues: order.map(([a, q]) => `a${a}:${q % opts.limit}`) } : {});
      const { rec, seconds } = await drain(sys, order.length);
      return { ...head, limited, limiting: limited ? `${opts.limit} named queues per account, job q in queue q % ${opts.limit}`
        : 'not supported (run without a per-account limit)', accounts: accts, per_account: per,
        limit: opts.limit, work_ms: opts['work-ms'], jobs: order.length, jobs_per_s: order.length / seconds,
        max_at_once: rec.maxAtOnce, over_limit: rec.overLimit };
    }
    case 'W5': {
      const bl = opts.backlog, m = Math.min(opts.measure, bl);
      const t0 = mono();
      for (let left = bl; left > 0; left -= 100000)
        await sys.bulk(Array.from({ length: Math.min(left, 100000) }, () => ({})));
      const t1 = mono();
      const { seconds } = await drain(sys, m, { partial: true });
      return { ...head, backlog: bl, measured_jobs: m, fill_jobs_per_s: bl / (t1 - t0), drain_jobs_per_s: m / seconds };
    }
    case 'MEM': {
      const n = opts.jobs;
      const before = sys.storeBytes ? await sys.storeBytes() : null;
      const t0 = mono();
      for (let left = n; left > 0; left -= 100000)
        await sys.bulk(Array.from({ length: Math.min(left, 100000) }, () => ({})));
      const t1 = mono();
      const c = await sys.count();
      if (c !== n) throw new Error(`${c} jobs queued, expected ${n}`);
      const res = { ...head, jobs: n, enqueue_jobs_per_s: n / (t1 - t0) };
      if (sys.storeBytes) {
        const after = await sys.storeBytes();
        Object.assign(res, { store_bytes: after - before, store_bytes_per_job: (after - before) / n,
          store_note: sys.storeNote });
      }
      return res;
    }
    default:
      throw new Error(`unknown workload ${opts.workload}`);
  }
}

main().then(() => process.exit(0), (e) => { log(e.stack || e); process.exit(1); });
