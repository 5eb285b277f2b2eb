// SPDX-License-Identifier: Apache-2.0
// Batches: groups of jobs with callbacks, newest first, each with its
// progress and counts; one batch's page shows its counts by state and the
// jobs its callbacks made.
import { h, timeEl, fmtInt, badge, jsonView, KeyedTable, STATES } from './dom.js';
import { api, qs } from './api.js';
import { now, denied, link } from './ctx.js';

const STATE_KEYS = [...STATES, 'deleted'];

function statusBadge(b) {
  return h('span', { class: 'badge ' + (b.status === 'open' ? 'st-running' : 'st-succeeded'), text: b.status });
}

function progressEl(b) {
  const pct = Math.round((b.progress || 0) * 1000) / 10;
  return h('span', { class: 'batch-progress', title: `${fmtInt(b.finished)} of ${fmtInt(b.total)} finished` },
    h('progress', { max: '100', value: String(pct), 'aria-label': `batch ${b.id}: ${pct}% finished` }),
    h('small', { class: 'muted', text: ` ${pct}%` }));
}

export function mount(root) {
  const table = new KeyedTable({
    caption: 'Batches', rowKey: (b) => String(b.id), empty: 'No batches. Submit one with `tenq batch create` or POST /v1/batches.',
    columns: [
      { key: 'id', label: 'Batch', render: (b) => link('#/batch/' + b.id, String(b.id)) },
      { key: 'tenant', label: 'Tenant', render: (b) => b.tenant },
      { key: 'status', label: 'Status', render: statusBadge },
      { key: 'progress', label: 'Progress', sig: (b) => b.finished + '/' + b.total, render: progressEl },
      { key: 'total', label: 'Jobs', num: true, render: (b) => fmtInt(b.total) },
      { key: 'pending', label: 'Pending', num: true, render: (b) => fmtInt(b.pending) },
      { key: 'succeeded', label: 'Succeeded', num: true, render: (b) => fmtInt(b.counts.succeeded) },
      { key: 'dead', label: 'Dead', num: true, render: (b) => fmtInt(b.counts.dead) },
      { key: 'created', label: 'Created', render: (b) => timeEl(b.created_at, now()) },
    ],
  });
  const status = h('div');
  const count = h('p', { class: 'muted small', role: 'status' });
  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Batches' }),
    h('p', { class: 'muted', text: 'Groups of jobs with callbacks: on_complete when all have finished, on_success when all succeeded, on_death at the first death; each made once.' })),
  status, count, table.el);
  return {
    title: 'Batches',
    async refresh() {
      try {
        const r = await api('GET', 'v1/batches' + qs({ limit: 200 }));
        status.replaceChildren();
        table.update(r.batches);
        const open = r.batches.filter((b) => b.status === 'open').length;
        count.textContent = `${r.batches.length} batch${r.batches.length === 1 ? '' : 'es'}${r.next_before ? ' (the newest)' : ''}, ${open} open.`;
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Batches'));
      }
    },
  };
}

export function mountBatch(root, { arg }) {
  const id = arg;
  const body = h('div');
  root.append(body);
  return {
    title: 'Batch ' + id,
    async refresh() {
      let b;
      try {
        b = await api('GET', 'v1/batches/' + encodeURIComponent(id));
      } catch (e) {
        if (e.status === 401) throw e;
        body.replaceChildren(denied(e, 'Batch ' + id));
        return;
      }
      const t = now();
      const counts = h('table', { class: 'grid' },
        h('thead', null, h('tr', null, h('th', { text: 'State' }), h('th', { class: 'num', text: 'Jobs' }))),
        h('tbody', null, STATE_KEYS.map((k) => h('tr', null,
          h('td', null, k === 'deleted' ? h('span', { text: 'deleted (from the morgue)' }) : badge(k)),
          h('td', { class: 'num', 'data-fk': 'count-' + k, text: fmtInt(b.counts[k]) })))));
      const cbs = Object.keys(b.callbacks).map((k) => {
        const c = b.callbacks[k];
        return h('tr', null, h('td', null, h('code', { text: k })),
          h('td', null, `${c.queue} · `, h('code', { text: c.type })),
          h('td', null, jsonView(c.args)),
          h('td', { 'data-fk': 'cb-' + k }, c.job ? link('#/job/' + c.job, 'job ' + c.job) : h('span', { class: 'muted', text: 'not made' })));
      });
      body.replaceChildren(
        h('div', { class: 'page-head' }, h('h1', null, `Batch ${b.id} `, statusBadge(b)),
          h('p', { class: 'muted' }, `${b.tenant} · created `, timeEl(b.created_at, t, true),
            b.closed_at ? h('span', null, ' · closed ', timeEl(b.closed_at, t, true)) : null)),
        h('p', null, progressEl(b), ` ${fmtInt(b.finished)} of ${fmtInt(b.total)} finished, ${fmtInt(b.pending)} pending`),
        h('section', { 'aria-labelledby': 'b-counts' }, h('h3', { id: 'b-counts', text: 'Jobs by state' }), h('div', { class: 'table-wrap' }, counts)),
        h('section', { 'aria-labelledby': 'b-cbs' }, h('h3', { id: 'b-cbs', text: 'Callbacks' }),
          cbs.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
            h('thead', null, h('tr', null, h('th', { text: 'When' }), h('th', { text: 'Job' }), h('th', { text: 'Args' }), h('th', { text: 'Made' }))),
            h('tbody', null, cbs))) : h('p', { class: 'muted', text: 'No callbacks.' })));
    },
  };
}
