// The dashboard in a real headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core) against a real `tenq serve` that requires
// tokens.  Run: TENQ_BIN=build/tenq node dashboard.test.mjs (or ctest -R
// dashboard_browser).  Screenshots go to docs/screenshots/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium } from 'playwright-core';
import { Server, seed, Workload, ADMIN_TOKEN, engineStates } from './harness.mjs';

const BIN = process.env.TENQ_BIN;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.TENQ_SCREENSHOTS || fileURLToPath(new URL('../../docs/screenshots/', import.meta.url));
if (!BIN) throw new Error('set TENQ_BIN to the tenq binary');

// Playwright gives every launch a fresh --user-data-dir of its own (and
// removes it); these are the other flags for a closed, quiet machine.
const ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];

let srv, ids, wl, browser, admin;
const problems = [];  // console errors and page errors that nobody expected
const requests = [];  // every request the admin page made
const STEP = 20000;   // the longest wait for one thing to show

// ---- helpers ------------------------------------------------------------------------------------

async function eventually(what, fn, timeout = STEP) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v !== false && v !== undefined && v !== null) return v;
      last = new Error('still false');
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`${what}: ${last && last.message}`);
    await sleep(150);
  }
}

// Makes every CSP violation a console error (Chromium logs most of them
// anyway), so that the console watch below sees it.
const CSP_WATCH = () => document.addEventListener('securitypolicyviolation',
  (e) => console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI} ${e.sourceFile}:${e.lineNumber}`));

function watch(page, label, log) {
  page.addInitScript(CSP_WATCH);
  page.on('pageerror', (e) => problems.push(`${label}: page error: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() !== 'error') return;
    // the API's refusals that the page expects (a probe for an open server,
    // a tenant token asking for an admin's list, a job of another tenant)
    if (/Failed to load resource: the server responded with a status of (401|403|404)/.test(m.text())) return;
    problems.push(`${label}: console: ${m.text()}`);
  });
  if (log) {
    page.on('request', async (r) => {
      const entry = { method: r.method(), url: r.url(), headers: null };
      log.push(entry);
      try { entry.headers = await r.allHeaders(); } catch { entry.headers = r.headers(); }
    });
  }
}

async function signIn(page, token) {
  await page.goto(srv.base + '/');
  await page.locator('#login').waitFor({ state: 'visible' });
  await page.fill('#login-token', token);
  await page.press('#login-token', 'Enter');
  await page.locator('#shell').waitFor({ state: 'visible' });
  await live(page);
}

// The page counts its polls in #live's data-polls, and data-busy tells
// whether one is under way (whose data may predate what we wait for).
const pollState = (page) => page.evaluate(() => {
  const d = document.getElementById('live').dataset;
  return { n: Number(d.polls || 0), busy: d.busy === '1' };
});
async function waitPolls(page, n) {
  await eventually('a fresh poll', async () => (await pollState(page)).n >= n);
}

// Waits until the page has finished a poll that started after now.
async function live(page) {
  const s = await pollState(page);
  await waitPolls(page, s.n + (s.busy ? 2 : 1));
}

// Goes to a section (a navigation polls at once) and waits for its data.
async function go(page, hash) {
  const s = await page.evaluate((h) => {
    const d = document.getElementById('live').dataset;
    const r = { n: Number(d.polls || 0), busy: d.busy === '1' };
    location.hash = h;
    return r;
  }, hash);
  await waitPolls(page, s.n + (s.busy ? 2 : 1));
}

async function toast(page, re) {
  await eventually('a toast ' + re, async () => re.test(await page.locator('#toasts').innerText()));
}

async function shot(page, name, fullPage = false) {
  mkdirSync(SHOTS, { recursive: true });
  await page.evaluate(() => document.getElementById('toasts').replaceChildren());
  await page.screenshot({ path: SHOTS + name + '.png', fullPage });
}

async function textOf(page, sel) { return (await page.locator(sel).first().innerText()).trim(); }

// ---- the run -----------------------------------------------------------------------------------

before(async () => {
  srv = await new Server(BIN).start();
  ids = await seed(srv);
  wl = new Workload(srv, { maxSeconds: 150 });
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ARGS });
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  admin = await ctx.newPage();
  watch(admin, 'admin', requests);
  ctx.setDefaultTimeout(STEP);
});

after(async () => {
  if (browser) await browser.close();
  if (wl) await wl.stop();
  if (srv) {
    await srv.stop();
    // a server built with sanitizers reports here what the page's use found
    if (/AddressSanitizer|LeakSanitizer|runtime error:/.test(srv.log)) {
      process.stderr.write('tenq serve reported:\n' + srv.log + '\n');
      process.exitCode = 1;
    }
  }
});

test('sign-in: the server wants a token; a wrong one is refused, the admin token gets in', async () => {
  assert.equal((await srv.call('GET', '/v1/stats', undefined, null)).status, 401, 'the server must require a token');
  assert.equal((await srv.call('GET', '/v1/whoami', undefined, null)).status, 401);
  const res = await admin.goto(srv.base + '/');
  const csp = res.headers()['content-security-policy'];
  assert.match(csp, /script-src 'self'/);
  assert.match(csp, /style-src 'self'/);
  await admin.locator('#login').waitFor({ state: 'visible' });
  assert.equal(await admin.locator('#shell').isVisible(), false);
  assert.equal(await admin.locator('#login-open').isVisible(), false, 'a server with tokens needs one');
  await admin.fill('#login-token', 'not-a-token-at-all');
  await admin.click('#login-form button[type=submit]');
  await admin.locator('#login-error').waitFor({ state: 'visible' });
  assert.match(await textOf(admin, '#login-error'), /does not know this token/);
  await signIn(admin, ADMIN_TOKEN);
  assert.equal(await textOf(admin, '#who'), 'admin');
  assert.equal(await admin.locator('#nav a[data-view=tokens]').isVisible(), true);
});

test('the overview shows the numbers of GET /v1/stats', async () => {
  await wl.pause();
  try {
    await go(admin, '#/overview');
    // every state the server counts has its card (the states from the engine's own list)
    const keys = [...engineStates().counted, 'eligible', 'submitted_total',
      'succeeded_total', 'failed_total', 'dead_total', 'cancelled_total'];
    assert.ok(keys.includes('waiting'));
    await eventually('cards equal to /v1/stats', async () => {
      await live(admin);
      const st = await srv.api('GET', '/v1/stats');
      const shown = await admin.evaluate(() => Object.fromEntries([...document.querySelectorAll('[data-stat]')]
        .map((e) => [e.dataset.stat, e.textContent])));
      for (const k of keys) {
        const want = new Intl.NumberFormat('en-US').format(st.totals[k]);
        if (shown[k] !== want) throw new Error(`${k}: page ${shown[k]}, API ${want}`);
      }
      if (st.totals.waiting < 1) throw new Error('the seed has a waiting job');
      // the queues table: ready and dead per queue
      for (const q of st.queues) {
        const row = admin.locator(`#view tr[data-key="${q.name}"]`);
        const cells = await row.locator('td').allInnerTexts();
        if (cells[1] !== String(q.ready) || cells[4] !== String(q.dead)) throw new Error(`queue ${q.name}: ${cells}`);
      }
      // the morgue count in the navigation
      if ((await textOf(admin, '#nav-dead')) !== String(st.totals.dead)) throw new Error('nav dead count');
      return true;
    });
    assert.ok((await textOf(admin, '[data-stat=lag_ms]')).length > 0);
    assert.equal(await admin.locator('.chart svg').count(), 2, 'two charts');
  } finally {
    wl.resume();
  }
});

test('every state the server knows has its place: the jobs filter, a column of queues and tenants', async () => {
  const { all, counted } = engineStates();
  await go(admin, '#/jobs');
  const options = await admin.locator('#view form.filters select option').evaluateAll((os) => os.map((o) => o.value));
  for (const st of all) assert.ok(options.includes(st), `the state filter lacks ${st} (${options})`);
  for (const [hash, name, path] of [['#/queues', 'mail', '/v1/queues/mail'], ['#/tenants', 'acme', '/v1/tenants/acme']]) {
    await go(admin, hash);
    const heads = (await admin.locator('#view table thead th').allInnerTexts()).map((t) => t.trim().toLowerCase());
    for (const st of counted) assert.ok(heads.some((x) => x.startsWith(st)), `${hash} has no ${st} column (${heads})`);
    const col = heads.findIndex((x) => x.startsWith('waiting'));
    const want = String((await srv.api('GET', path)).waiting);
    await eventually(`${hash}: ${name} waiting ${want}`, async () =>
      (await admin.locator(`#view tr[data-key="${name}"] > *`).nth(col).innerText()).trim() === want);
  }
});

test('editing a tenant\'s slots and weight in the page (by keyboard) changes the server', async () => {
  await go(admin, '#/tenants');
  const before = await srv.api('GET', '/v1/tenants/globex');
  assert.equal(before.slots, 2);
  await admin.focus('button[aria-label="Edit slots and weight of globex"]');
  await admin.keyboard.press('Enter');
  const slots = admin.locator('input[aria-label^="Slots of globex"]');
  await slots.waitFor();
  assert.equal(await admin.evaluate(() => document.activeElement.getAttribute('aria-label')), 'Slots of globex (empty: unlimited)');
  await admin.keyboard.type('7');
  await admin.keyboard.press('Tab');
  await admin.keyboard.press('Control+A');
  await admin.keyboard.type('3');
  await admin.keyboard.press('Enter');
  await toast(admin, /Tenant globex: 7 slots, weight 3/);
  const after_ = await srv.api('GET', '/v1/tenants/globex');
  assert.equal(after_.slots, 7);
  assert.equal(after_.weight, 3);
  await eventually('the page shows 7 slots', async () => /\/ 7$/.test(await textOf(admin, '[data-slots=globex]')));
  // Escape leaves an edit without a change; an empty box means unlimited
  await admin.click('button[aria-label="Edit slots and weight of acme"]');
  await admin.fill('input[aria-label^="Slots of acme"]', '99');
  await admin.press('input[aria-label^="Slots of acme"]', 'Escape');
  assert.equal((await srv.api('GET', '/v1/tenants/acme')).slots, 4);
  await admin.click('button[aria-label="Edit slots and weight of initech"]');
  await admin.fill('input[aria-label^="Slots of initech"]', '');
  await admin.click('tr[data-key=initech] button:text("Save")');
  await toast(admin, /Tenant initech: unlimited slots/);
  assert.equal((await srv.api('GET', '/v1/tenants/initech')).slots, null);
});

test('editing a queue\'s settings in the page changes the server', async () => {
  await go(admin, '#/queues');
  await admin.click('button[aria-label="Edit the settings of mail"]');
  const form = admin.locator('form[aria-label="Settings of queue mail"]');
  await form.waitFor();
  await form.locator('input[name=max_attempts]').fill('7');
  await form.locator('input[name=tenant_cap]').fill('2');
  await form.locator('select[name=order]').selectOption('fair');
  await form.locator('button[type=submit]').click();
  await toast(admin, /Queue mail: .*max_attempts/);
  const q = await srv.api('GET', '/v1/queues/mail');
  assert.equal(q.max_attempts, 7);
  assert.equal(q.tenant_cap, 2);
  assert.equal(q.order, 'fair');
  assert.equal(q.lease_ms, 900000, 'untouched settings stay');
  await srv.api('PUT', '/v1/queues/mail', { tenant_cap: null, order: 'fifo' });
});

test('bulk cancel on the jobs page counts first, asks, then cancels every match', async () => {
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await srv.submit({ tenant: 'acme', queue: 'bulkq', type: 'Bulk.job' })).id);
  await go(admin, '#/jobs?queue=bulkq');
  await admin.click('button[data-bulk="cancel"]');
  const dlg = admin.locator('#confirm');
  await dlg.waitFor({ state: 'visible' });
  assert.match(await dlg.innerText(), /3 jobs matching queue bulkq/);
  await admin.keyboard.press('Escape');
  await dlg.waitFor({ state: 'hidden' });
  assert.equal((await srv.api('GET', '/v1/jobs/' + ids[0])).state, 'ready', 'dismissed: nothing changed');
  await admin.click('button[data-bulk="cancel"]');
  await dlg.waitFor({ state: 'visible' });
  await admin.click('#confirm-ok');
  await toast(admin, /3 jobs cancelled/);
  for (const id of ids) assert.equal((await srv.api('GET', '/v1/jobs/' + id)).state, 'cancelled');
});

test('the workers page lists who asked for jobs and what each holds', async () => {
  await srv.submit({ tenant: 'acme', queue: 'wkq', type: 'Worker.page' });
  await srv.api('POST', '/v1/lease', { worker: 'page-worker/7', queues: ['wkq'], max: 1 });
  await go(admin, '#/workers');
  const row = admin.locator('#view tr[data-key="page-worker/7"]');
  await row.waitFor();
  const cells = await row.locator('td').allInnerTexts();
  assert.equal(cells[1], 'wkq');
  assert.equal(cells[2], '1', 'one job in hand');
});

test('pausing and resuming a queue from the page changes the server', async () => {
  await go(admin, '#/queues');
  await admin.click('button[aria-label="Pause mail"]');
  await toast(admin, /Queue mail paused/);
  assert.equal((await srv.api('GET', '/v1/queues/mail')).paused, true);
  const row = admin.locator('#view tr[data-key="mail"]');
  await row.locator('.badge.warn:text("paused")').waitFor();
  await admin.click('button[aria-label="Resume mail"]');
  await toast(admin, /Queue mail resumed/);
  assert.equal((await srv.api('GET', '/v1/queues/mail')).paused, false);
});

test('searching a job by id shows it with every field', async () => {
  await go(admin, '#/jobs');
  await admin.fill('input[name=id]', String(ids.acmeFirst));
  await admin.press('input[name=id]', 'Enter');
  await eventually('the job page', async () => (await admin.evaluate(() => location.hash)) === '#/job/' + ids.acmeFirst);
  await admin.locator('[data-field=tenant]').waitFor();
  const j = await srv.api('GET', '/v1/jobs/' + ids.acmeFirst);
  const field = (k) => textOf(admin, `[data-field=${k}]`);
  assert.equal(await field('id'), String(j.id));
  assert.equal(await field('tenant'), j.tenant);
  assert.equal(await field('queue'), j.queue);
  assert.equal(await field('type'), j.type);
  assert.equal(await field('key'), j.key);
  assert.equal(await field('state'), j.state);
  assert.equal(await field('attempts'), `${j.attempts} of ${j.max_attempts}`);
  assert.equal(await field('worker'), j.worker);
  assert.equal(await field('priority'), String(j.priority));
  for (const k of ['run_at', 'created_at', 'ready_at', 'leased_at', 'started_at', 'finished_at', 'lease_until',
    'unique_key', 'idempotency_key', 'cancel_requested', 'error', 'result', 'stats', 'progress']) {
    assert.equal(await admin.locator(`[data-field=${k}]`).count(), 1, 'field ' + k);
  }
  const created = await admin.locator('[data-field=created_at] time').getAttribute('datetime');
  assert.equal(Date.parse(created), j.created_at);
  const body = await admin.locator('#view').innerText();
  assert.match(body, /"report_id": 42/, 'args pretty-printed');
  assert.match(body, /"page": 2/, 'progress pretty-printed');
  assert.match(await textOf(admin, '[data-timing=waited]'), /\d/);
  assert.match(await textOf(admin, '[data-timing=picked-up]'), /\d/);
  assert.match(await textOf(admin, '[data-timing=ran]'), /so far/);
  await shot(admin, 'job-light', true);

  // a finished job: result, stats, and the three timings
  await go(admin, '#/job/' + ids.acmeDone);
  await eventually('succeeded', async () => (await textOf(admin, '[data-field=state]')) === 'succeeded');
  const text = await admin.locator('#view').innerText();
  assert.match(text, /"delivered": true/);
  assert.match(text, /"smtp_ms": 120/);
  assert.doesNotMatch(await textOf(admin, '[data-timing=ran]'), /—|so far/);
});

test('searching jobs by tenant (and key) lists them with their fields', async () => {
  await go(admin, '#/jobs');
  await admin.fill('input[name=tenant]', 'acme');
  await admin.selectOption('select[name=state]', 'running');
  await admin.click('form.filters button[type=submit]');
  await eventually('the filter in the address', async () => (await admin.evaluate(() => location.hash)) === '#/jobs?tenant=acme&state=running');
  const row = admin.locator(`#view tr[data-key="${ids.acmeFirst}"]`);
  await row.waitFor();
  const cells = await row.locator('td').allInnerTexts();
  assert.deepEqual(cells.slice(0, 6), [String(ids.acmeFirst), 'running', 'acme', 'reports', 'DataReport.execute', 'report:42']);
  const tenants = await admin.locator('#view tbody tr td:nth-child(3)').allInnerTexts();
  assert.ok(tenants.length > 0 && tenants.every((t) => t === 'acme'), 'only acme: ' + tenants);
  await go(admin, '#/jobs?tenant=acme&key=report%3A42');
  await eventually('the lane', async () => (await admin.locator('#view tbody tr').count()) === 4);
  // cursor paging: a second page follows the first, nothing twice
  await go(admin, '#/jobs');
  assert.equal(await admin.locator('#view tbody tr').count(), 50);
  await admin.click('#view button:text("Load more")');
  await eventually('a second page', async () => (await admin.locator('#view tbody tr').count()) > 50);
  const keys = await admin.locator('#view tbody tr').evaluateAll((rows) => rows.map((r) => Number(r.dataset.key)));
  assert.equal(new Set(keys).size, keys.length, 'no job twice');
  assert.deepEqual(keys, [...keys].sort((a, b) => b - a), 'newest first');
});

test('the list refreshes live, without reloading the page', async () => {
  await go(admin, '#/jobs?tenant=acme');
  await admin.evaluate(() => { window.__sameDocument = true; });
  const { id } = await srv.submit({ tenant: 'acme', queue: 'mail', type: 'Live.refresh', args: { hello: 'page' } });
  await admin.locator(`#view tr[data-key="${id}"]`).waitFor({ timeout: STEP });
  assert.equal(await admin.evaluate(() => window.__sameDocument), true);
  await srv.api('POST', `/v1/jobs/${id}/cancel`);
  await eventually('cancelled, live', async () => (await admin.locator(`#view tr[data-key="${id}"] td:nth-child(2)`).innerText()) === 'cancelled');
});

test('polling stops while the tab is hidden, and comes back', async () => {
  await go(admin, '#/overview');
  await admin.evaluate(() => {
    Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
    document.dispatchEvent(new Event('visibilitychange'));
  });
  const n0 = requests.length;
  await sleep(3500);
  assert.equal(requests.slice(n0).filter((r) => r.url.includes('/v1/')).length, 0, 'no requests while hidden');
  assert.match(await textOf(admin, '#live'), /Paused/);
  await admin.evaluate(() => {
    delete document.hidden;
    document.dispatchEvent(new Event('visibilitychange'));
  });
  await live(admin);
});

test('requeueing a morgue job from the page works', async () => {
  const id = ids.acmeDead[0];
  assert.equal((await srv.api('GET', '/v1/jobs/' + id)).state, 'dead');
  await go(admin, '#/morgue?tenant=acme');
  const btn = admin.locator(`button[aria-label="Requeue job ${id}"]`);
  await btn.waitFor();
  await btn.click();
  await toast(admin, new RegExp(`Job ${id} requeued`));
  const j = await srv.api('GET', '/v1/jobs/' + id);
  assert.notEqual(j.state, 'dead');
  assert.equal(j.attempts, 0, 'attempts reset');
  await eventually('gone from the list', async () => (await admin.locator(`#view tr[data-key="${id}"]`).count()) === 0);
  await shot(admin, 'morgue-light');
});

test('bulk requeue asks first, and requeues every match', async () => {
  await go(admin, '#/morgue?tenant=globex');
  const dead = (await srv.api('GET', '/v1/morgue?tenant=globex')).jobs.length;
  assert.equal(dead, 3);
  await admin.click('button:text("Requeue all matching…")');
  const dlg = admin.locator('#confirm');
  await dlg.waitFor({ state: 'visible' });
  assert.match(await dlg.innerText(), /3 dead jobs matching tenant globex/);
  await admin.keyboard.press('Escape');
  await dlg.waitFor({ state: 'hidden' });
  assert.equal((await srv.api('GET', '/v1/morgue?tenant=globex')).jobs.length, 3, 'cancelled: nothing changed');
  await admin.click('button:text("Requeue all matching…")');
  await dlg.waitFor({ state: 'visible' });
  await admin.click('#confirm-ok');
  await toast(admin, /3 jobs requeued/);
  assert.equal((await srv.api('GET', '/v1/morgue?tenant=globex')).jobs.length, 0);
  // put them back in the morgue for the rest of the run
  for (const j of await srv.lease(['reports', 'mail'], 10, ['GlobexLedger.reconcile', 'GlobexMailer.blast'])) {
    await srv.api('POST', `/v1/jobs/${j.id}/fail`, { token: j.token, error: j.type + ': failed again', retry: false });
  }
  // deleting one asks first too
  const victim = (await srv.api('GET', '/v1/morgue?tenant=globex')).jobs[0].id;
  await go(admin, '#/morgue?tenant=globex');
  await admin.click(`button[aria-label="Delete job ${victim}"]`);
  await dlg.waitFor({ state: 'visible' });
  await admin.click('#confirm-ok');
  await toast(admin, new RegExp(`Job ${victim} deleted`));
  assert.equal((await srv.call('GET', '/v1/jobs/' + victim)).status, 404);
});

test('the schedules page shows each schedule and its next runs, and pauses and resumes it', async () => {
  await srv.api('PUT', '/v1/schedules/nightly-report', { cron: '30 2 * * *', timezone: 'Europe/Berlin',
    job: { tenant: 'acme', queue: 'reports', type: 'DataReport.execute' } });
  await go(admin, '#/schedules');
  const row = admin.locator('#view tr[data-key="nightly-report"]');
  await row.waitFor();
  const text = await row.innerText();
  assert.match(text, /30 2 \* \* \*/);
  assert.match(text, /Europe\/Berlin/);
  assert.match(text, /acme · reports · DataReport\.execute/);
  const want = (await srv.api('GET', '/v1/schedules/nightly-report')).next_runs.slice(0, 3);
  const shown = await row.locator('ul.runs time').evaluateAll((ts) => ts.map((t) => Date.parse(t.getAttribute('datetime'))));
  assert.deepEqual(shown, want);
  await admin.click('button[aria-label="Pause schedule nightly-report"]');
  await toast(admin, /Schedule nightly-report paused/);
  assert.equal((await srv.api('GET', '/v1/schedules/nightly-report')).paused, true);
  await eventually('shown paused', async () => /paused/.test(await row.innerText()));
  await admin.click('button[aria-label="Resume schedule nightly-report"]');
  await toast(admin, /Schedule nightly-report resumed/);
  assert.equal((await srv.api('GET', '/v1/schedules/nightly-report')).paused, false);
  await eventually('shown active', async () => /active/.test(await row.innerText()));
  await shot(admin, 'schedules-light');
});

test('the batches page shows each batch\'s progress; a batch\'s page its counts and callbacks; the job page links its batch', async () => {
  // initech: unlimited slots, so that both leases below get their two jobs
  const b = await srv.api('POST', '/v1/batches', { tenant: 'initech',
    jobs: [0, 1, 2, 3].map((i) => ({ queue: 'batch-q', type: 'Import.row', args: { row: i } })),
    on_complete: { queue: 'batch-cb', type: 'Import.done', args: { user: 7 } },
    on_death: { queue: 'batch-cb', type: 'Import.failed' } });
  const got = await srv.lease(['batch-q'], 2);
  for (const j of got) await srv.api('POST', `/v1/jobs/${j.id}/ack`, { token: j.token });
  await go(admin, '#/batches');
  const row = admin.locator(`#view tr[data-key="${b.id}"]`);
  await row.waitFor();
  const text = await row.innerText();
  assert.match(text, /initech/);
  assert.match(text, /open/);
  assert.match(text, /50%/);
  await row.locator('a').first().click();
  await eventually('the batch page', async () => /Jobs by state/.test(await admin.locator('#view').innerText()));
  assert.equal(await textOf(admin, '[data-fk=count-succeeded]'), '2');
  assert.equal(await textOf(admin, '[data-fk=count-ready]'), '2');
  assert.match(await textOf(admin, '[data-fk=cb-on_complete]'), /not made/);
  const rest = await srv.lease(['batch-q'], 2);
  for (const j of rest) await srv.api('POST', `/v1/jobs/${j.id}/ack`, { token: j.token });
  const done = (await srv.api('GET', '/v1/batches/' + b.id)).callbacks.on_complete.job;
  assert.ok(done);
  await eventually('the callback made', async () => (await textOf(admin, '[data-fk=cb-on_complete]')) === 'job ' + done);
  assert.match(await admin.locator('#view h1').innerText(), /closed/);
  await go(admin, '#/job/' + b.jobs[0].id);
  await admin.locator('[data-field=batch]').waitFor();
  assert.match(await textOf(admin, '[data-field=batch]'), new RegExp('batch ' + b.id));
  await go(admin, '#/job/' + done);
  await admin.locator('[data-field=batch]').waitFor();
  assert.match(await textOf(admin, '[data-field=batch]'), /on_complete callback/);
});

test('the morgue sorts by id or by death, like the API', async () => {
  for (const sort of ['id', 'finished']) {
    await go(admin, '#/morgue' + (sort === 'id' ? '?sort=id' : ''));
    const want = (await srv.api('GET', '/v1/morgue?sort=' + sort)).jobs.map((j) => String(j.id));
    const shown = await admin.locator('#view tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key));
    assert.deepEqual(shown, want, 'sort ' + sort);
  }
});

test('a job that waits says why on its page, with the job its lane runs first', async () => {
  const first = await srv.submit({ tenant: 'acme', queue: 'mail', type: 'Mailer.lane', key: 'why:1' });
  const second = await srv.submit({ tenant: 'acme', queue: 'mail', type: 'Mailer.lane', key: 'why:1' });
  await go(admin, '#/job/' + second.id);
  const row = admin.locator('[data-field=waiting]');
  await row.waitFor();
  assert.match(await row.innerText(), new RegExp(`runs job ${first.id} first`));
  assert.equal(await row.locator(`a[href="#/job/${first.id}"]`).count(), 1);
  assert.equal(await row.locator('[data-fk=waiting-lane]').count(), 1);
  await srv.api('POST', `/v1/jobs/${first.id}/cancel`);
  await srv.api('POST', `/v1/jobs/${second.id}/cancel`);
});

test('a job\'s page lists its attempts, how each ended', async () => {
  const { id } = await srv.submit({ tenant: 'acme', queue: 'attempts-page', type: 'Mailer.retry', max_attempts: 5 });
  for (const error of ['SMTPError: first try', 'SMTPError: second try']) {
    const [j] = await srv.lease(['attempts-page'], 1);
    await srv.api('POST', `/v1/jobs/${j.id}/fail`, { token: j.token, error, retry_in_ms: 0 });
  }
  const [j] = await srv.lease(['attempts-page'], 1);
  await go(admin, '#/job/' + id);
  const rows = admin.locator('[data-fk=attempts] tbody tr');
  await eventually('two failed attempts and the current one', async () => (await rows.count()) === 3);
  assert.deepEqual(await rows.evaluateAll((rs) => rs.map((r) => r.dataset.outcome)), ['failed', 'failed', 'leased']);
  assert.match(await rows.nth(0).innerText(), /SMTPError: first try/);
  assert.match(await rows.nth(2).innerText(), /so far/);
  await srv.api('POST', `/v1/jobs/${id}/ack`, { token: j.token, stats: { sent_bytes: 2048 } });
  await eventually('the third succeeded', async () => (await rows.evaluateAll((rs) => rs.map((r) => r.dataset.outcome))).join() === 'failed,failed,succeeded');
  assert.match(await rows.nth(2).innerText(), /"sent_bytes": 2048/);
  assert.match(await textOf(admin, '#job-attempts'), /Attempts \(3\)/);
});

test('a job\'s page shows its durable steps, what it waits for, and which attempt stored each', async () => {
  const { id } = await srv.submit({ tenant: 'acme', queue: 'steps-page', type: 'Order.fulfil' });
  const [j] = await srv.lease(['steps-page'], 1);
  await srv.api('POST', `/v1/jobs/${id}/steps`, { token: j.token, name: 'fetch', result: { rows: 3 } });
  const parked = await srv.api('POST', `/v1/jobs/${id}/steps`, { token: j.token, name: 'paid', kind: 'event', event: `order-${id}/paid` });
  assert.equal(parked.parked, true);
  await go(admin, '#/job/' + id);
  await eventually('it says it waits for its event', async () => (await admin.locator('[data-fk=waiting-event]').count()) === 1);
  assert.match(await textOf(admin, '[data-field=waiting]'), new RegExp(`waits for event order-${id}/paid`));
  assert.match(await textOf(admin, '[data-field=steps]'), /^2/);
  const rows = admin.locator('[data-fk=steps] tbody tr');
  await eventually('two steps', async () => (await rows.count()) === 2);
  assert.deepEqual(await rows.evaluateAll((rs) => rs.map((r) => [r.dataset.step, r.dataset.kind, r.dataset.done])),
    [['fetch', 'step', 'true'], ['paid', 'event', 'false']]);
  assert.match(await rows.nth(0).innerText(), /"rows": 3/);
  assert.match(await rows.nth(1).innerText(), new RegExp(`order-${id}/paid[\\s\\S]*waiting`));
  const att = admin.locator('[data-fk=attempts] tbody tr');
  assert.deepEqual(await att.evaluateAll((rs) => rs.map((r) => r.dataset.outcome)), ['suspended']);
  assert.match(await att.nth(0).locator('[data-col=steps]').innerText(), /fetch, paid/);
  const ev = await srv.api('POST', '/v1/events', { tenant: 'acme', key: `order-${id}/paid`, payload: { amount: 70 } });
  assert.deepEqual(ev.jobs, [id]);
  await eventually('the wait is done, with the payload', async () => (await rows.nth(1).getAttribute('data-done')) === 'true');
  assert.match(await rows.nth(1).innerText(), /"amount": 70/);
  await srv.api('POST', `/v1/jobs/${id}/cancel`);
});

test('a job\'s page shows its parents and children, with links', async () => {
  const parent = await srv.submit({ tenant: 'acme', queue: 'deps-page', type: 'Report.build' });
  const child = await srv.submit({ tenant: 'acme', queue: 'deps-page', type: 'Report.mail', depends_on: [parent.id] });
  assert.equal(child.state, 'waiting');
  await go(admin, '#/job/' + child.id);
  await eventually('it says it waits for its parent', async () => (await admin.locator('[data-fk=waiting-parents]').count()) === 1);
  assert.equal(await admin.locator(`[data-field=waiting] a[href="#/job/${parent.id}"]`).count(), 1);
  assert.equal(await admin.locator(`[data-field=parents] a[href="#/job/${parent.id}"]`).count(), 1);
  const prow = admin.locator(`[data-fk=parents] tr[data-dep="${parent.id}"]`);
  await prow.waitFor();
  const [j] = await srv.lease(['deps-page'], 1);
  assert.equal(j.id, parent.id);
  await srv.api('POST', `/v1/jobs/${j.id}/ack`, { token: j.token, result: { pages: 3 } });
  await eventually('the parent shows as succeeded, with its result', async () => /succeeded[\s\S]*"pages": 3/.test(await prow.innerText()));
  await go(admin, '#/job/' + parent.id);
  const crow = admin.locator(`[data-fk=children] tr[data-dep="${child.id}"]`);
  await crow.waitFor();
  assert.equal(await crow.locator(`a[href="#/job/${child.id}"]`).count(), 1);
  await srv.api('POST', `/v1/jobs/${child.id}/cancel`);
});

test('cancelling a job from its page', async () => {
  const { id } = await srv.submit({ tenant: 'acme', queue: 'mail', type: 'Mailer.later', args: { x: 1 }, run_at: Date.now() + 3600e3 });
  await go(admin, '#/job/' + id);
  await admin.locator('button[data-fk=cancel]').click();
  await admin.locator('#confirm').waitFor({ state: 'visible' });
  await admin.click('#confirm-ok');
  await toast(admin, new RegExp(`Job ${id} cancelled`));
  assert.equal((await srv.api('GET', '/v1/jobs/' + id)).state, 'cancelled');
  await eventually('the page shows it', async () => (await textOf(admin, '[data-field=state]')) === 'cancelled');
});

test('keys at their limit: the keys page lists them first, who holds one and who waits; a held job links its key', async () => {
  const first = await srv.submit({ tenant: 'keyco', queue: 'keys-page', type: 'Sync.account', concurrency_keys: [{ key: 'account:77', limit: 1 }] });
  const held = await srv.submit({ tenant: 'keyco', queue: 'keys-page', type: 'Sync.account', concurrency_keys: [{ key: 'account:77', limit: 1 }] });
  await srv.submit({ tenant: 'keyco', queue: 'keys-page', type: 'Sync.account', concurrency_keys: ['account:78'] });
  const got = await srv.lease(['keys-page'], 10);
  assert.deepEqual(got.map((j) => j.id).sort((a, b) => a - b).slice(0, 1), [first.id]);
  await go(admin, '#/keys');
  const row = admin.locator('#view tbody tr', { hasText: 'account:77' }).first();
  await row.waitFor();
  assert.match(await row.innerText(), /at limit[\s\S]*1 \/ 1[\s\S]*\b1\b/);
  assert.equal(await admin.locator('[data-at-limit="account:77"]').count(), 1);
  // at their limit first
  const keys = await admin.locator('#view table').first().locator('tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.key).filter(Boolean));
  assert.equal(keys[0], 'keyco\u0000account:77', keys.join(' '));
  await eventually('the nav counts the keys at their limit', async () => (await textOf(admin, '#nav-keys')) === String((await srv.api('GET', '/v1/stats')).keys_at_limit));
  await row.locator('button', { hasText: 'Who holds' }).click();
  const detail = admin.locator('[data-fk=key-jobs]');
  await detail.waitFor();
  const text = await detail.innerText();
  assert.match(text, new RegExp(`Holding it: job ${first.id}`));
  assert.match(text, new RegExp(`Held back by it: job ${held.id}`));
  await shot(admin, 'keys-light');
  // the held job's page: why, who holds the key, its key linked to the keys page
  await go(admin, '#/job/' + held.id);
  const why = admin.locator('[data-field=waiting]');
  await why.waitFor();
  assert.match(await why.innerText(), /account:77/);
  assert.equal(await why.locator(`[data-fk=held-by] a[href="#/job/${first.id}"]`).count(), 1);
  const link = admin.locator('[data-field=concurrency_keys] a');
  assert.equal(await link.getAttribute('href'), '#/keys?tenant=keyco&key=account%3A77');
  await link.click();
  await eventually('the key alone, opened', async () => /Holding it: job/.test(await admin.locator('#view').innerText()));
  // a key setting from the form (its fields from GET /v1/settings): the limit changes on the server
  await go(admin, '#/keys');
  await admin.locator('#view details.panel summary').click();
  await admin.locator('[data-fk=kset-tenant]').fill('keyco');
  await admin.locator('[data-fk=kset-key]').fill('account:*');
  await admin.locator('[data-fk=kset-concurrency]').fill('2');
  await admin.locator('#view details.panel button[type=submit]').click();
  await eventually('the setting stored', async () => ((await srv.api('GET', '/v1/key-settings?tenant=keyco')).settings || []).some((x) => x.key === 'account:*' && x.concurrency === 2));
  assert.equal((await srv.api('GET', '/v1/keys?tenant=keyco&key=account:77')).keys[0].limit, 2);
  await srv.api('DELETE', '/v1/key-settings?tenant=keyco&key=account:*');
  for (const j of got) await srv.api('POST', `/v1/jobs/${j.id}/cancel`);
  await srv.api('POST', `/v1/jobs/${held.id}/cancel`);
});

test('lanes show their head and what holds it', async () => {
  await go(admin, '#/lanes');
  const row = admin.locator('#view tbody tr', { hasText: 'report:42' });
  await row.waitFor();
  const t = await row.innerText();
  assert.match(t, new RegExp(String(ids.acmeFirst)));
  assert.match(t, /running/);
  assert.match(t, /The head is running/);
});

test('a tenant token sees no other tenant\'s data anywhere in the page', async () => {
  const tok = await srv.api('POST', '/v1/tokens', { role: 'tenant:acme' });
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  const log = [];
  watch(page, 'tenant', log);
  try {
    await signIn(page, tok.token);
    assert.equal(await textOf(page, '#who'), 'tenant acme');
    assert.equal(await page.locator('#nav a[data-view=tokens]').isVisible(), false);
    const forbidden = /globex|GLX-SECRET|initech|Tps\.|Ledger|payroll/i;
    const views = ['#/overview', '#/tenants', '#/queues', '#/jobs', '#/jobs?state=dead', '#/lanes', '#/keys', '#/morgue',
      '#/morgue?sort=id', '#/schedules', '#/job/' + ids.acmeFirst, '#/job/' + ids.globexDead, '#/tokens'];
    for (const v of views) {
      await go(page, v);
      const html = await page.evaluate(() => document.body.innerText + '\n' + document.documentElement.outerHTML);
      const m = html.match(forbidden);
      assert.equal(m, null, `${v} shows "${m && m[0]}"`);
    }
    // what it does see is its own
    await go(page, '#/jobs');
    assert.match(await page.locator('#view').innerText(), /DataReport\.execute/);
    await go(page, '#/tenants');
    assert.equal(await page.locator('#view tbody tr').count(), 1);
    assert.equal(await page.locator('#view button:text("Edit")').count(), 0, 'no editing for a tenant');
    await go(page, '#/job/' + ids.globexDead);
    assert.match(await page.locator('#view').innerText(), /No job \d+ that this token may see/);
    await go(page, '#/tokens');
    assert.match(await page.locator('#view').innerText(), /not available to this token/);
    // it may requeue its own morgue
    await go(page, '#/morgue');
    assert.match(await page.locator('#view').innerText(), /Mailer\.deliver/);
    for (const r of log.filter((x) => x.url.includes('/v1/') && x.headers && x.headers.authorization)) {
      assert.equal(r.headers.authorization, 'Bearer ' + tok.token);
    }
    await shot(page, 'tenant-view-light');
    // a revoked token sends the page back to the sign-in
    await srv.api('DELETE', '/v1/tokens/' + tok.id);
    await page.locator('#login').waitFor({ state: 'visible', timeout: STEP });
    assert.match(await textOf(page, '#login-error'), /refused the token/);
    assert.equal(await page.evaluate(() => sessionStorage.getItem('tenq.token')), null);
  } finally {
    await ctx.close();
  }
});

test('a viewer token reads every section and sees no button that changes anything', async () => {
  const views = ['#/overview', '#/tenants', '#/queues', '#/jobs?tenant=acme', '#/job/' + ids.acmeFirst,
    '#/job/' + ids.acmeDead[0], '#/morgue', '#/schedules', '#/batches', '#/tokens'];
  const writes = /^(Cancel|Requeue|Delete|Edit|Pause|Resume|Revoke|Save|Create token|Requeue all matching…|Delete all matching…|Cancel matching…|Retry now…|Delete finished…)$/;
  const visibleWrites = (page) => page.evaluate((src) => {
    const re = new RegExp(src);
    const shown = (el) => el.getClientRects().length > 0;
    return [...document.querySelectorAll('#view button, #view details, #view form')]
      .filter((el) => shown(el) && (el.matches('[data-write], [data-write] *') || re.test(el.textContent.trim())))
      .map((el) => el.textContent.trim().slice(0, 40));
  }, writes.source);
  // the admin sees them (so that the check below can fail)
  if (!(await admin.locator('#shell').isVisible())) await signIn(admin, ADMIN_TOKEN);
  await go(admin, '#/morgue');
  assert.ok((await visibleWrites(admin)).length > 0, 'the admin sees the morgue\'s buttons');
  for (const [role, who] of [['viewer', 'viewer (every tenant)'], ['viewer:acme', 'viewer (tenant acme)']]) {
    const tok = await srv.api('POST', '/v1/tokens', { role, hide_data: role === 'viewer:acme' });
    const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
    const page = await ctx.newPage();
    watch(page, role);
    try {
      await signIn(page, tok.token);
      assert.equal(await textOf(page, '#who'), who);
      for (const v of views) {
        await go(page, v);
        assert.deepEqual(await visibleWrites(page), [], `${role} at ${v}`);
      }
      await go(page, '#/job/' + ids.acmeFirst);
      const text = await page.locator('#view').innerText();
      if (role === 'viewer:acme') {
        assert.match(text, /Hidden: this token sees jobs without their args/);
        assert.equal(/report_id/.test(text), false, 'no args shown');
      } else {
        assert.match(text, /report_id/);
      }
    } finally {
      await ctx.close();
    }
  }
});

test('the audit page lists changes with who made them; a tenant sees its own only', async () => {
  if (!(await admin.locator('#shell').isVisible())) await signIn(admin, ADMIN_TOKEN);
  await srv.api('PUT', '/v1/queues/audited-q', { lease_ms: 61000 });
  const tok = await srv.api('POST', '/v1/tokens', { role: 'tenant:acme' });
  await srv.api('POST', '/v1/queues/mail/pause', {}, tok.token);
  await srv.api('POST', '/v1/queues/mail/resume', {}, tok.token);
  await go(admin, '#/audit');
  const text = await eventually('the admin\'s entries', async () => {
    const t = await admin.locator('#view').innerText();
    return /PUT \/v1\/queues\/audited-q/.test(t) && /POST \/v1\/queues\/mail\/pause/.test(t) && t;
  });
  assert.match(text, /"lease_ms":61000/);
  assert.match(text, /tenant:acme/);
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  watch(page, 'tenant-audit');
  try {
    await signIn(page, tok.token);
    await go(page, '#/audit');
    const mine = await eventually('the tenant\'s entries', async () => {
      const t = await page.locator('#view').innerText();
      return /POST \/v1\/queues\/mail\/resume/.test(t) && t;
    });
    assert.equal(/audited-q/.test(mine), false, 'no admin entry for a tenant');
  } finally {
    await ctx.close();
  }
});

test('a tenant with no jobs yet is named (GET /v1/whoami), and sees no queues', async () => {
  const tok = await srv.api('POST', '/v1/tokens', { role: 'tenant:newcomer' });
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 }, colorScheme: 'light' });
  const page = await ctx.newPage();
  try {
    await signIn(page, tok.token);
    assert.equal(await textOf(page, '#who'), 'tenant newcomer');
    await go(page, '#/queues');
    const text = await page.locator('#view').innerText();
    assert.equal(text.match(/globex|reports|mail/i), null, 'no other tenant\'s queue names');
    await go(page, '#/lanes');
    assert.match(await page.locator('#view').innerText(), /\b0 lanes with jobs/);
  } finally {
    await ctx.close();
  }
});

test('a worker token gets the parts it may read, without errors', async () => {
  const tok = await srv.api('POST', '/v1/tokens', { role: 'worker', queues: ['mail'] });
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  watch(page, 'worker');
  try {
    await signIn(page, tok.token);
    assert.equal(await textOf(page, '#who'), 'worker');
    for (const v of ['tenants', 'lanes', 'morgue', 'schedules', 'tokens']) assert.equal(await page.locator(`#nav a[data-view=${v}]`).isVisible(), false, v);
    await go(page, '#/queues');
    assert.deepEqual(await page.locator('#view tbody tr').evaluateAll((r) => r.map((x) => x.dataset.key)), ['mail']);
    await go(page, '#/jobs');
    assert.match(await page.locator('#view').innerText(), /Jobs: not available to this token/);
    await go(page, '#/job/' + ids.acmeDone);
    assert.equal(await textOf(page, '[data-field=state]'), 'succeeded');
  } finally {
    await ctx.close();
  }
});

test('a server with no tokens (loopback) needs none: the page goes straight in, no form', async () => {
  const open = await new Server(BIN, { adminToken: null }).start();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await ctx.newPage();
  watch(page, 'open');
  // the form never shows: not even for a moment
  let formShown = false;
  await page.exposeFunction('__loginShown', () => { formShown = true; });
  await page.addInitScript(() => {
    new MutationObserver(() => {
      const l = document.getElementById('login');
      if (l && !l.hidden) window.__loginShown();
    }).observe(document, { subtree: true, attributes: true, attributeFilter: ['hidden'] });
  });
  try {
    await open.api('POST', '/v1/jobs', { tenant: 'solo', queue: 'q', type: 'T.t' }, null);
    assert.equal((await open.call('GET', '/v1/whoami', undefined, null)).body.auth, false);
    await page.goto(open.base + '/');
    await page.locator('#shell').waitFor({ state: 'visible' });
    assert.equal(await page.locator('#login').isVisible(), false);
    assert.equal(formShown, false, 'the sign-in form was shown');
    assert.equal(await textOf(page, '#who'), 'admin (open server)');
    assert.equal(await page.locator('#signout').isVisible(), false, 'nothing to sign out of');
    await eventually('its numbers', async () => (await textOf(page, '[data-stat=ready]')) === '1');
    // a reload goes straight in again
    await page.reload();
    await page.locator('#shell').waitFor({ state: 'visible' });
    assert.equal(formShown, false);
    await live(page);
  } finally {
    await ctx.close();
    await open.stop();
  }
});

test('requests carry the token in the Authorization header, never a cookie', async () => {
  // the server refuses a change without the header: the page's changes above
  // went through, so they carried it
  assert.equal((await srv.call('PUT', '/v1/tenants/globex', { slots: 1 }, null)).status, 401);
  const api = requests.filter((r) => new URL(r.url).pathname.startsWith('/v1/'));
  const mutations = api.filter((r) => r.method !== 'GET');
  const kinds = new Set(mutations.map((r) => r.method + ' ' + new URL(r.url).pathname.replace(/\/\d+/g, '/N')));
  for (const k of ['PUT /v1/tenants/globex', 'PUT /v1/queues/mail', 'POST /v1/morgue/N/requeue', 'POST /v1/morgue/requeue', 'POST /v1/jobs/N/cancel']) {
    assert.ok(kinds.has(k), 'the page made ' + k + ' (saw ' + [...kinds].join(', ') + ')');
  }
  for (const r of mutations) {
    assert.equal(r.headers.authorization, 'Bearer ' + ADMIN_TOKEN, `${r.method} ${r.url}`);
    assert.equal(r.headers.cookie, undefined, `${r.method} ${r.url} sent a cookie`);
  }
  // every API request after sign-in carries it; the only ones without are
  // the sign-in's probes (is the server open? is this token good?)
  const signedIn = api.findIndex((r) => r.headers && r.headers.authorization === 'Bearer ' + ADMIN_TOKEN);
  for (const r of api.slice(signedIn)) {
    if (!r.headers.authorization) assert.ok(['/v1/stats', '/v1/whoami'].includes(new URL(r.url).pathname), 'only probes go without: ' + r.url);
    else assert.equal(r.headers.authorization, 'Bearer ' + ADMIN_TOKEN);
    assert.equal(r.headers.cookie, undefined);
  }
  assert.deepEqual(await admin.context().cookies(), []);
  assert.equal(await admin.evaluate(() => document.cookie), '');
  const store = await admin.evaluate(() => ({ session: sessionStorage.getItem('tenq.token'), local: JSON.stringify(localStorage) }));
  assert.equal(store.session, ADMIN_TOKEN, 'the token is in sessionStorage');
  assert.ok(!store.local.includes(ADMIN_TOKEN), 'and not in localStorage');
});

test('light and dark: follows prefers-color-scheme, and the toggle; screenshots', async () => {
  const bg = () => admin.evaluate(() => {
    const m = getComputedStyle(document.body).backgroundColor.match(/\d+/g).map(Number);
    return (0.2126 * m[0] + 0.7152 * m[1] + 0.0722 * m[2]) / 255;
  });
  await go(admin, '#/overview');
  await sleep(1000);
  assert.ok((await bg()) > 0.8, 'light by default');
  await shot(admin, 'overview-light');
  await go(admin, '#/tenants');
  await admin.click('button[aria-label="Edit slots and weight of globex"]');
  await shot(admin, 'tenants-light');
  await admin.press('input[aria-label^="Slots of globex"]', 'Escape');
  await go(admin, '#/queues');
  await shot(admin, 'queues-light');
  await go(admin, '#/lanes');
  await shot(admin, 'lanes-light');

  await admin.emulateMedia({ colorScheme: 'dark' });
  await go(admin, '#/overview');
  assert.ok((await bg()) < 0.2, 'dark with prefers-color-scheme: dark');
  await shot(admin, 'overview-dark');
  await go(admin, '#/tenants');
  await shot(admin, 'tenants-dark');
  await go(admin, '#/job/' + ids.acmeFirst);
  await shot(admin, 'job-dark', true);
  await go(admin, '#/morgue');
  await shot(admin, 'morgue-dark');

  // the toggle wins over the system, and is remembered
  await admin.click('#theme');
  assert.equal(await admin.evaluate(() => document.documentElement.dataset.theme), 'light');
  assert.ok((await bg()) > 0.8, 'the toggle turns it light');
  await admin.reload();
  await live(admin);
  assert.ok((await bg()) > 0.8, 'still light after a reload');
  await admin.click('#theme');
  assert.ok((await bg()) < 0.2, 'and dark again');
  await admin.evaluate(() => localStorage.removeItem('tenq.theme'));
});

test('no page errors, no console errors, no CSP violations', () => {
  assert.deepEqual(problems, []);
});
