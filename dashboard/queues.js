// SPDX-License-Identifier: Apache-2.0
// Queues: depth by state, lag, rates and settings; settings edited in place.
import { h, fmtInt, fmtRate, fmtDur, KeyedTable, field } from './dom.js';
import { api } from './api.js';
import { ctx, isAdmin, toast, describe, denied, link, jobsHref, morgueHref } from './ctx.js';

// The queue settings as the server describes them (GET /v1/settings: one
// table drives the server, the CLI and this form): [name, label, kind,
// choices or hint], kind one of select, ms, int, bool, cap.
let SETTINGS = [];
async function loadSettings() {
  if (SETTINGS.length) return SETTINGS;
  const r = await api('GET', 'v1/settings');
  const kinds = { choice: 'select', ms: 'ms', count: 'int', bytes: 'int', bool: 'bool', limit: 'cap' };
  SETTINGS = r.queue.map((s) => [s.name, s.label + (s.kind === 'ms' ? ' (ms)' : s.kind === 'bytes' ? ' (bytes)' : ''),
    kinds[s.kind], s.kind === 'choice' ? s.choices : s.help + (s.kind === 'limit' ? '; empty: none' : '')]);
  return SETTINGS;
}

function summary(q) {
  const parts = [q.order, q.delivery, 'lease ' + fmtDur(q.lease_ms), q.max_attempts + ' attempts', 'backoff ' + q.backoff];
  if (q.merge) parts.push('merge');
  if (q.tenant_cap !== null) parts.push('cap ' + q.tenant_cap + '/tenant');
  if (q.timeout_ms) parts.push('timeout ' + fmtDur(q.timeout_ms));
  return parts.join(' · ');
}

// Paused: the whole queue, or for some tenants (a tenant sees only its own).
function pausedText(q) {
  if (q.paused) return 'paused';
  const n = (q.paused_tenants || []).length;
  if (!n) return '';
  return ctx.role === 'tenant' ? 'paused for you' : `paused for ${n === 1 ? q.paused_tenants[0] : n + ' tenants'}`;
}

export function mount(root) {
  const admin = isAdmin();
  let latest = [];
  const forms = new Map();

  function close(name) {
    forms.delete(name);
    table.setDetail(name, null);
    table.setEditing(name, false);
    const b = table.trs.get(name)?.querySelector('[data-fk^="qedit-"]');
    if (b) b.focus();
  }

  // An admin pauses the whole queue; a tenant its own jobs in it.
  async function pauseOrResume(q) {
    const mine = ctx.role === 'tenant';
    const paused = mine ? (q.paused_tenants || []).length > 0 : q.paused;
    const what = paused ? 'resume' : 'pause';
    try {
      await api('POST', `v1/queues/${encodeURIComponent(q.name)}/${what}`);
      toast(`Queue ${q.name}${mine ? ' (your jobs)' : ''} ${paused ? 'resumed' : 'paused'}.`);
      ctx.refresh();
    } catch (x) {
      toast(describe(x), 'error');
    }
  }

  async function edit(name) {
    if (forms.has(name)) { close(name); return; }
    try { await loadSettings(); } catch (x) { toast(describe(x)); return; }
    const q = latest.find((x) => x.name === name);
    if (!q) return;
    const inputs = {};
    const fields = SETTINGS.map(([k, label, kind, extra]) => {
      let input;
      if (kind === 'select') input = h('select', { name: k, value: q[k] }, extra.map((c) => h('option', { value: c, text: c })));
      else if (kind === 'bool') input = h('input', { type: 'checkbox', name: k, checked: q[k] });
      else if (kind === 'cap') input = h('input', { type: 'text', inputmode: 'numeric', name: k, placeholder: 'none', value: q[k] === null ? '' : String(q[k]) });
      else input = h('input', { type: 'number', min: '0', step: '1', name: k, value: String(q[k]) });
      inputs[k] = input;
      let hint = kind === 'select' ? '' : extra;
      if (kind === 'ms') {
        const human = h('small', { class: 'muted human', text: '= ' + fmtDur(q[k]) });
        input.addEventListener('input', () => { human.textContent = '= ' + fmtDur(Number(input.value)); });
        return h('div', { class: 'field' }, field(label, input, hint), human);
      }
      return kind === 'bool' ? h('div', { class: 'field check' }, input, h('label', { for: input.id || (input.id = 'q-' + name + '-' + k), text: label }))
        : field(label, input, hint);
    });
    const err = h('p', { class: 'error-text', role: 'alert', hidden: true });
    const form = h('form', {
      class: 'settings-form', 'aria-label': 'Settings of queue ' + name,
      onkeydown: (e) => { if (e.key === 'Escape') { e.preventDefault(); close(name); } },
      onsubmit: async (e) => {
        e.preventDefault();
        err.hidden = true;
        const body = {};
        for (const [k, , kind] of SETTINGS) {
          const inp = inputs[k];
          let v;
          if (kind === 'select') v = inp.value;
          else if (kind === 'bool') v = inp.checked;
          else if (kind === 'cap') {
            const t = inp.value.trim();
            if (t === '') v = null;
            else if (/^\d+$/.test(t)) v = Number(t);
            else { err.textContent = 'The per-tenant cap is a whole number, or empty for none.'; err.hidden = false; return; }
          } else {
            if (!/^\d+$/.test(inp.value.trim())) { err.textContent = `${k} must be a whole number ≥ 0.`; err.hidden = false; inp.focus(); return; }
            v = Number(inp.value);
          }
          if (v !== q[k]) body[k] = v;
        }
        if (!Object.keys(body).length) { close(name); return; }
        try {
          await api('PUT', 'v1/queues/' + encodeURIComponent(name), body);
          toast(`Queue ${name}: ${Object.keys(body).join(', ')} changed.`);
          close(name);
          ctx.refresh();
        } catch (x) {
          err.textContent = describe(x);
          err.hidden = false;
          if (x.field && inputs[x.field]) inputs[x.field].focus();
        }
      },
    }, h('h3', { text: 'Settings of ' + name }), h('div', { class: 'form-grid' }, fields), err,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Save settings'),
      h('button', { type: 'button', class: 'ghost', onclick: () => close(name) }, 'Cancel')));
    forms.set(name, form);
    table.setEditing(name, true);
    table.setDetail(name, form);
    form.querySelector('select, input').focus();
  }

  const num = (k, label) => ({ key: k, label, num: true, sort: (q) => q[k], render: (q) => fmtInt(q[k]) });
  const columns = [
    { key: 'name', label: 'Queue', sort: (q) => q.name, render: (q) => link(jobsHref({ queue: q.name }), q.name, { title: 'Jobs in ' + q.name }) },
    num('ready', 'Ready'), num('eligible', 'Eligible'), num('scheduled', 'Scheduled'), num('blocked', 'Blocked'), num('waiting', 'Waiting'),
    num('leased', 'Leased'), num('running', 'Running'),
    { key: 'dead', label: 'Dead', num: true, sort: (q) => q.dead, render: (q) => (q.dead ? link(morgueHref({ queue: q.name }), fmtInt(q.dead)) : '0') },
    { key: 'lag', label: 'Lag', num: true, sort: (q) => q.lag_ms, render: (q) => fmtDur(q.lag_ms) },
    { key: 'rate', label: 'Done / s', num: true, sort: (q) => q.completed_per_s ?? null, render: (q) => fmtRate(q.completed_per_s) },
    { key: 'frate', label: 'Failed / s', num: true, sort: (q) => q.failed_per_s ?? null, render: (q) => fmtRate(q.failed_per_s) },
    { key: 'paused', label: 'Paused', sort: (q) => pausedText(q), render: (q) => h('span', { class: pausedText(q) ? 'badge warn' : 'muted', text: pausedText(q) || '–' }) },
    { key: 'settings', label: 'Settings', render: (q) => h('span', { class: 'small', text: summary(q) }) },
  ];
  const pauseButton = (q) => {
    const paused = ctx.role === 'tenant' ? (q.paused_tenants || []).length > 0 : q.paused;
    return h('button', { type: 'button', 'data-write': true, class: 'small ghost', 'data-fk': 'qpause-' + q.name,
      'aria-label': (paused ? 'Resume ' : 'Pause ') + q.name, onclick: () => pauseOrResume(q) }, paused ? 'Resume' : 'Pause');
  };
  if (admin) {
    columns.push({ key: 'act', label: 'Actions', sig: (q, c) => (c.editing ? 'e' : 'v') + pausedText(q),
      render: (q, c) => h('span', { class: 'row-actions', 'data-write': true }, h('button', { type: 'button', class: 'small', 'data-fk': 'qedit-' + q.name, 'aria-expanded': String(c.editing),
        'aria-label': (c.editing ? 'Close the settings of ' : 'Edit the settings of ') + q.name, onclick: () => edit(q.name) }, c.editing ? 'Close' : 'Edit'), ' ', pauseButton(q)) });
  } else if (ctx.role === 'tenant') {
    columns.push({ key: 'act', label: 'Actions', sig: (q) => pausedText(q), render: (q) => pauseButton(q) });
  }
  const table = new KeyedTable({ caption: 'Queues', columns, rowKey: (q) => q.name, sort: { key: 'name', dir: 1 },
    empty: 'No queues yet: a queue is made by its first job or its first setting.' });
  const status = h('div');
  const note = h('p', { class: 'muted' },
    admin ? 'Counts of every tenant. Settings take effect at once.' : 'Counts of your own jobs; settings are the queue\'s.');
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Queues' }), note), status, table.el);

  return {
    title: 'Queues',
    async refresh() {
      try {
        const r = await api('GET', 'v1/queues');
        // the server shows a tenant only the queues it has jobs in
        const qs = r.queues || [];
        latest = qs;
        status.replaceChildren();
        table.update(qs);
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Queues'));
      }
    },
  };
}
