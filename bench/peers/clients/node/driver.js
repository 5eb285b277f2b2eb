#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
// W1 (blank jobs) for the Node client library of tenq, and for BullMQ:
// N blank jobs enqueued in bulk (timed), then drained by a worker with
// concurrency C (timed from the worker's start to the last outcome
// acknowledged). Prints one JSON line. See README.md here.
//
// As a driver of the peer benchmark (bench/peers/README.md, "The driver
// contract"; bench/peers/plugins/tenq_client_node.py runs it as `tenq-node`):
//   driver.js --system tenq-node --workload W1 --url http://127.0.0.1:PORT --concurrency 5 --jobs 100000
// By hand (--server and --redis are other names for --url):
//   driver.js --system tenq-node --jobs 100000 --concurrency 5 --server http://127.0.0.1:PORT
//   driver.js --system bullmq    --jobs 100000 --concurrency 5 --redis redis://127.0.0.1:PORT
// tenq-node only: --prefetch auto|N (default: the library's, auto),
//   --outcomes separate|with-lease (default: the library's, separate).
'use strict';

const path = require('node:path');
const { performance } = require('node:perf_hooks');

const repo = path.resolve(__dirname, '../../../..');
const opts = {
  system: '', workload: 'W1', jobs: 100000, concurrency: 5, url: '', server: '', redis: '',
  prefetch: '', outcomes: '', timeout: 600,
};
{
  const a = process.argv.slice(2);
  for (let i = 0; i < a.length; i += 2) {
    const k = a[i].replace(/^--/, '');
    if (!(k in opts)) fail(`unknown option ${a[i]}`);
    if (a[i + 1] === undefined) fail(`missing value for ${a[i]}`);
    opts[k] = typeof opts[k] === 'number' ? Number(a[i + 1]) : a[i + 1];
  }
  opts.url = opts.url || opts.server || opts.redis;
  if (opts.workload !== 'W1')
    fail(`only W1 is measured with the Node client library (${opts.system || 'tenq-node'}), not ${opts.workload}; ` +
      'the other workloads run on the C driver (tenq-sqlite)', 2);
}

function fail(msg, code = 1) {
  process.stderr.write(`driver: ${msg}\n`);
  process.exit(code);
}

const now = () => performance.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(pred, what) {
  const end = now() + opts.timeout * 1000;
  while (!pred()) {
    if (now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}

// ------------------------------------------------------------------ tenq
async function tenqNode() {
  if (!opts.url) fail('--url http://HOST:PORT (a tenq server) is required for tenq-node');
  let lib;
  try {
    lib = require(path.join(repo, 'clients/node'));
  } catch (e) {
    fail(`cannot load clients/node (build it: cd clients/node && npm ci): ${e.message}`);
  }
  const { Tenq } = lib;
  const n = opts.jobs;
  const tenq = new Tenq({ servers: opts.url, tenant: 'acme', queue: 'bench', requestTimeoutMs: 120000 });
  const before = await tenq.client.call('GET', '/v1/queues/bench').catch(() => ({ succeeded_total: 0 }));

  const specs = new Array(n);
  for (let i = 0; i < n; i++) specs[i] = { type: 'blank' };
  const t0 = now();
  const res = await tenq.client.submitMany(specs);
  const t1 = now();
  const made = res.filter((r) => r.ok && r.created).length;
  if (made !== n) throw new Error(`${made} jobs made, expected ${n}`);

  // every job runs its handler, which notes its id: each must run once
  const seen = new Set();
  let runs = 0;
  tenq.handle('blank', (_args, ctx) => {
    runs++;
    seen.add(ctx.id);
  });
  let acked = 0;
  const wo = {
    concurrency: opts.concurrency,
    logger: null,
    handleSignals: false,
    onReported: (results) => {
      for (const r of results) if (r.ok) acked++;
    },
  };
  if (opts.prefetch !== '') wo.prefetch = opts.prefetch === 'auto' ? 'auto' : Number(opts.prefetch);
  if (opts.outcomes !== '') wo.outcomes = opts.outcomes;
  const worker = tenq.worker(wo);
  const t2 = now();
  const running = worker.run();
  await until(() => acked >= n, `${n} outcomes acknowledged`);
  const t3 = now();
  await worker.stop();
  const stats = await running;
  if (seen.size !== n || runs !== n) throw new Error(`${seen.size} distinct jobs ran ${runs} times, expected ${n}`);
  const q = await tenq.client.call('GET', '/v1/queues/bench');
  const left = q.ready + q.scheduled + q.blocked + q.leased + q.running;
  if (q.succeeded_total - (before.succeeded_total || 0) !== n || left !== 0)
    throw new Error(`the server counts ${q.succeeded_total} succeeded and ${left} unfinished`);
  tenq.close();
  const set = (k, dflt) => (wo[k] === undefined ? `${dflt} (the default)` : String(wo[k]));
  return {
    t_enqueue: t1 - t0,
    t_drain: t3 - t2,
    driver_note: `Node, the tenq client library (clients/node): client.submitMany (10,000 jobs a request, ` +
      `2 requests in flight, one Idempotency-Key header a request); Worker concurrency ${opts.concurrency}, ` +
      `prefetch ${set('prefetch', 'auto')}, outcomes ${set('outcomes', 'separate')}`,
    worker: stats,
  };
}

// ------------------------------------------------------------------ BullMQ
async function bullmq() {
  if (!opts.url) fail('--url redis://HOST:PORT is required for bullmq');
  let mq;
  try {
    mq = require(path.join(repo, 'bench/peers/node/node_modules/bullmq'));
  } catch (e) {
    fail(`cannot load bullmq (run bench/peers/setup.sh): ${e.message}`);
  }
  const { Queue, Worker } = mq;
  const u = new URL(opts.url);
  const connection = { host: u.hostname, port: Number(u.port), maxRetriesPerRequest: null };
  const JOB_OPTS = { removeOnComplete: true, removeOnFail: true };
  const n = opts.jobs;
  const queue = new Queue('w1', { connection });
  await queue.waitUntilReady();
  await queue.obliterate({ force: true });

  const t0 = now();
  for (let i = 0; i < n; i += 1000) {
    const m = Math.min(1000, n - i);
    await queue.addBulk(Array.from({ length: m }, () => ({ name: 'blank', data: {}, opts: JOB_OPTS })));
  }
  const t1 = now();
  const waiting = (await queue.getJobCounts('wait')).wait;
  if (waiting !== n) throw new Error(`${waiting} jobs queued, expected ${n}`);

  const seen = new Set();
  let completed = 0;
  const t2 = now();
  const worker = new Worker('w1', async (job) => { seen.add(job.id); }, { connection, concurrency: opts.concurrency, autorun: false });
  worker.on('completed', () => completed++);
  worker.on('error', (e) => process.stderr.write(`bullmq worker: ${e.message}\n`));
  worker.run();
  await until(() => completed >= n, `${n} jobs completed`);
  const t3 = now();
  await worker.close();
  if (seen.size !== n) throw new Error(`${seen.size} distinct jobs ran, expected ${n}`);
  const c = await queue.getJobCounts('wait', 'active', 'delayed', 'failed');
  if (c.wait + c.active + c.delayed + c.failed !== 0) throw new Error(`jobs left in Redis: ${JSON.stringify(c)}`);
  await queue.close();
  return {
    t_enqueue: t1 - t0,
    t_drain: t3 - t2,
    driver_note: `Queue.addBulk (1,000 jobs a call); Worker concurrency ${opts.concurrency}; removeOnComplete/removeOnFail`,
  };
}

async function main() {
  // tenq-node and its variants (tenq-node-prefetch0: the same with --prefetch 0)
  const run = opts.system.startsWith('tenq-node') ? tenqNode : opts.system === 'bullmq' ? bullmq : null;
  if (!run) fail(`--system must be tenq-node (or a variant of it) or bullmq, not "${opts.system}"`);
  const r = await run();
  const n = opts.jobs;
  const enq = n / (r.t_enqueue / 1000);
  const drain = n / (r.t_drain / 1000);
  const out = {
    system: opts.system, workload: 'W1', concurrency: opts.concurrency, jobs: n,
    enqueue_jobs_per_s: Math.round(enq * 10) / 10, drain_jobs_per_s: Math.round(drain * 10) / 10,
    ms_per_job: Math.round((r.t_drain / n) * 1e4) / 1e4,
    // the names of clients-spec.md's driver line
    enqueue_per_s: Math.round(enq), drain_per_s: Math.round(drain),
    driver_note: r.driver_note,
  };
  process.stdout.write(JSON.stringify(out) + '\n');
  process.exit(0);
}

main().catch((e) => fail(e && e.stack ? e.stack : String(e)));
