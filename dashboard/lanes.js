// SPDX-License-Identifier: Apache-2.0
// Lanes: the longest lanes, their head job, and what holds the head.
import { h, fmtInt, fmtRel, timeEl, badge, KeyedTable } from './dom.js';
import { api, qs } from './api.js';
import { ctx, now, denied, link, jobsHref } from './ctx.js';

function blocker(l, tenants, t) {
  const ten = tenants.get(l.tenant);
  switch (l.head_state) {
    case 'ready':
      if (ten && ten.slots === 0) return `Tenant ${l.tenant} is paused (0 slots).`;
      if (ten && ten.slots !== null && ten.in_use >= ten.slots)
        return `Tenant ${l.tenant} uses all its slots (${ten.in_use} / ${ten.slots}).`;
      return 'The head is ready: waiting for a worker on this queue.';
    case 'scheduled':
      return l.head_run_at > t ? `The head waits for its run_at (${fmtRel(l.head_run_at, t)}): a delay or a retry after a failure.`
        : 'The head is due now.';
    case 'leased': return 'The head is leased by a worker that has not started it yet.';
    case 'running': return 'The head is running: the rest of the lane waits for it.';
    case 'blocked': return 'The head is blocked.';
    default: return `The head is ${l.head_state}.`;
  }
}

export function mount(root) {
  let limit = 50;
  const total = h('p', { class: 'muted', role: 'status' });
  const status = h('div');
  const table = new KeyedTable({
    caption: 'Lanes', rowKey: (l) => `${l.tenant}\u0000${l.queue}\u0000${l.key}`, sort: { key: 'length', dir: -1 },
    empty: 'No lane has waiting jobs.',
    columns: [
      { key: 'tenant', label: 'Tenant', sort: (l) => l.tenant, render: (l) => l.tenant },
      { key: 'queue', label: 'Queue', sort: (l) => l.queue, render: (l) => l.queue },
      { key: 'key', label: 'Key', sort: (l) => l.key, render: (l) => link(jobsHref({ tenant: l.tenant, queue: l.queue, key: l.key }), l.key, { title: 'Jobs of this lane' }) },
      { key: 'length', label: 'Length', num: true, sort: (l) => l.length, render: (l) => fmtInt(l.length) },
      { key: 'head', label: 'Head job', num: true, sort: (l) => l.head_id, render: (l) => link('#/job/' + l.head_id, String(l.head_id)) },
      { key: 'state', label: 'Head state', sort: (l) => l.head_state, render: (l) => badge(l.head_state) },
      { key: 'run_at', label: 'Head run at', sort: (l) => l.head_run_at, render: (l) => timeEl(l.head_run_at, now()) },
      { key: 'why', label: 'What holds it', render: (l) => h('span', { class: 'small', text: blocker(l, tenantsMap(), now()) }) },
    ],
  });
  function tenantsMap() {
    return new Map(((ctx.stats && ctx.stats.tenants) || []).map((t) => [t.name, t]));
  }
  const more = h('button', { type: 'button', hidden: true, onclick: () => { limit = Math.min(1000, limit * 2); ctx.refresh(); } }, 'Show more lanes');
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Lanes' }),
    h('p', { class: 'muted', text: 'Jobs with the same key run one at a time, in order: a lane waits for its head. The longest lanes first.' })),
  total, status, table.el, h('div', { class: 'more' }, more));

  return {
    title: 'Lanes',
    async refresh() {
      try {
        const r = await api('GET', 'v1/lanes' + qs({ limit }));
        status.replaceChildren();
        total.textContent = `${fmtInt(r.lanes_total)} lane${r.lanes_total === 1 ? '' : 's'} with jobs; the ${Math.min(limit, r.lanes.length)} longest below.`;
        table.update(r.lanes);
        more.hidden = r.lanes.length < limit || limit >= 1000;
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Lanes'));
      }
    },
  };
}
