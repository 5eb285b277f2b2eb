// SPDX-License-Identifier: Apache-2.0
// Overview: the counts per state, lag, throughput and depth over time.
import { h, fmtInt, fmtRate, fmtDur, fmtBytes, KeyedTable } from './dom.js';
import { ctx, totals, now, isAdmin, link, morgueHref } from './ctx.js';
import { api } from './api.js';
import { LineChart } from './chart.js';

// Unfinished but not ready: by time, behind their lane, for their parents.
const later = (q) => q.scheduled + q.blocked + (q.waiting || 0);
const RANGES = [[5 * 60e3, '5 min'], [15 * 60e3, '15 min'], [60 * 60e3, '1 hour']];
let range = 60 * 60e3; // kept across visits

function card(key, label, fmt = fmtInt, hint) {
  const v = h('dd', { 'data-stat': key, class: 'big' });
  const el = h('div', { class: 'card stat st-card-' + key, title: hint || null }, h('dt', { text: label }), v);
  return { el, set: (val) => { v.textContent = fmt(val); v.setAttribute('data-value', val === undefined ? '' : String(val)); } };
}

export function mount(root) {
  const now_ = [
    card('ready', 'Ready', fmtInt, 'waiting for a worker'),
    card('eligible', 'Eligible', fmtInt, 'ready jobs that could be leased now'),
    card('scheduled', 'Scheduled', fmtInt, 'run_at in the future (delays, retries)'),
    card('blocked', 'Blocked', fmtInt, 'behind an earlier job of their lane'),
    card('waiting', 'Waiting', fmtInt, 'for their parents to succeed (depends_on)'),
    card('leased', 'Leased', fmtInt, 'handed to a worker, not started'),
    card('running', 'Running'),
    card('dead', 'Dead', fmtInt, 'in the morgue'),
    card('lag_ms', 'Lag', fmtDur, 'how long the next job a worker would take has been ready'),
  ];
  const since = [
    card('submitted_total', 'Submitted'),
    card('succeeded_total', 'Succeeded'),
    card('failed_total', 'Failed attempts'),
    card('dead_total', 'Died'),
    card('cancelled_total', 'Cancelled'),
    card('completed_per_s', 'Completed / s', fmtRate, 'over the last minute'),
    card('failed_per_s', 'Failed / s', fmtRate, 'over the last minute'),
  ];
  const thr = new LineChart({
    title: 'Throughput (jobs per second)', fmt: (v) => fmtRate(v), unit: '/s', minMax: 1,
    series: [{ key: 'completed', label: 'completed', cls: 'c-ok' }, { key: 'failed', label: 'failed', cls: 'c-bad' }],
  });
  const depth = new LineChart({
    title: 'Queue depth (jobs)', fmt: (v) => fmtInt(Math.round(v)), minMax: 5,
    series: [
      { key: 'ready', label: 'ready', cls: 'c-ready' },
      { key: 'scheduled', label: 'scheduled', cls: 'c-scheduled' },
      { key: 'blocked', label: 'blocked', cls: 'c-blocked' },
      { key: 'waiting', label: 'waiting', cls: 'c-waiting' },
      { key: 'inflight', label: 'leased + running', cls: 'c-running' },
      { key: 'dead', label: 'dead', cls: 'c-dead' },
    ],
  });
  const rangeBtns = RANGES.map(([ms, label]) => h('button', {
    type: 'button', class: 'seg', 'aria-pressed': String(ms === range), 'data-range': ms,
    onclick: () => {
      range = ms;
      rangeBtns.forEach((b) => b.setAttribute('aria-pressed', String(Number(b.dataset.range) === range)));
      draw();
    },
  }, label));

  const queues = new KeyedTable({
    caption: 'Queues', rowKey: (q) => q.name, sort: { key: 'name', dir: 1 }, empty: 'No queues yet.',
    columns: [
      { key: 'name', label: 'Queue', sort: (q) => q.name, render: (q) => link('#/queues', q.name) },
      { key: 'ready', label: 'Ready', num: true, sort: (q) => q.ready, render: (q) => fmtInt(q.ready) },
      { key: 'inflight', label: 'In flight', num: true, sort: (q) => q.leased + q.running, render: (q) => fmtInt(q.leased + q.running) },
      { key: 'later', label: 'Scheduled, blocked, waiting', num: true, sort: later, render: (q) => fmtInt(later(q)) },
      { key: 'dead', label: 'Dead', num: true, sort: (q) => q.dead, render: (q) => q.dead ? link(morgueHref({ queue: q.name }), fmtInt(q.dead)) : '0' },
      { key: 'lag', label: 'Lag', num: true, sort: (q) => q.lag_ms, render: (q) => fmtDur(q.lag_ms) },
      { key: 'rate', label: 'Completed / s', num: true, sort: (q) => q.completed_per_s, render: (q) => fmtRate(q.completed_per_s) },
    ],
  });
  const server = h('dl', { class: 'kv compact' });
  const scope = h('p', { class: 'muted' });

  root.append(
    h('div', { class: 'page-head' }, h('h1', { text: 'Overview' }), scope),
    h('section', { 'aria-labelledby': 'ov-now' }, h('h2', { id: 'ov-now', text: 'Jobs now' }),
      h('dl', { class: 'cards', id: 'cards-now' }, now_.map((c) => c.el))),
    h('section', { 'aria-labelledby': 'ov-charts', class: 'charts-section' },
      h('div', { class: 'section-head' }, h('h2', { id: 'ov-charts', text: 'Live' }),
        h('div', { class: 'segmented', role: 'group', 'aria-label': 'Time range' }, rangeBtns)),
      h('div', { class: 'charts' }, thr.el, depth.el),
      h('p', { class: 'muted small', text: isAdmin()
        ? 'The last hour as the server kept it (every 10 s), then sampled by this page every few seconds while it is open.'
        : 'Sampled by this page every few seconds while it is open (kept in this tab); paused while the tab is hidden.' })),
    h('section', { 'aria-labelledby': 'ov-since' }, h('h2', { id: 'ov-since', text: 'Since the server started' }),
      h('dl', { class: 'cards', id: 'cards-since' }, since.map((c) => c.el))),
    h('div', { class: 'two-col' },
      h('section', { 'aria-labelledby': 'ov-queues' }, h('h2', { id: 'ov-queues', text: 'Queues' }), queues.el),
      h('section', { 'aria-labelledby': 'ov-server', class: 'server-box' }, h('h2', { id: 'ov-server', text: 'Server' }), server)),
  );

  // The server's hour (admins): the samples older than this tab's own go first.
  if (isAdmin()) {
    api('GET', 'v1/stats/history').then((r) => {
      const oldest = ctx.history.length ? ctx.history[0].t : Infinity;
      const older = (r.samples || []).filter((x) => x.completed !== null && x.t < oldest);
      ctx.history.unshift(...older);
      draw();
    }).catch(() => { /* the page's own samples still draw */ });
  }

  function draw() {
    const t = now();
    thr.update(ctx.history, range, t);
    depth.update(ctx.history, range, t);
  }

  return {
    title: 'Overview',
    refresh() {
      const st = ctx.stats;
      const tot = totals();
      if (!st || !tot) return;
      for (const c of [...now_, ...since]) c.set(tot[c.el.querySelector('dd').dataset.stat]);
      scope.textContent = isAdmin() ? 'Every tenant and queue.'
        : ctx.role === 'tenant' ? `Tenant ${ctx.tenant || '(no jobs yet)'} only: the counts of its own jobs.`
          : 'The queues this worker token may use.';
      queues.update(st.queues || []);
      const sv = st.server;
      if (sv) {
        const rows = [['Store', sv.store], ['Up for', fmtDur(sv.uptime_ms)], ['Connections', fmtInt(sv.connections)],
          ['Lease waiters', fmtInt(sv.lease_waiters)], ['Commits', fmtInt(sv.commits)], ['Batches', fmtInt(sv.batches)],
          ['Requests', fmtInt(sv.requests)]];
        const m = st.memory;
        if (m) {
          rows.push(['Memory (jobs)', `${fmtBytes(m.jobs_bytes)} of ${fmtBytes(m.jobs_budget)}`],
            ['Args in memory', `${fmtBytes(m.args_inline_bytes + m.args_cache_bytes)} of ${fmtBytes(m.args_budget)}`],
            ['Args on disk', `${fmtInt(m.args_spilled_jobs)} jobs`],
            ['Refused submits', `${fmtInt(m.refused_quota)} over quota, ${fmtInt(m.refused_overloaded)} overloaded`]);
          if (m.loading) rows.push(['Loading', `${fmtInt(m.loaded_behind)} jobs in so far`]);
        }
        server.replaceChildren(...rows.flatMap(([k, v]) => [h('dt', { text: k }), h('dd', { text: v })]));
        server.parentElement.hidden = false;
      } else server.parentElement.hidden = true;
      draw();
    },
  };
}
