// SPDX-License-Identifier: Apache-2.0
// The audit log: every change made through the API, newest first (GET /v1/audit).
import { h, fmtRel, timeEl, KeyedTable } from './dom.js';
import { api } from './api.js';
import { ctx, now, denied } from './ctx.js';

export function mount(root) {
  const status = h('div');
  const table = new KeyedTable({
    caption: 'Audit log', rowKey: (e) => e.id, sort: { key: 'id', dir: -1 },
    empty: 'No change has been made through the API yet (or none is kept any more).',
    columns: [
      { key: 'id', label: 'ID', num: true, sort: (e) => e.id, render: (e) => String(e.id) },
      { key: 'at', label: 'When', sort: (e) => e.at,
        render: (e) => h('span', null, timeEl(e.at, now()), ' ', h('small', { class: 'muted', text: fmtRel(e.at, now()) })) },
      { key: 'who', label: 'Who', sort: (e) => e.role + (e.token_id || 0),
        render: (e) => h('span', null, h('code', { text: e.role }), e.token_id ? h('small', { class: 'muted', text: ` token ${e.token_id}` }) : null) },
      { key: 'what', label: 'Request', sort: (e) => e.path, render: (e) => h('code', { 'data-audit': String(e.id), text: `${e.method} ${e.path}` }) },
      { key: 'status', label: 'Status', num: true, sort: (e) => e.status, render: (e) => String(e.status) },
      { key: 'peer', label: 'From', sort: (e) => e.peer, render: (e) => h('code', { text: e.peer || '—' }) },
      { key: 'detail', label: 'Body', render: (e) => (e.detail ? h('code', { class: 'small', text: e.detail.length > 120 ? e.detail.slice(0, 117) + '…' : e.detail }) : h('span', { class: 'muted', text: '—' })) },
    ],
  });
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Audit log' }),
    h('p', { class: 'muted', text: ctx.role === 'tenant'
      ? 'Changes made with this tenant\'s tokens: who, when, from where, and the request.'
      : 'Every change made through the API (settings, pauses, tokens, bulk actions, cancels, the morgue, schedules): who, when, from where, and the request.' })),
  status, table.el);
  return {
    title: 'Audit log',
    async refresh() {
      try {
        const r = await api('GET', 'v1/audit?limit=200');
        status.replaceChildren();
        table.update(r.entries || []);
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Audit log'));
      }
    },
  };
}
