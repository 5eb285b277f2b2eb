// SPDX-License-Identifier: Apache-2.0
// Tenants: slots in use, counts, weight; slots and weight edited in place.
import { h, s, fmtInt, fmtRate, fmtDur, fmtBytes, KeyedTable, field } from './dom.js';
import { api } from './api.js';
import { ctx, isAdmin, toast, describe, denied, link, jobsHref, morgueHref } from './ctx.js';

function slotsText(t) { return t.slots === null ? 'unlimited' : fmtInt(t.slots); }

function usageBar(t) {
  if (t.slots === null) return null;
  const pct = t.slots === null ? 0 : t.slots === 0 ? 100 : Math.min(100, (100 * t.in_use) / t.slots);
  const full = t.slots !== null && t.in_use >= t.slots;
  return s('svg', { class: 'bar' + (full ? ' full' : ''), viewBox: '0 0 100 6', preserveAspectRatio: 'none', 'aria-hidden': 'true' },
    s('rect', { class: 'bar-bg', x: 0, y: 0, width: 100, height: 6, rx: 3 }),
    s('rect', { class: 'bar-fg', x: 0, y: 0, width: pct, height: 6, rx: 3 }));
}

// Reads the slots box: empty or "unlimited" -> null.
function parseSlots(v) {
  v = v.trim().toLowerCase();
  if (v === '' || v === 'unlimited' || v === '∞') return null;
  if (!/^\d+$/.test(v)) throw new Error('Slots must be a whole number ≥ 0, or empty for unlimited.');
  return Number(v);
}

export function mount(root) {
  const admin = isAdmin();
  const editors = new Map(); // name -> {slots, weight, error}
  let latest = [];

  async function save(name) {
    const ed = editors.get(name);
    if (!ed) return;
    let body;
    try {
      const w = ed.weight.value.trim();
      if (!/^\d+$/.test(w) || Number(w) < 1) throw new Error('Weight must be a whole number ≥ 1.');
      body = { slots: parseSlots(ed.slots.value), weight: Number(w) };
    } catch (e) {
      ed.error.textContent = e.message;
      ed.error.hidden = false;
      return;
    }
    ed.save.disabled = true;
    try {
      const t = await api('PUT', 'v1/tenants/' + encodeURIComponent(name), body);
      editors.delete(name);
      table.setEditing(name, false);
      toast(`Tenant ${name}: ${slotsText(t)} slots, weight ${t.weight}.`);
      const b = table.trs.get(name)?.querySelector('[data-fk^="edit-"]');
      if (b) b.focus();
      ctx.refresh();
    } catch (e) {
      ed.error.textContent = describe(e);
      ed.error.hidden = false;
      ed.save.disabled = false;
    }
  }
  function cancel(name) {
    editors.delete(name);
    table.setEditing(name, false);
    const b = table.trs.get(name)?.querySelector('[data-fk^="edit-"]');
    if (b) b.focus();
  }
  function edit(name) {
    const t = latest.find((x) => x.name === name);
    if (!t) return;
    const keys = (e) => {
      if (e.key === 'Enter') { e.preventDefault(); save(name); }
      if (e.key === 'Escape') { e.preventDefault(); cancel(name); }
    };
    const ed = {
      slots: h('input', { type: 'text', inputmode: 'numeric', class: 'cell-input', value: t.slots === null ? '' : String(t.slots),
        placeholder: 'unlimited', 'aria-label': `Slots of ${name} (empty: unlimited)`, 'data-fk': 'slots-' + name, onkeydown: keys }),
      weight: h('input', { type: 'number', min: '1', step: '1', class: 'cell-input', value: String(t.weight),
        'aria-label': `Weight of ${name}`, 'data-fk': 'weight-' + name, onkeydown: keys }),
      error: h('span', { class: 'error-text', role: 'alert', hidden: true }),
    };
    ed.save = h('button', { type: 'button', class: 'small primary', 'data-fk': 'save-' + name, onclick: () => save(name) }, 'Save');
    ed.actions = h('span', { class: 'row-actions' }, ed.save,
      h('button', { type: 'button', class: 'small ghost', onclick: () => cancel(name) }, 'Cancel'), ed.error);
    editors.set(name, ed);
    table.setEditing(name, true);
    ed.slots.focus();
    ed.slots.select();
  }

  const columns = [
    { key: 'name', label: 'Tenant', sort: (t) => t.name, render: (t) => link(jobsHref({ tenant: t.name }), t.name, { title: 'Jobs of ' + t.name }) },
    { key: 'slots', label: 'Slots in use', sort: (t) => (t.slots === null ? Infinity : t.slots),
      sig: (t, c) => (c.editing ? 'edit' : `${t.in_use}/${t.slots}`),
      render: (t, c) => c.editing ? h('span', { class: 'slots' }, `${fmtInt(t.in_use)} / `, editors.get(c.key).slots)
        : h('span', { class: 'slots' }, h('span', { 'data-slots': t.name, text: `${fmtInt(t.in_use)} / ${slotsText(t)}` }),
          usageBar(t), t.slots === 0 ? h('span', { class: 'badge st-paused', text: 'paused' }) : null) },
    { key: 'weight', label: 'Weight', num: true, sort: (t) => t.weight, sig: (t, c) => (c.editing ? 'edit' : String(t.weight)),
      render: (t, c) => (c.editing ? editors.get(c.key).weight : fmtInt(t.weight)) },
    { key: 'ready', label: 'Ready', num: true, sort: (t) => t.ready, render: (t) => fmtInt(t.ready) },
    { key: 'eligible', label: 'Eligible', num: true, sort: (t) => t.eligible, render: (t) => fmtInt(t.eligible) },
    { key: 'scheduled', label: 'Scheduled', num: true, sort: (t) => t.scheduled, render: (t) => fmtInt(t.scheduled) },
    { key: 'blocked', label: 'Blocked', num: true, sort: (t) => t.blocked, render: (t) => fmtInt(t.blocked) },
    { key: 'waiting', label: 'Waiting', num: true, sort: (t) => t.waiting, render: (t) => fmtInt(t.waiting) },
    { key: 'leased', label: 'Leased', num: true, sort: (t) => t.leased, render: (t) => fmtInt(t.leased) },
    { key: 'running', label: 'Running', num: true, sort: (t) => t.running, render: (t) => fmtInt(t.running) },
    { key: 'dead', label: 'Dead', num: true, sort: (t) => t.dead,
      render: (t) => (t.dead ? link(morgueHref({ tenant: t.name }), fmtInt(t.dead), { title: 'Morgue of ' + t.name }) : '0') },
    { key: 'lag', label: 'Lag', num: true, sort: (t) => t.lag_ms, render: (t) => fmtDur(t.lag_ms) },
    { key: 'rate', label: 'Done / s', num: true, sort: (t) => t.completed_per_s, render: (t) => fmtRate(t.completed_per_s) },
    { key: 'queued', label: 'Queued / quota', num: true, sort: (t) => t.queued,
      sig: (t) => `${t.queued}/${t.max_queued}/${t.queued_bytes}/${t.max_queued_bytes}`,
      render: (t) => h('span', {
        'data-queued': t.name,
        title: `${fmtBytes(t.queued_bytes)} of args` + (t.max_queued_bytes ? ` of ${fmtBytes(t.max_queued_bytes)}` : ''),
        text: `${fmtInt(t.queued)} / ${t.max_queued === null ? 'no quota' : fmtInt(t.max_queued)}`,
      }) },
  ];
  if (admin) {
    columns.push({ key: 'act', label: 'Actions', sig: (t, c) => (c.editing ? 'edit' : 'view'),
      render: (t, c) => c.editing ? editors.get(c.key).actions
        : h('button', { type: 'button', 'data-write': true, class: 'small', 'data-fk': 'edit-' + t.name, 'aria-label': 'Edit slots and weight of ' + t.name,
          onclick: () => edit(t.name) }, 'Edit') });
  }
  const table = new KeyedTable({ caption: 'Tenants', columns, rowKey: (t) => t.name, sort: { key: 'name', dir: 1 },
    empty: 'No tenants yet: they are made by their first job, or below.' });
  const status = h('div');

  let addForm = null;
  if (admin) {
    const name = h('input', { type: 'text', required: true, pattern: '[A-Za-z0-9._\\-]{1,64}', spellcheck: 'false' });
    const slots = h('input', { type: 'text', inputmode: 'numeric', placeholder: 'unlimited' });
    const weight = h('input', { type: 'number', min: '1', step: '1', value: '1' });
    const err = h('p', { class: 'error-text', role: 'alert', hidden: true });
    addForm = h('details', { class: 'panel', 'data-write': true }, h('summary', { text: 'Add or set a tenant' }),
      h('form', {
        class: 'inline-form',
        onsubmit: async (e) => {
          e.preventDefault();
          err.hidden = true;
          try {
            const body = { slots: parseSlots(slots.value), weight: Number(weight.value || 1) };
            const t = await api('PUT', 'v1/tenants/' + encodeURIComponent(name.value.trim()), body);
            toast(`Tenant ${t.name} set: ${slotsText(t)} slots, weight ${t.weight}.`);
            name.value = ''; slots.value = '';
            ctx.refresh();
          } catch (x) { err.textContent = x.status ? describe(x) : x.message; err.hidden = false; }
        },
      }, field('Name', name), field('Slots', slots, 'empty: unlimited; 0 pauses'), field('Weight', weight),
      h('button', { type: 'submit', class: 'primary' }, 'Save'), err));
  }

  root.append(h('div', { class: 'page-head' }, h('h1', { text: admin ? 'Tenants' : 'Tenant' }),
    h('p', { class: 'muted', text: 'Slots: how many jobs a tenant may have leased or running at once (0 pauses it). Weight: its share on fair queues.' })),
  status, table.el, addForm);

  return {
    title: 'Tenants',
    async refresh() {
      try {
        const r = await api('GET', 'v1/tenants');
        latest = r.tenants || [];
        status.replaceChildren();
        table.update(latest);
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Tenants'));
      }
    },
  };
}
