// A real `tenq serve` for the browser tests: started on port 0 in a fresh
// directory with an admin token, filled with data through the public API,
// and stopped at the end.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export const ADMIN_TOKEN = 'browser-test-admin-token-0123456789';

// The job states, read from their one table (TENQ_STATE_TABLE in
// include/tenq/states.h), and those counted per queue and tenant (the LIVE
// ones): what the page's lists of states are checked against.
export function engineStates() {
  const text = readFileSync(new URL('../../include/tenq/states.h', import.meta.url), 'utf8');
  const rows = [...text.matchAll(/XX\((\w+), (\w+), (\d+), (LIVE|FINAL), ([01]),/g)];
  const all = rows.map((m) => m[2]);
  if (!all.includes('succeeded')) throw new Error('cannot read TENQ_STATE_TABLE');
  return { all, counted: rows.filter((m) => m[4] === 'LIVE').map((m) => m[2]) };
}

export class Server {
  // adminToken null: a server with no tokens (open on loopback)
  constructor(bin, { adminToken = ADMIN_TOKEN } = {}) {
    this.bin = bin;
    this.adminToken = adminToken;
    this.dir = mkdtempSync(join(tmpdir(), 'tenq-browser-'));
    this.proc = null;
    this.base = null;
    this.log = '';
  }

  async start() {
    const portFile = join(this.dir, 'port');
    const env = { ...process.env };
    for (const k of Object.keys(env)) if (k.startsWith('TENQ_')) delete env[k];
    if (this.adminToken) env.TENQ_ADMIN_TOKEN = this.adminToken;
    this.proc = spawn(this.bin, ['serve', '--listen', '127.0.0.1:0', '--store', 'sqlite:' + join(this.dir, 'tenq.db'),
      '--port-file', portFile, '--sqlite-sync', 'normal', '--log-level', 'warn'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    this.proc.stdout.on('data', (d) => { this.log += d; });
    this.proc.stderr.on('data', (d) => { this.log += d; });
    const deadline = Date.now() + 15000;
    while (Date.now() < deadline) {
      if (this.proc.exitCode !== null) throw new Error('tenq serve exited: ' + this.log);
      if (existsSync(portFile)) {
        const port = readFileSync(portFile, 'utf8').trim();
        if (port) {
          this.base = `http://127.0.0.1:${port}`;
          try {
            const r = await fetch(this.base + '/healthz');
            if (r.ok) return this;
          } catch { /* not yet */ }
        }
      }
      await sleep(50);
    }
    throw new Error('tenq serve did not start: ' + this.log);
  }

  async stop() {
    if (this.proc && this.proc.exitCode === null) {
      this.proc.kill('SIGTERM');
      const done = new Promise((r) => this.proc.once('exit', r));
      const t = setTimeout(() => this.proc.kill('SIGKILL'), 5000);
      await done;
      clearTimeout(t);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  // The API as a script uses it.  Returns {status, body}.
  async call(method, path, body, token = ADMIN_TOKEN) {
    const headers = {};
    if (token) headers.Authorization = 'Bearer ' + token;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(this.base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    let json = null;
    try { json = text ? JSON.parse(text) : null; } catch { json = text; }
    return { status: r.status, body: json, headers: r.headers };
  }

  // Like call, but fails unless the answer is 2xx.
  async api(method, path, body, token) {
    const r = await this.call(method, path, body, token);
    if (r.status < 200 || r.status > 299) throw new Error(`${method} ${path} -> ${r.status} ${JSON.stringify(r.body)}`);
    return r.body;
  }

  async submit(job) { return this.api('POST', '/v1/jobs', job); }

  // Leases up to max jobs of the given queues (and types).
  async lease(queues, max = 10, types) {
    const body = { worker: 'test-host/pid-4242', queues, max, wait_ms: 0 };
    if (types) body.types = types;
    return (await this.api('POST', '/v1/lease', body)).jobs;
  }
}

// The data the tests look at.  Tenants acme, globex and initech; queues
// reports, mail and digest (merging).  Returns the ids worth knowing.
export async function seed(s) {
  const ids = {};
  await s.api('PUT', '/v1/tenants/acme', { slots: 4, weight: 2 });
  await s.api('PUT', '/v1/tenants/globex', { slots: 2, weight: 1 });
  await s.api('PUT', '/v1/tenants/initech', { slots: null, weight: 1 });
  await s.api('PUT', '/v1/queues/reports', { order: 'fair', max_attempts: 5 });
  await s.api('PUT', '/v1/queues/mail', { lease_ms: 900000, backoff: 'exponential', backoff_base_ms: 2000 });
  await s.api('PUT', '/v1/queues/digest', { merge: true });

  // acme: reports in two lanes, mail, a delayed job
  ids.acmeFirst = (await s.submit({ tenant: 'acme', queue: 'reports', type: 'DataReport.execute', args: { report_id: 42, format: 'pdf', pages: [1, 2, 3] }, key: 'report:42' })).id;
  for (let i = 0; i < 3; i++) await s.submit({ tenant: 'acme', queue: 'reports', type: 'DataReport.execute', args: { report_id: 42, rerun: i }, key: 'report:42' });
  for (let i = 0; i < 2; i++) await s.submit({ tenant: 'acme', queue: 'reports', type: 'DataReport.execute', args: { report_id: 7, rerun: i }, key: 'report:7' });
  for (let i = 0; i < 6; i++) await s.submit({ tenant: 'acme', queue: 'mail', type: 'Mailer.deliver', args: { to: `user${i}@acme.example`, template: 'welcome' } });
  ids.acmeDelayed = (await s.submit({ tenant: 'acme', queue: 'mail', type: 'Mailer.digest', args: { week: 12 }, run_at: Date.now() + 3600e3 })).id;
  // a job waiting for its parent (the delayed one)
  ids.acmeWaiting = (await s.submit({ tenant: 'acme', queue: 'mail', type: 'Mailer.followup', args: { week: 12 }, depends_on: [ids.acmeDelayed] })).id;
  // merging: three payloads into one job
  for (let i = 0; i < 3; i++) ids.acmeDigest = (await s.submit({ tenant: 'acme', queue: 'digest', type: 'Digest.build', key: 'daily', args: { item: i }, score: 10 - i })).id;

  // globex: its own data, which an acme token must never show
  for (let i = 0; i < 4; i++) await s.submit({ tenant: 'globex', queue: 'reports', type: 'GlobexLedger.reconcile', args: { ledger: 'GLX-SECRET-' + i }, key: 'globex-ledger' });
  for (let i = 0; i < 5; i++) await s.submit({ tenant: 'globex', queue: 'mail', type: 'GlobexMailer.blast', args: { list: 'globex-vip', n: i } });
  // a queue only globex uses: the API lists its name to every tenant token,
  // the page must not
  await s.submit({ tenant: 'globex', queue: 'globex-payroll', type: 'Payroll.run', args: { month: 11 } });
  // initech: a few
  for (let i = 0; i < 3; i++) await s.submit({ tenant: 'initech', queue: 'mail', type: 'Tps.report', args: { cover: true, i } });

  // work: succeed some, kill some, leave some running and leased
  const mail = await s.lease(['mail'], 5, ['Mailer.deliver']);
  for (const [n, j] of mail.entries()) {
    await s.api('POST', `/v1/jobs/${j.id}/start`, { token: j.token });
    if (n === 0) ids.acmeDone = j.id;
    if (n < 2) await s.api('POST', `/v1/jobs/${j.id}/ack`, { token: j.token, result: { delivered: true, message_id: `<m${j.id}@acme>` }, stats: { smtp_ms: 120 + n } });
    else if (n < 4) await s.api('POST', `/v1/jobs/${j.id}/fail`, { token: j.token, error: `SMTPError: 550 mailbox unavailable (job ${j.id})\n  at deliver (mailer.rb:88)`, retry: false });
    // the fifth stays running
  }
  const reports = await s.lease(['reports'], 10);
  for (const j of reports) {
    if (j.tenant === 'acme' && j.args.report_id === 42) {
      await s.api('POST', `/v1/jobs/${j.id}/start`, { token: j.token });
      await s.api('POST', `/v1/jobs/${j.id}/heartbeat`, { token: j.token, progress: { page: 2, of: 3 } });
      ids.acmeRunning = j.id;
    } else if (j.tenant === 'globex') {
      await s.api('POST', `/v1/jobs/${j.id}/fail`, { token: j.token, error: 'GlobexLedgerError: GLX-SECRET ledger is locked', retry: false });
      ids.globexDead = j.id;
    }
    // acme report:7 stays leased
  }
  const gmail = await s.lease(['mail'], 2, ['GlobexMailer.blast']);
  for (const j of gmail) await s.api('POST', `/v1/jobs/${j.id}/fail`, { token: j.token, error: 'GlobexMailer: quota exceeded for globex-vip', retry: false });
  const dead = await s.api('GET', '/v1/morgue?tenant=acme&sort=id');
  ids.acmeDead = dead.jobs.map((j) => j.id);
  return ids;
}

// A steady trickle of work for the charts: tenant initech submits, a worker
// leases, acks most and fails some.  Bounded: it stops by itself.
export class Workload {
  constructor(s, { maxSeconds = 150 } = {}) {
    this.s = s;
    this.until = Date.now() + maxSeconds * 1000;
    this.paused = false;
    this.stopped = false;
    this.busy = false;
    this.n = 0;
    this.loop = this.run();
  }

  async run() {
    while (!this.stopped && Date.now() < this.until) {
      if (!this.paused) {
        this.busy = true;
        try {
          const jobs = [];
          for (let i = 0; i < 4; i++) jobs.push({ tenant: 'initech', queue: i % 2 ? 'mail' : 'reports', type: 'Tps.cover', args: { n: this.n++ } });
          await this.s.api('POST', '/v1/jobs', { jobs });
          const got = await this.s.lease(['reports', 'mail'], 8, ['Tps.cover']);
          const outcomes = got.map((j) => (Math.random() < 0.15
            ? { id: j.id, token: j.token, ok: false, error: 'flaky printer', retry_in_ms: 1000 }
            : { id: j.id, token: j.token, ok: true, result: { pages: 3 } }));
          if (outcomes.length) await this.s.api('POST', '/v1/outcomes', { outcomes });
        } catch (e) {
          if (!this.stopped) process.stderr.write('workload: ' + e.message + '\n');
        }
        this.busy = false;
      }
      await sleep(250);
    }
  }

  // Stops and drains: every job of the workload finished, none in flight,
  // so that the counts hold still.
  async pause() {
    this.paused = true;
    while (this.busy) await sleep(20);
    for (let k = 0; k < 50; k++) {
      const got = await this.s.lease(['reports', 'mail'], 100, ['Tps.cover']);
      if (got.length) {
        await this.s.api('POST', '/v1/outcomes', { outcomes: got.map((j) => ({ id: j.id, token: j.token, ok: true })) });
        continue;
      }
      const t = await this.s.api('GET', '/v1/tenants/initech');
      if (t.scheduled === 0 && t.leased === 0 && t.running === 0) return;
      await sleep(200);
    }
    throw new Error('the workload did not drain');
  }

  resume() { this.paused = false; }

  async stop() {
    this.stopped = true;
    await this.loop;
  }
}
