// SPDX-License-Identifier: Apache-2.0
// Workers: who asked for jobs, for which queues, what each holds now, when last seen.
import { h, fmtInt, fmtRel, timeEl, KeyedTable } from './dom.js';
import { api } from './api.js';
import { now, denied, link, jobsHref } from './ctx.js';

export function mount(root) {
  const status = h('div');
  const table = new KeyedTable({
    caption: 'Workers', rowKey: (w) => w.name, sort: { key: 'seen', dir: -1 },
    empty: 'No worker has asked for jobs in the last hour.',
    columns: [
      { key: 'name', label: 'Worker', sort: (w) => w.name, render: (w) => h('code', { text: w.name }) },
      { key: 'queues', label: 'Queues', sort: (w) => w.queues,
        render: (w) => h('span', null, w.queues.split(',').filter(Boolean).flatMap((q, i) => [i ? ', ' : '', link(jobsHref({ queue: q }), q)])) },
      { key: 'in_hand', label: 'Jobs in hand', num: true, sort: (w) => w.in_hand, render: (w) => fmtInt(w.in_hand) },
      { key: 'leased', label: 'Leased since start', num: true, sort: (w) => w.leased_total, render: (w) => fmtInt(w.leased_total) },
      { key: 'seen', label: 'Last asked', sort: (w) => w.last_seen,
        render: (w) => h('span', null, timeEl(w.last_seen, now()), ' ', h('small', { class: 'muted', text: fmtRel(w.last_seen, now()) })) },
      { key: 'first', label: 'First seen', sort: (w) => w.first_seen, render: (w) => timeEl(w.first_seen, now()) },
    ],
  });
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Workers' }),
    h('p', { class: 'muted', text: 'Every worker name a lease came from in the last hour (or that still holds jobs): its queues, its jobs in hand, when it last asked.' })),
  status, table.el);
  return {
    title: 'Workers',
    async refresh() {
      try {
        const r = await api('GET', 'v1/workers');
        status.replaceChildren();
        table.update(r.workers);
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Workers'));
      }
    },
  };
}
