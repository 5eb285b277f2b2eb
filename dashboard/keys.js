// SPDX-License-Identifier: Apache-2.0
// Keys: the concurrency and rate keys resident jobs name, those at their
// limit first; one key opened shows the jobs holding it and the jobs it
// holds back; key settings (admin) from the server's table of settings.
import { h, fmtInt, fmtDur, fmtRel, KeyedTable, field } from './dom.js';
import { api, qs } from './api.js';
import { ctx, now, isAdmin, toast, describe, denied, link, confirmDialog } from './ctx.js';

// The key settings as the server describes them (GET /v1/settings "key":
// the table that drives the server, the CLI and this form).
let SETTINGS = [];
async function loadSettings() {
  if (!SETTINGS.length) SETTINGS = (await api('GET', 'v1/settings')).key || [];
  return SETTINGS;
}

const rowKey = (k) => `${k.tenant}\u0000${k.key}`;

function limitText(k) {
  return k.limit === null ? 'none' : `${fmtInt(k.active)} / ${fmtInt(k.limit)}`;
}

function rateText(r, t) {
  if (!r) return '—';
  const per = r.rate_period_ms === 1000 ? 's' : fmtDur(r.rate_period_ms);
  return `${fmtInt(r.rate)} / ${per}, burst ${fmtInt(r.rate_burst)}` + (r.until ? ` · next unit ${fmtRel(r.until, t)}` : '');
}

function jobLinks(ids, none) {
  if (!ids || !ids.length) return h('span', { class: 'muted', text: none });
  return h('span', null, ids.flatMap((id, i) => [i ? ', ' : null, link('#/job/' + id, 'job ' + id)]));
}

export function mount(root, r) {
  const admin = isAdmin();
  const params = (r && r.params) || new URLSearchParams();
  let atLimit = params.get('at_limit') === 'true';
  let limit = 100;
  const open = new Map(); // rowKey -> {tenant, key}: keys whose jobs are shown
  // #/keys?tenant=T&key=K (a job's page links its keys so): that key alone, opened
  const one = params.get('key') && (params.get('tenant') || ctx.tenant)
    ? { tenant: params.get('tenant') || ctx.tenant, key: params.get('key') } : null;
  if (one) open.set(rowKey(one), one);
  const total = h('p', { class: 'muted', role: 'status', 'data-fk': 'keys-total' });
  const status = h('div');

  async function showJobs(k) {
    const id = rowKey(k);
    if (open.has(id)) { open.delete(id); table.setDetail(id, null); return; }
    open.set(id, { tenant: k.tenant, key: k.key });
    await refreshOpen(id);
  }
  async function refreshOpen(id) {
    const o = open.get(id);
    if (!o) return;
    try {
      const one = (await api('GET', 'v1/keys' + qs({ tenant: o.tenant, key: o.key }))).keys[0];
      if (!open.has(id)) return;
      table.setDetail(id, one ? h('div', { class: 'key-jobs', 'data-fk': 'key-jobs' },
        h('p', null, h('strong', { text: 'Holding it: ' }), jobLinks(one.holders, 'no job runs with it now')),
        h('p', null, h('strong', { text: one.at_limit ? 'Held back by it: ' : 'Ready with it: ' }), jobLinks(one.jobs, 'none'),
          one.ready > (one.jobs || []).length ? h('small', { class: 'muted', text: ` (${fmtInt(one.ready)} in all)` }) : null))
        : h('p', { class: 'muted', text: 'No resident job names this key any more.' }));
    } catch (e) {
      table.setDetail(id, h('p', { class: 'error-text', text: describe(e) }));
    }
  }

  const table = new KeyedTable({
    caption: 'Keys', rowKey, sort: null,
    rowClass: (k) => (k.at_limit ? 'at-limit' : ''),
    empty: 'No resident job names a key.',
    columns: [
      { key: 'tenant', label: 'Tenant', sort: (k) => k.tenant, render: (k) => k.tenant },
      { key: 'key', label: 'Key', sort: (k) => k.key, render: (k) => h('code', { text: k.key }) },
      { key: 'state', label: 'At its limit', sort: (k) => (k.at_limit ? 0 : 1),
        render: (k) => (k.at_limit ? h('span', { class: 'badge warn', 'data-at-limit': k.key, text: k.rate && k.rate.until && !(k.limit !== null && k.active >= k.limit) ? 'rate' : 'at limit' }) : '') },
      { key: 'limit', label: 'Running / limit', num: true, sort: (k) => k.active, render: (k) => limitText(k) },
      { key: 'held', label: 'Held back', num: true, sort: (k) => k.held, render: (k) => fmtInt(k.held) },
      { key: 'ready', label: 'Ready', num: true, sort: (k) => k.ready, render: (k) => fmtInt(k.ready) },
      { key: 'rate', label: 'Rate', render: (k) => h('span', { class: 'small', text: rateText(k.rate, now()) }) },
      { key: 'setting', label: 'Setting', render: (k) => (k.setting || (k.rate && k.rate.setting) ? h('code', { text: k.setting || k.rate.setting }) : h('span', { class: 'muted', text: 'the jobs\'' })) },
      { key: 'jobs', label: 'Jobs', render: (k) => h('button', { type: 'button', class: 'small', 'data-fk': 'kjobs-' + rowKey(k),
        'aria-expanded': String(open.has(rowKey(k))), 'aria-label': `Jobs holding and held by ${k.key}`, onclick: () => showJobs(k) },
      open.has(rowKey(k)) ? 'Hide jobs' : 'Who holds, who waits') },
    ],
  });

  const only = h('input', { type: 'checkbox', checked: atLimit, 'data-fk': 'keys-at-limit',
    onchange: () => { atLimit = only.checked; ctx.refresh(); } });
  const filters = h('div', { class: 'filters-row' }, h('label', null, only, ' Only keys at their limit'));
  const more = h('button', { type: 'button', hidden: true, onclick: () => { limit = Math.min(1000, limit * 2); ctx.refresh(); } }, 'Show more keys');

  // ---- key settings (admin) ------------------------------------------------------------------
  const settingsTable = new KeyedTable({
    caption: 'Key settings', rowKey, sort: { key: 'key', dir: 1 }, empty: 'No key settings: limits come from the jobs.',
    columns: [
      { key: 'tenant', label: 'Tenant', sort: (x) => x.tenant, render: (x) => x.tenant },
      { key: 'key', label: 'Key or prefix*', sort: (x) => x.key, render: (x) => h('code', { text: x.key }) },
      { key: 'concurrency', label: 'Concurrency', num: true, render: (x) => (x.concurrency === null ? 'jobs\'' : fmtInt(x.concurrency)) },
      { key: 'rate', label: 'Rate', render: (x) => (x.rate === null ? 'jobs\'' : `${fmtInt(x.rate)} / ${fmtDur(x.rate_period_ms)}` + (x.rate_burst !== null ? `, burst ${fmtInt(x.rate_burst)}` : '')) },
      ...(admin ? [{ key: 'act', label: 'Actions', render: (x) => h('button', { type: 'button', class: 'small ghost danger-text',
        'data-fk': 'kdel-' + rowKey(x), onclick: () => removeSetting(x) }, 'Delete') }] : []),
    ],
  });
  async function removeSetting(x) {
    const ok = await confirmDialog({ title: `Delete the setting of ${x.key}?`, ok: 'Delete', danger: true,
      body: `Keys of ${x.tenant} it covered take their limits from a shorter prefix's setting, else from their jobs, at once.` });
    if (!ok) return;
    try {
      await api('DELETE', 'v1/key-settings' + qs({ tenant: x.tenant, key: x.key }));
      toast(`Key setting ${x.key} of ${x.tenant} deleted.`);
      ctx.refresh();
    } catch (e) { toast(describe(e), 'error'); }
  }

  let form = null;
  if (admin) {
    const tenant = h('input', { type: 'text', required: true, spellcheck: 'false', 'data-fk': 'kset-tenant' });
    const key = h('input', { type: 'text', required: true, spellcheck: 'false', placeholder: 'account:* or account:42', 'data-fk': 'kset-key' });
    const inputs = {};
    const box = h('div', { class: 'inline-form' });
    const err = h('p', { class: 'error-text', role: 'alert', hidden: true });
    form = h('details', { class: 'panel', ontoggle: async () => {
      if (!form.open || box.childElementCount) return;
      try {
        const rows = await loadSettings();
        box.append(field('Tenant', tenant), field('Key', key, 'a key, or a prefix ending in *'),
          ...rows.map((s) => {
            inputs[s.name] = h('input', { type: 'text', inputmode: 'numeric', name: s.name, 'data-fk': 'kset-' + s.name,
              placeholder: s.default === null ? 'the jobs\'' : String(s.default) });
            return field(s.label + (s.kind === 'ms' ? ' (ms)' : ''), inputs[s.name], s.help);
          }),
          h('button', { type: 'submit', class: 'primary' }, 'Save'), err);
      } catch (e) { err.textContent = describe(e); err.hidden = false; box.append(err); }
    } }, h('summary', { text: 'Set a key\'s limits' }),
    h('form', {
      onsubmit: async (e) => {
        e.preventDefault();
        err.hidden = true;
        const body = { tenant: tenant.value.trim(), key: key.value.trim() };
        for (const s of SETTINGS) {
          const v = inputs[s.name].value.trim();
          if (v === '') { if (s.kind !== 'ms') body[s.name] = null; continue; }
          if (!/^\d+$/.test(v)) { err.textContent = `${s.label} must be a whole number, or empty.`; err.hidden = false; return; }
          body[s.name] = Number(v);
        }
        try {
          const x = await api('PUT', 'v1/key-settings', body);
          toast(`Key ${x.key} of ${x.tenant}: concurrency ${x.concurrency === null ? 'the jobs\'' : x.concurrency}.`);
          ctx.refresh();
        } catch (x) { err.textContent = describe(x); err.hidden = false; }
      },
    }, box));
  }

  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Keys' }),
    h('p', { class: 'muted', text: 'Concurrency keys: at most a key\'s limit of its tenant\'s jobs naming it run at once, across queues and types. Rate keys: each start takes its cost from the key\'s rate. Keys at their limit first.' })),
  filters, total, status, table.el, h('div', { class: 'more' }, more),
  h('h2', { text: 'Key settings' }), settingsTable.el, form);

  return {
    title: 'Keys',
    async refresh() {
      try {
        const tenant = ctx.role === 'tenant' ? ctx.tenant : params.get('tenant');
        const page = await api('GET', 'v1/keys' + qs(one ? one : { tenant, at_limit: atLimit ? 'true' : null, limit }));
        status.replaceChildren();
        total.replaceChildren(one ? h('span', null, `Key ${one.key} of ${one.tenant}. `, link('#/keys', 'Every key'))
          : `${fmtInt(page.total)} key${page.total === 1 ? '' : 's'}${atLimit ? ' at their limit' : ' named by resident jobs'}; ` +
            `${fmtInt(page.keys_at_limit)} at their limit in all.`);
        filters.hidden = !!one;
        table.update(page.keys);
        more.hidden = page.keys.length < limit || limit >= 1000;
        for (const id of open.keys()) await refreshOpen(id);
        const st = await api('GET', 'v1/key-settings' + qs({ tenant }));
        settingsTable.update(st.settings || []);
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Keys'));
      }
    },
  };
}
