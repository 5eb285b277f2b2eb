// SPDX-License-Identifier: Apache-2.0
// The page: sign-in, the sections, and live refresh.  Every request goes
// through api.js with the token typed in at sign-in; a server that needs no
// token (it has none: GET /v1/whoami says "auth": false) is entered at once.
import { api, getToken, setToken, clearToken, hasSession, onUnauthenticated } from './api.js';
import { fmtClock, fmtInt } from './dom.js';
import { ctx, totals, describe } from './ctx.js';
import * as overview from './overview.js';
import * as tenants from './tenants.js';
import * as queues from './queues.js';
import * as jobs from './jobs.js';
import * as lanes from './lanes.js';
import * as keys from './keys.js';
import * as workers from './workers.js';
import * as morgue from './morgue.js';
import * as schedules from './schedules.js';
import * as batches from './batches.js';
import * as tokens from './tokens.js';
import * as audit from './audit.js';

const VIEWS = {
  overview: overview.mount,
  tenants: tenants.mount,
  queues: queues.mount,
  jobs: jobs.mountList,
  job: jobs.mountJob,
  lanes: lanes.mount,
  keys: keys.mount,
  workers: workers.mount,
  morgue: morgue.mount,
  schedules: schedules.mount,
  batches: batches.mount,
  batch: batches.mountBatch,
  tokens: tokens.mount,
  audit: audit.mount,
};
const HISTORY_KEY = 'tenq.history';
const OPEN_KEY = 'tenq.open';
const HISTORY_MS = 3600e3 + 60e3;

const $ = (id) => document.getElementById(id);
let view = null;       // the mounted view: {title, refresh}
let timer = null;
let busy = false;
let again = false;
let paused = false;    // by the Pause button
let lastOk = 0;

// ---- history of samples for the charts (kept in this tab) -------------------------------------

function loadHistory() {
  try { ctx.history = JSON.parse(sessionStorage.getItem(HISTORY_KEY) || '[]'); } catch { ctx.history = []; }
  if (!Array.isArray(ctx.history)) ctx.history = [];
}
function sample(st) {
  const t = totals(st);
  if (!t) return;
  const last = ctx.history[ctx.history.length - 1];
  if (last && st.time - last.t < 1000) return;
  ctx.history.push({
    t: st.time, completed: t.completed_per_s || 0, failed: t.failed_per_s || 0, ready: t.ready, scheduled: t.scheduled,
    blocked: t.blocked, waiting: t.waiting || 0, inflight: t.leased + t.running, dead: t.dead,
  });
  const cut = st.time - HISTORY_MS;
  while (ctx.history.length && ctx.history[0].t < cut) ctx.history.shift();
  try { sessionStorage.setItem(HISTORY_KEY, JSON.stringify(ctx.history)); } catch { /* full: keep it in memory */ }
}

// ---- polling --------------------------------------------------------------------------------------

let polls = 0;          // polls completed (also in #live's data-polls, for tests)
function setLive(text, cls) {
  const el = $('live');
  el.dataset.polls = String(polls);
  el.dataset.busy = busy ? '1' : '0';
  el.textContent = text;
  // screen readers hear changes of state, not every tick of the clock
  if (el.className !== 'live ' + (cls || '')) $('live-sr').textContent = text.replace(/ · .*/, '');
  el.className = 'live ' + (cls || '');
}

async function poll() {
  clearTimeout(timer);
  timer = null;
  if (!hasSession()) return;
  if (busy) { again = true; return; }
  if (document.hidden || paused) {
    setLive(paused ? 'Paused' : 'Paused (tab hidden)', 'paused');
    return; // visibilitychange or the button starts it again
  }
  busy = true;
  $('live').dataset.busy = '1';
  try {
    const st = await api('GET', 'v1/stats');
    ctx.stats = st;
    ctx.skew = st.time - Date.now();
    sample(st);
    updateNav();
    if (view) await view.refresh();
    $('view-error').hidden = true;
    lastOk = Date.now();
    polls++;
    busy = false;
    setLive('Live · ' + fmtClock(Date.now(), true), 'ok');
  } catch (e) {
    if (e.status !== 401) {
      $('view-error').textContent = 'Refresh failed: ' + describe(e) + ' — retrying.';
      $('view-error').hidden = false;
      setLive('Offline since ' + (lastOk ? fmtClock(lastOk, true) : 'start'), 'bad');
    }
  } finally {
    busy = false;
    $('live').dataset.busy = '0';
  }
  if (!hasSession()) return;
  if (again) { again = false; poll(); return; }
  timer = setTimeout(poll, ctx.pollMs);
}
ctx.refresh = () => { if (busy) again = true; else poll(); };

document.addEventListener('visibilitychange', () => {
  if (!hasSession()) return;
  if (document.hidden) { clearTimeout(timer); timer = null; setLive('Paused (tab hidden)', 'paused'); }
  else poll();
});

function updateNav() {
  const t = totals();
  const dead = $('nav-dead');
  if (t && t.dead) { dead.textContent = fmtInt(t.dead); dead.hidden = false; } else dead.hidden = true;
  dead.setAttribute('aria-label', t && t.dead ? `${t.dead} dead` : '');
  // keys at their limit (the server's count: admins)
  const keys = $('nav-keys');
  const n = ctx.stats && ctx.stats.keys_at_limit;
  keys.hidden = !n;
  keys.textContent = n ? fmtInt(n) : '';
  keys.setAttribute('aria-label', n ? `${n} at their limit` : '');
}

// ---- routing --------------------------------------------------------------------------------------

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, query = ''] = raw.split('?');
  const [name = 'overview', arg = null] = path.split('/').map((x) => decodeURIComponent(x));
  return { name: name || 'overview', arg, params: new URLSearchParams(query) };
}

function allowed(link) {
  const roles = link.dataset.roles;
  if (!roles) return true;
  return roles.split(' ').some((r) => (r === 'tokens' ? ctx.tokens : r === ctx.role));
}

function route() {
  if (!hasSession()) return;
  const r = parseHash();
  const mount = VIEWS[r.name] || VIEWS.overview;
  for (const a of document.querySelectorAll('#nav a')) {
    const cur = a.dataset.view === r.name || (r.name === 'job' && a.dataset.view === 'jobs') ||
      (r.name === 'batch' && a.dataset.view === 'batches');
    if (cur) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  const root = $('view');
  root.replaceChildren();
  $('view-error').hidden = true;
  view = mount(root, r) || null;
  document.title = (view && view.title ? view.title + ' · ' : '') + 'tenq';
  ctx.refresh();
}
window.addEventListener('hashchange', () => {
  route();
  // move the focus to the new content, for keyboard and screen-reader users
  if (!document.activeElement || document.activeElement === document.body || document.activeElement.closest('#nav')) {
    $('main').focus({ preventScroll: true });
  }
});

// ---- signing in and out ------------------------------------------------------------------------------

async function whoAmI(token) {
  const [me, st] = await Promise.all([api('GET', 'v1/whoami', undefined, token), api('GET', 'v1/stats', undefined, token)]);
  ctx.stats = st;
  ctx.skew = st.time - Date.now();
  // a viewer reads what its scope reads (every tenant, or its own) and changes nothing
  ctx.readOnly = me.role === 'viewer';
  ctx.hideData = !!me.hide_data;
  ctx.role = ctx.readOnly ? (me.tenant ? 'tenant' : 'admin') : me.role;
  ctx.tenant = ctx.role === 'tenant' ? me.tenant : null;
  document.body.classList.toggle('read-only', ctx.readOnly);
  ctx.tokens = false;
  if (ctx.role === 'admin') {
    try { await api('GET', 'v1/tokens', undefined, token); ctx.tokens = true; } catch { ctx.tokens = false; }
  }
}

function showShell() {
  $('login').hidden = true;
  $('shell').hidden = false;
  const scope = ctx.role === 'tenant' ? 'tenant ' + (ctx.tenant || '?') : ctx.role;
  const who = ctx.readOnly ? 'viewer (' + (ctx.role === 'tenant' ? scope : 'every tenant') + ')' : scope;
  $('who').textContent = ctx.open ? who + ' (open server)' : who;
  $('who').title = ctx.open ? 'This server has no tokens: every request may do everything.' : 'The role of the token in use';
  // nothing to sign out of where no token is needed
  $('signout').hidden = ctx.open;
  for (const a of document.querySelectorAll('#nav a')) a.hidden = !allowed(a);
  route();
}

function showLogin(message) {
  clearTimeout(timer);
  timer = null;
  view = null;
  $('view').replaceChildren();
  $('shell').hidden = true;
  $('login').hidden = false;
  const err = $('login-error');
  err.textContent = message || '';
  err.hidden = !message;
  document.title = 'Sign in · tenq';
  // tell whether the server needs a token at all
  needsNoToken().then((open) => { $('login-open').hidden = !open; });
  $('login-token').focus();
}

// Whether the server needs no token: it has none and treats every request
// as an admin's (GET /v1/whoami without a token answers 200, "auth": false;
// a server with tokens answers 401).
async function needsNoToken() {
  try {
    const me = await api('GET', 'v1/whoami', undefined, '');
    return !!me && me.auth === false;
  } catch {
    return false;
  }
}

// Straight in, without the form, on a server that needs no token.
async function enterOpen() {
  await whoAmI('');
  ctx.open = true;
  setToken('');
  sessionStorage.setItem(OPEN_KEY, '1');
  sessionStorage.removeItem(HISTORY_KEY);
  ctx.history = [];
  showShell();
}

function signOut(message) {
  clearToken();
  sessionStorage.removeItem(HISTORY_KEY);
  sessionStorage.removeItem(OPEN_KEY);
  ctx.history = [];
  ctx.stats = null;
  ctx.role = null;
  ctx.readOnly = false;
  ctx.hideData = false;
  document.body.classList.remove('read-only');
  showLogin(message);
}

onUnauthenticated(() => signOut('The server refused the token (unknown or revoked). Sign in again.'));

$('login-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  const token = $('login-token').value.trim();
  const btn = e.submitter || $('login-form').querySelector('button');
  btn.disabled = true;
  try {
    await whoAmI(token);
    ctx.open = !token ? true : await api('GET', 'v1/stats', undefined, '').then(() => true, () => false);
    setToken(token);
    sessionStorage.setItem(OPEN_KEY, ctx.open ? '1' : '0');
    sessionStorage.removeItem(HISTORY_KEY);
    ctx.history = [];
    $('login-token').value = '';
    $('login-error').hidden = true;
    showShell();
  } catch (x) {
    const err = $('login-error');
    err.textContent = x.status === 401 ? (token ? 'The server does not know this token (or it was revoked).' : 'This server needs a token.')
      : describe(x);
    err.hidden = false;
  } finally {
    btn.disabled = false;
  }
});

$('signout').addEventListener('click', () => signOut());

// the skip link moves the focus; it must not change the route
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  $('main').focus();
});

$('pause').addEventListener('click', () => {
  paused = !paused;
  $('pause').setAttribute('aria-pressed', String(paused));
  $('pause').textContent = paused ? 'Resume' : 'Pause';
  if (paused) { clearTimeout(timer); timer = null; setLive('Paused', 'paused'); } else poll();
});

// ---- theme: follows the system until toggled --------------------------------------------------------

function currentTheme() {
  const t = document.documentElement.getAttribute('data-theme');
  if (t) return t;
  return matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}
function labelTheme() {
  const next = currentTheme() === 'dark' ? 'light' : 'dark';
  $('theme').textContent = next === 'dark' ? 'Dark' : 'Light';
  $('theme').setAttribute('aria-label', 'Switch to the ' + next + ' theme');
}
$('theme').addEventListener('click', () => {
  const next = currentTheme() === 'dark' ? 'light' : 'dark';
  document.documentElement.setAttribute('data-theme', next);
  try { localStorage.setItem('tenq.theme', next); } catch { /* not kept */ }
  labelTheme();
  if (view) view.refresh();
});
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', labelTheme);
labelTheme();

// ---- keyboard: "/" searches on pages with filters ----------------------------------------------------

document.addEventListener('keydown', (e) => {
  if (e.key !== '/' || e.ctrlKey || e.metaKey || e.altKey) return;
  const t = e.target;
  if (t && (t.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(t.tagName))) return;
  const first = document.querySelector('#view form.filters input:not([readonly])');
  if (first) { e.preventDefault(); first.focus(); }
});

// ---- start ------------------------------------------------------------------------------------------------

async function start() {
  loadHistory();
  if (!hasSession()) {
    // a server with no tokens (`make run`) has nothing to sign in with
    if (await needsNoToken()) {
      try { await enterOpen(); return; } catch (e) { showLogin('Cannot reach the server: ' + describe(e)); return; }
    }
    showLogin();
    return;
  }
  try {
    const token = getToken();
    await whoAmI(token);
    ctx.open = !token || sessionStorage.getItem(OPEN_KEY) === '1';
    showShell();
  } catch (e) {
    if (e.status === 401) signOut('The server refused the token. Sign in again.');
    else {
      showLogin('Cannot reach the server: ' + describe(e));
    }
  }
}
start();
