// SPDX-License-Identifier: Apache-2.0
// Schedules: periodic jobs, each with its expression and zone, the job it
// makes, its last tick and next runs; pause, resume or delete one.
import { h, timeEl, KeyedTable } from './dom.js';
import { api, qs } from './api.js';
import { ctx, now, toast, describe, denied, confirmDialog } from './ctx.js';

const RUNS = 3;

function muted(text) {
  return h('span', { class: 'muted', text });
}

function state(s) {
  if (s.last_error) return h('span', { class: 'badge st-dead', title: s.last_error, text: 'error' });
  return s.paused ? h('span', { class: 'badge st-paused', text: 'paused' }) : h('span', { class: 'badge st-succeeded', text: 'active' });
}

export function mount(root) {
  let rows = [];

  async function act(s, what) {
    try {
      if (what === 'delete') {
        const ok = await confirmDialog({ title: `Delete schedule ${s.name}?`, ok: 'Delete', danger: true,
          body: 'No more jobs are made from it. The jobs it made stay.' });
        if (!ok) return;
        await api('DELETE', 'v1/schedules/' + encodeURIComponent(s.name));
        toast(`Schedule ${s.name} deleted.`);
        rows = rows.filter((r) => r.name !== s.name);
      } else {
        const r = await api('POST', `v1/schedules/${encodeURIComponent(s.name)}/${what}`);
        toast(`Schedule ${s.name} ${what === 'pause' ? 'paused' : 'resumed'}.`);
        rows = rows.map((x) => (x.name === r.name ? r : x));
      }
      table.update(rows);
    } catch (e) { toast(describe(e), 'error'); }
    ctx.refresh();
  }

  const table = new KeyedTable({
    caption: 'Schedules', rowKey: (s) => s.name, empty: 'No schedules. Create one with `tenq schedule set` or PUT /v1/schedules/{name}.',
    columns: [
      { key: 'name', label: 'Name', render: (s) => h('strong', { text: s.name }) },
      { key: 'cron', label: 'Cron', render: (s) => h('code', { text: s.cron }) },
      { key: 'tz', label: 'Time zone', render: (s) => s.timezone },
      { key: 'job', label: 'Job', render: (s) => h('span', null, `${s.job.tenant} · ${s.job.queue} · `, h('code', { text: s.job.type })) },
      { key: 'missed', label: 'Missed ticks', render: (s) => s.missed },
      { key: 'last', label: 'Last tick', render: (s) => timeEl(s.last_tick, now()) },
      { key: 'next', label: 'Next runs', sig: (s) => (s.next_runs || []).join(','), render: (s) => ((s.next_runs || []).length
        ? h('ul', { class: 'runs' }, s.next_runs.map((t) => h('li', null, timeEl(t, now()))))
        : muted(s.paused ? 'paused' : '—')) },
      { key: 'state', label: 'State', render: state },
      { key: 'act', label: 'Actions', sig: (s) => s.name + (s.paused ? 'p' : 'a'), render: (s) => h('span', { class: 'row-actions', 'data-write': true },
        s.paused
          ? h('button', { type: 'button', class: 'small', 'data-fk': 'resume-' + s.name, 'aria-label': 'Resume schedule ' + s.name, onclick: () => act(s, 'resume') }, 'Resume')
          : h('button', { type: 'button', class: 'small', 'data-fk': 'pause-' + s.name, 'aria-label': 'Pause schedule ' + s.name, onclick: () => act(s, 'pause') }, 'Pause'),
        h('button', { type: 'button', class: 'small ghost danger-text', 'data-fk': 'rm-' + s.name, 'aria-label': 'Delete schedule ' + s.name, onclick: () => act(s, 'delete') }, 'Delete')) },
    ],
  });
  const status = h('div');
  const count = h('p', { class: 'muted small', role: 'status' });

  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Schedules' }),
    h('p', { class: 'muted', text: 'Periodic jobs: each tick of a schedule submits its job once, in the schedule\'s time zone, across restarts and takeovers. Times are shown in this browser\'s zone.' })),
  status, count, table.el);

  return {
    title: 'Schedules',
    async refresh() {
      try {
        const r = await api('GET', 'v1/schedules' + qs({ runs: RUNS }));
        rows = r.schedules;
        status.replaceChildren();
        table.update(rows);
        const paused = rows.filter((s) => s.paused).length;
        count.textContent = `${rows.length} schedule${rows.length === 1 ? '' : 's'}${paused ? `, ${paused} paused` : ''}.`;
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Schedules'));
      }
    },
  };
}
