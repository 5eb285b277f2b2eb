// SPDX-License-Identifier: Apache-2.0
// What every view shares: who is signed in, the latest /v1/stats, the
// client-side history of samples, and the toasts and confirmation dialog.
import { h, LIVE } from './dom.js';

export const ctx = {
  role: null,        // 'admin' | 'tenant' | 'worker'; a viewer's scope: 'admin' or 'tenant'
  tenant: null,      // the tenant of a tenant token, when known
  readOnly: false,   // a viewer token: every button that changes something is hidden
  hideData: false,   // a viewer that sees jobs without their args and results
  open: false,       // the server needs no token
  tokens: false,     // GET /v1/tokens is allowed
  stats: null,       // the last GET /v1/stats
  skew: 0,           // server clock - browser clock (ms)
  history: [],       // samples for the charts
  pollMs: 3000,
  refresh: () => {}, // run a poll now (after a change)
};

export function now() { return Date.now() + ctx.skew; }
export const isAdmin = () => ctx.role === 'admin';

// The totals the signed-in token may see: the server's totals for an admin
// (with the rates summed over queues), its own tenant for a tenant token.
export function totals(st = ctx.stats) {
  if (!st) return null;
  const qs = st.queues || [];
  const sum = (k) => qs.reduce((a, q) => a + (q[k] || 0), 0);
  if (st.totals) return st.totals;
  if (st.tenants && st.tenants.length === 1) return st.tenants[0];
  const keys = [...LIVE, 'eligible', 'submitted_total',
    'succeeded_total', 'failed_total', 'dead_total', 'cancelled_total', 'completed_per_s', 'failed_per_s'];
  const t = {};
  for (const k of keys) t[k] = sum(k);
  t.lag_ms = Math.max(0, ...qs.map((q) => q.lag_ms || 0));
  return t;
}

export function toast(message, kind = 'info') {
  const box = document.getElementById('toasts');
  const el = h('div', { class: 'toast ' + kind, role: kind === 'error' ? 'alert' : 'status' }, message);
  box.append(el);
  setTimeout(() => el.remove(), kind === 'error' ? 8000 : 4000);
}

// A modal question; resolves true when confirmed.  Escape or Cancel: false.
export function confirmDialog({ title, body, ok = 'OK', danger = false }) {
  const dlg = document.getElementById('confirm');
  document.getElementById('confirm-title').textContent = title;
  const b = document.getElementById('confirm-body');
  b.replaceChildren(...(Array.isArray(body) ? body : [body]).map((x) => (x instanceof Node ? x : h('p', { text: x }))));
  const okb = document.getElementById('confirm-ok');
  okb.textContent = ok;
  okb.classList.toggle('danger', danger);
  const back = document.activeElement;
  dlg.returnValue = '';
  dlg.showModal();
  document.getElementById('confirm-cancel').focus();
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => {
      if (back && back.isConnected) back.focus();
      resolve(dlg.returnValue === 'ok');
    }, { once: true });
  });
}

// Words for an error from the API.
export function describe(err) {
  if (!err) return '';
  if (err.status === 403) return 'This token may not do this (' + err.message + ').';
  if (err.status === 404) return err.message || 'Not found.';
  return err.message + (err.field ? ` (field: ${err.field})` : '') + (err.status ? ` [${err.status} ${err.code}]` : '');
}

// A box saying why a section cannot be shown.
export function denied(err, what) {
  return h('div', { class: 'banner ' + (err.status === 403 ? 'info' : 'error'), role: 'status' },
    err.status === 403 ? `${what}: not available to this token.` : `${what}: ${describe(err)}`);
}

// Links within the page.
export function link(hash, text, props = {}) {
  return h('a', { href: hash, ...props }, text);
}
export function jobsHref(filter) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v !== null && v !== undefined && v !== '') u.set(k, v);
  const q = u.toString();
  return '#/jobs' + (q ? '?' + q : '');
}
export function morgueHref(filter) {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(filter)) if (v !== null && v !== undefined && v !== '') u.set(k, v);
  const q = u.toString();
  return '#/morgue' + (q ? '?' + q : '');
}
