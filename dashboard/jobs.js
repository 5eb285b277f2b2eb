// SPDX-License-Identifier: Apache-2.0
// Jobs: search with filters and paging; a job's page with every field, its
// timings, its durable steps, its attempts, its data, and cancel / requeue / delete.
import { h, s, fmtDur, fmtTime, fmtRel, timeEl, badge, jsonView, KeyedTable, field, STATES, UNFINISHED, replaceKeepFocus } from './dom.js';
import { api, qs } from './api.js';
import { ctx, now, toast, describe, denied, confirmDialog, link, jobsHref } from './ctx.js';

const FILTERS = ['tenant', 'queue', 'type', 'state', 'key', 'args'];

function datalist(id, names) {
  return h('datalist', { id }, names.map((n) => h('option', { value: n })));
}

function errorSnippet(e) {
  if (!e) return '';
  const one = String(e).split('\n')[0];
  return h('span', { class: 'err-snippet', title: String(e), text: one.length > 80 ? one.slice(0, 79) + '…' : one });
}

export function jobColumns() {
  const t = now();
  return [
    { key: 'id', label: 'ID', num: true, render: (j) => link('#/job/' + j.id, String(j.id), { 'data-fk': 'job-' + j.id, 'aria-label': 'Job ' + j.id }) },
    { key: 'state', label: 'State', render: (j) => h('span', null, badge(j.state), j.cancel_requested ? h('span', { class: 'badge st-cancelling', text: 'cancel requested' }) : null) },
    { key: 'tenant', label: 'Tenant', render: (j) => j.tenant },
    { key: 'queue', label: 'Queue', render: (j) => j.queue },
    { key: 'type', label: 'Type', render: (j) => h('code', { text: j.type }) },
    { key: 'key', label: 'Key', render: (j) => (j.key === null ? h('span', { class: 'muted', text: '—' }) : h('code', { text: j.key })) },
    { key: 'attempts', label: 'Attempts', num: true, render: (j) => `${j.attempts} / ${j.max_attempts}` },
    { key: 'created', label: 'Created', render: (j) => timeEl(j.created_at, t) },
    { key: 'finished', label: 'Finished', render: (j) => timeEl(j.finished_at, t) },
    { key: 'error', label: 'Last error', render: (j) => errorSnippet(j.error) },
  ];
}

export function mountList(root, { params }) {
  const tenantLocked = ctx.role === 'tenant' && ctx.tenant;
  const f = {};
  f.id = h('input', { type: 'text', inputmode: 'numeric', name: 'id', placeholder: 'e.g. 123', spellcheck: 'false' });
  f.tenant = h('input', { type: 'text', name: 'tenant', list: 'dl-tenants', spellcheck: 'false', value: params.get('tenant') || '' });
  if (tenantLocked) { f.tenant.value = ctx.tenant; f.tenant.readOnly = true; }
  f.queue = h('input', { type: 'text', name: 'queue', list: 'dl-queues', spellcheck: 'false', value: params.get('queue') || '' });
  f.type = h('input', { type: 'text', name: 'type', spellcheck: 'false', value: params.get('type') || '' });
  f.state = h('select', { name: 'state', value: params.get('state') || '' },
    h('option', { value: '', text: 'any' }), STATES.map((st) => h('option', { value: st, text: st })));
  f.key = h('input', { type: 'text', name: 'key', spellcheck: 'false', value: params.get('key') || '' });
  f.args = h('input', { type: 'text', name: 'args', spellcheck: 'false', placeholder: '"report_id":42', value: params.get('args') || '' });
  const err = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const st = ctx.stats || {};
  const form = h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Search jobs',
    onsubmit: (e) => {
      e.preventDefault();
      const id = f.id.value.trim();
      if (id) {
        if (!/^\d+$/.test(id)) { err.textContent = 'An id is a number.'; err.hidden = false; return; }
        location.hash = '#/job/' + id;
        return;
      }
      const filter = {};
      for (const k of FILTERS) filter[k] = f[k].value.trim();
      if (tenantLocked) delete filter.tenant;
      const target = jobsHref(filter);
      if (location.hash === target) ctx.refresh(); else location.hash = target;
    },
  }, field('ID', f.id), field('Tenant', f.tenant), field('Queue', f.queue), field('Type', f.type), field('State', f.state), field('Key', f.key),
  field('Args contain', f.args, 'as stored: JSON with sorted keys, no spaces'),
  h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Search'),
    h('a', { href: '#/jobs', class: 'button ghost' }, 'Clear')), err,
  datalist('dl-tenants', (st.tenants || []).map((t) => t.name)), datalist('dl-queues', (st.queues || []).map((q) => q.name)));

  const filter = {};
  for (const k of FILTERS) if (params.get(k)) filter[k] = params.get(k);
  const table = new KeyedTable({ caption: 'Jobs', columns: jobColumns(), rowKey: (j) => j.id, empty: 'No job matches.', rowClass: (j) => 'row-' + j.state });
  const status = h('div');
  const more = h('button', { type: 'button', hidden: true, onclick: () => loadMore() }, 'Load more');
  const count = h('p', { class: 'muted small', role: 'status' });
  let rows = [];
  let next = null;

  async function loadMore() {
    more.disabled = true;
    try {
      const r = await api('GET', 'v1/jobs' + qs({ ...filter, after_id: next, limit: 50 }));
      rows = rows.concat(r.jobs);
      next = r.next;
      show();
    } catch (e) { toast(describe(e), 'error'); }
    more.disabled = false;
  }
  function show() {
    table.update(rows);
    more.hidden = next === null;
    count.textContent = `${rows.length} job${rows.length === 1 ? '' : 's'} shown${next !== null ? ', newest first; more below' : ''}.`;
  }

  // Bulk actions on every job the filter matches (POST /v1/jobs/bulk): a dry
  // run counts them first, and the count is what the dialog asks about.
  const BULK = {
    cancel: ['Cancel matching…', 'Cancel them', 'cancelled', 'Unfinished jobs are cancelled; leased ones are asked to stop.'],
    retry_now: ['Retry now…', 'Retry them now', 'made ready', 'Jobs in backoff or scheduled for later run now.'],
    delete: ['Delete finished…', 'Delete them', 'deleted', 'Finished jobs are removed from the store for good.'],
  };
  async function bulk(action) {
    const [, ok, done, what] = BULK[action];
    const body = { action, ...filter };
    try {
      const dry = await api('POST', 'v1/jobs/bulk', { ...body, dry_run: true });
      if (!dry.matched) { toast('No job matches for this action.'); return; }
      const parts = Object.entries(filter).map(([k, v]) => `${k} ${v}`);
      const yes = await confirmDialog({ title: `${BULK[action][0].replace('…', '')}?`, ok, danger: action !== 'retry_now',
        body: [`This acts on ${dry.matched} job${dry.matched === 1 ? '' : 's'} matching ${parts.join(', ')}.`, what] });
      if (!yes) return;
      const r = await api('POST', 'v1/jobs/bulk', body);
      toast(`${r.changed} job${r.changed === 1 ? '' : 's'} ${done}.`);
    } catch (e) { toast(describe(e), 'error'); }
    ctx.refresh();
  }
  // (a search by args has no bulk form: the actions would reach further than the list)
  const bulkBar = Object.keys(filter).length && !filter.args && ctx.role !== 'worker'
    ? h('div', { class: 'row-actions bulk-bar', 'data-write': true, role: 'group', 'aria-label': 'Bulk actions on matching jobs' },
      Object.entries(BULK).map(([a, [label]]) => h('button', { type: 'button', class: 'small ghost', 'data-bulk': a, onclick: () => bulk(a) }, label)))
    : null;

  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Jobs' }),
    h('p', { class: 'muted', text: 'Newest first. An id opens that job.' })), form, bulkBar, status, count, table.el, h('div', { class: 'more' }, more));
  if (!params.toString()) setTimeout(() => f.id.focus(), 0);

  return {
    title: 'Jobs',
    async refresh() {
      if (rows.length > 1000) return; // a long list stays as loaded
      try {
        const r = await api('GET', 'v1/jobs' + qs({ ...filter, limit: Math.min(1000, Math.max(50, rows.length)) }));
        rows = r.jobs;
        next = r.next;
        status.replaceChildren();
        show();
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Jobs'));
      }
    },
  };
}

// ---- one job -------------------------------------------------------------------------------

const KNOWN = new Set(['id', 'tenant', 'queue', 'type', 'key', 'args', 'payloads', 'priority', 'state', 'attempts', 'max_attempts',
  'run_at', 'created_at', 'ready_at', 'leased_at', 'started_at', 'finished_at', 'worker', 'error', 'result', 'stats', 'progress',
  'unique_key', 'idempotency_key', 'lease_until', 'cancel_requested', 'merged_into', 'token', 'waiting',
  'parents', 'children', 'children_count', 'on_parent_failure', 'batch', 'batch_callback', 'steps', 'awaited_by',
  'concurrency_keys', 'rate_keys', 'expire_at', 'debounced', 'debounce_until']);

// A job's keys, each linked to the Keys page (the key, its limit or cost).
function keysEl(j, list, what) {
  return h('span', { 'data-fk': what }, list.flatMap((k, i) => [i ? ', ' : null,
    link('#/keys?' + new URLSearchParams({ tenant: j.tenant, key: k.key }).toString(), k.key),
    what === 'concurrency_keys' ? (k.limit ? h('small', { class: 'muted', text: ` (limit ${k.limit})` }) : null)
      : h('small', { class: 'muted', text: ` (cost ${k.cost || 1}${k.rate ? `, ${k.rate} / ${fmtDur(k.rate_period_ms || 1000)}` : ''})` })]));
}

// Why it is not running yet: the server's sentence, the job it waits for, the time it waits until.
function waitingEl(w, t) {
  return h('span', { 'data-fk': 'waiting-' + w.reason }, w.message,
    w.blocked_by ? h('span', null, ' ', link('#/job/' + w.blocked_by, 'job ' + w.blocked_by)) : null,
    w.held_by ? h('span', { 'data-fk': 'held-by' }, ' held by ', link('#/job/' + w.held_by, 'job ' + w.held_by)) : null,
    w.parents && w.parents.length ? h('span', { 'data-fk': 'parent-links' }, ' (',
      w.parents.flatMap((p, i) => [i ? ', ' : null, link('#/job/' + p, 'job ' + p)]), ')') : null,
    w.child ? h('span', null, ' ', link('#/job/' + w.child, 'job ' + w.child)) : null,
    w.until ? h('span', null, ' ', timeEl(w.until, t, true), ' ', h('small', { class: 'muted', text: fmtRel(w.until, t) })) : null);
}

function timings(j, t) {
  const live = UNFINISHED.includes(j.state);
  // one row: from -> to; with no "to" yet on an unfinished job, "so far"
  const row = (label, from, to, cls, what, running) => {
    let ms = null, so = false, end = to;
    if (from && to) ms = to - from;
    else if (from && !to && live && running) { end = t; ms = t - from; so = true; }
    if (ms !== null && ms < 0) ms = null; // the stamps of different attempts
    return { label, from, to: end, ms, cls, so, what };
  };
  const rows = [];
  if (j.ready_at && j.ready_at > j.created_at)
    rows.push(row('Until ready', j.created_at, j.ready_at, 't-before', 'ready_at − created_at: delayed by run_at, or blocked behind its lane'));
  rows.push(row('Waited', j.ready_at, j.leased_at, 't-wait', 'leased_at − ready_at: ready until a worker leased it', j.state === 'ready'));
  rows.push(row('Picked up', j.leased_at, j.started_at, 't-pick', 'started_at − leased_at: leased until its handler started (grows when workers are too few)', j.state === 'leased'));
  rows.push(row('Ran', j.started_at, j.finished_at, 't-run', 'finished_at − started_at: its handler', j.state === 'running'));
  return rows;
}

function timeline(j, segs, t) {
  const start = j.created_at;
  const end = j.finished_at || t;
  const span = Math.max(1, end - start);
  const W = 1000;
  const X = (v) => ((v - start) / span) * W;
  const bars = segs.filter((sg) => sg.ms !== null).map((sg) => s('rect', { class: 'seg ' + sg.cls, x: X(sg.from), y: 4, height: 20, width: Math.max(3, X(sg.to) - X(sg.from)) },
    s('title', { text: `${sg.label}: ${fmtDur(sg.ms)}` })));
  return s('svg', { class: 'timeline', viewBox: `0 0 ${W} 28`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': 'Timeline: ' + segs.filter((sg) => sg.ms !== null).map((sg) => `${sg.label} ${fmtDur(sg.ms)}`).join(', ') },
  s('rect', { class: 'seg t-bg', x: 0, y: 4, width: W, height: 20 }), bars);
}

function kv(pairs) {
  return h('dl', { class: 'kv' }, pairs.filter(Boolean).flatMap(([k, v, key]) => [h('dt', { text: k }), h('dd', { 'data-field': key || null }, v)]));
}
// A link to a section further down the page (not a route).
function jump(id) {
  return h('a', { href: '#' + id, onclick: (e) => {
    e.preventDefault();
    const el = document.getElementById(id);
    if (el) { el.scrollIntoView({ block: 'start' }); el.focus({ preventScroll: true }); }
  } }, 'shown below');
}
const code = (v) => (v === null || v === undefined ? h('span', { class: 'muted', text: '—' }) : h('code', { text: String(v) }));

// Its parents (each with its state and result) and its children (GET /v1/jobs/{id}/parents), with links.
function depsPanel(d, policy) {
  const row = (x, withResult) => h('tr', { 'data-dep': String(x.id) },
    h('td', null, link('#/job/' + x.id, 'job ' + x.id)),
    h('td', null, x.state === 'gone' ? h('span', { class: 'muted', text: 'gone (pruned or deleted)' }) : badge(x.state)),
    withResult ? h('td', null, x.result === null || x.result === undefined ? code(null) : jsonView(x.result)) : null);
  const table = (list, withResult, head) => h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
    h('thead', null, h('tr', null, head.map((x) => h('th', { text: x })))),
    h('tbody', null, list.map((x) => row(x, withResult)))));
  return h('section', { class: 'panel', 'aria-labelledby': 'job-deps', 'data-fk': 'deps' },
    h('h2', { id: 'job-deps', text: `Dependencies (${d.parents.length} parent${d.parents.length === 1 ? '' : 's'}, ${d.children_count} child${d.children_count === 1 ? '' : 'ren'})` }),
    d.parents.length ? h('div', { 'data-fk': 'parents' }, h('h3', null, 'Parents', policy ? h('small', { class: 'muted', text: ` — if one dies or is cancelled: ${policy === 'run' ? 'run anyway' : 'cancel this job'}` }) : null),
      table(d.parents, true, ['Job', 'State', 'Result'])) : null,
    d.children.length ? h('div', { 'data-fk': 'children' }, h('h3', null, 'Children', d.children_count > d.children.length
      ? h('small', { class: 'muted', text: ` — the first ${d.children.length} of ${d.children_count}` }) : null),
    table(d.children, false, ['Job', 'State'])) : null);
}

// The durable steps its handler stored (GET /v1/jobs/{id}/steps), in order: what each ran or waited
// for, its result (a token that sees no data: none), and which attempt stored it.
function stepsPanel(d, t) {
  const detail = (x) => {
    if (x.kind === 'sleep') return h('span', null, 'until ', timeEl(x.until, t, true));
    if (x.kind === 'event') return h('span', null, 'event ', code(x.event),
      x.until ? h('span', null, ', timeout ', timeEl(x.until, t, true)) : null);
    if (x.kind === 'child') return h('span', null, link('#/job/' + x.child, 'job ' + x.child),
      x.child_state ? h('span', null, ' ', badge(x.child_state)) : null);
    return code(null);
  };
  const outcome = (x) => {
    if (!x.done) return h('span', { class: 'muted', text: 'waiting' });
    if (x.error) return errorSnippet(x.error);
    if (!('result' in x)) return h('span', { class: 'muted', 'data-hidden': 'result', text: 'hidden' });
    return x.result === null ? code(null) : jsonView(x.result);
  };
  const rows = d.steps.map((x) => h('tr', { 'data-step': x.name, 'data-kind': x.kind, 'data-done': String(x.done) },
    h('td', { class: 'num', text: String(x.pos + 1) }),
    h('td', null, code(x.name)),
    h('td', null, h('span', { class: 'badge st-step-' + x.kind, text: x.kind })),
    h('td', null, detail(x)),
    h('td', { 'data-col': 'result' }, outcome(x)),
    h('td', { class: 'num', text: String(x.attempt) }),
    h('td', null, timeEl(x.finished_at || x.created_at, t, true))));
  const head = ['#', 'Name', 'Kind', 'Waits for', 'Result', 'Attempt', 'Stored at'];
  return h('section', { class: 'panel', 'aria-labelledby': 'job-steps', 'data-fk': 'steps' },
    h('h2', { id: 'job-steps', text: `Steps (${d.steps.length})` }),
    h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
      h('thead', null, h('tr', null, head.map((x, i) => h('th', { class: i === 0 || i === 5 ? 'num' : null, text: x })))),
      h('tbody', null, rows))));
}

// Every attempt, oldest first (GET /v1/jobs/{id}/attempts): how it ended, what became of the job.
function attemptsPanel(list, t) {
  const took = (a) => {
    if (!a.leased_at) return '—';
    if (a.finished_at) return fmtDur(a.finished_at - a.leased_at);
    return fmtDur(t - a.leased_at) + ' so far';
  };
  const rows = list.map((a) => h('tr', { 'data-attempt': String(a.attempt), 'data-outcome': a.outcome },
    h('td', { class: 'num', text: String(a.attempt) }),
    h('td', null, badge(a.outcome)),
    h('td', null, badge(a.job_state)),
    h('td', null, code(a.worker)),
    h('td', null, timeEl(a.leased_at, t, true)),
    h('td', { class: 'num', text: took(a) }),
    h('td', { 'data-col': 'error' }, a.error ? errorSnippet(a.error) : code(null)),
    h('td', null, a.stats === null || a.stats === undefined ? code(null) : jsonView(a.stats)),
    h('td', { 'data-col': 'steps' }, a.steps && a.steps.length ? a.steps.map((n, i) => [i ? ', ' : null, h('code', { text: n })]) : code(null))));
  const head = ['#', 'Outcome', 'Job then', 'Worker', 'Leased at', 'Took', 'Error', 'Stats', 'Steps stored'];
  return h('section', { class: 'panel', 'aria-labelledby': 'job-attempts', 'data-fk': 'attempts' },
    h('h2', { id: 'job-attempts', text: `Attempts (${list.length})` }),
    list.length ? h('div', { class: 'table-wrap' }, h('table', { class: 'grid' },
      h('thead', null, h('tr', null, head.map((x, i) => h('th', { class: i === 0 || i === 5 ? 'num' : null, text: x })))),
      h('tbody', null, rows)))
      : h('p', { class: 'muted', text: 'No attempt yet.' }));
}

export function mountJob(root, { arg }) {
  const id = arg;
  const body = h('div');
  root.append(body);
  let lastJson = null;
  let job = null;
  let timesBox = null;

  async function act(what) {
    const j = job;
    try {
      if (what === 'cancel') {
        const ok = await confirmDialog({ title: `Cancel job ${j.id}?`, ok: 'Cancel the job', danger: true,
          body: j.state === 'leased' || j.state === 'running'
            ? 'It is with a worker: it will be asked to stop (cancel_requested), and ends cancelled.'
            : 'It has not started: it becomes cancelled at once.' });
        if (!ok) return;
        const r = await api('POST', `v1/jobs/${j.id}/cancel`);
        toast(r.cancel_requested ? `Job ${j.id}: cancel requested.` : `Job ${j.id} ${r.state}.`);
      } else if (what === 'requeue') {
        const r = await api('POST', `v1/morgue/${j.id}/requeue`);
        toast(r.state === 'merged' ? `Job ${j.id} requeued: joined job ${r.merged_into}.` : `Job ${j.id} requeued: ${r.state}.`);
      } else if (what === 'delete') {
        const ok = await confirmDialog({ title: `Delete job ${j.id}?`, ok: 'Delete', danger: true,
          body: 'It is removed from the morgue and from the store, for good.' });
        if (!ok) return;
        await api('DELETE', `v1/morgue/${j.id}`);
        toast(`Job ${j.id} deleted.`);
      }
    } catch (e) {
      toast(describe(e), 'error');
    }
    ctx.refresh();
  }

  function renderTimes(j) {
    const t = now();
    const segs = timings(j, t);
    return h('div', { class: 'timings' },
      segs.some((sg) => sg.ms !== null) ? timeline(j, segs, t) : null,
      segs.some((sg) => sg.ms !== null) ? h('div', { class: 'tl-axis muted small' }, h('span', { text: 'created ' + fmtTime(j.created_at) }),
        h('span', { text: j.finished_at ? 'finished ' + fmtTime(j.finished_at) : 'now' })) : null,
      h('dl', { class: 'kv timing-kv' }, segs.flatMap((sg) => [
        h('dt', null, h('span', { class: 'swatch ' + sg.cls, 'aria-hidden': 'true' }), sg.label),
        h('dd', { 'data-timing': sg.label.toLowerCase().replace(/ /g, '-'), title: sg.what }, sg.ms === null ? '—' : fmtDur(sg.ms) + (sg.so ? ' so far' : ''),
          h('small', { class: 'muted', text: ' ' + sg.what.split(':')[0] }))])),
      j.finished_at ? h('p', { class: 'muted small', text: `Total from creation to finish: ${fmtDur(j.finished_at - j.created_at)}.` }) : null);

  }

  function render(j, attempts, deps, steps) {
    const t = now();
    const unfinished = UNFINISHED.includes(j.state);
    const actions = h('div', { class: 'actions' },
      unfinished ? h('button', { type: 'button', 'data-write': true, class: 'danger', disabled: j.cancel_requested, 'data-fk': 'cancel', onclick: () => act('cancel') },
        j.cancel_requested ? 'Cancel requested' : 'Cancel') : null,
      j.state === 'dead' ? h('button', { type: 'button', 'data-write': true, class: 'primary', 'data-fk': 'requeue', onclick: () => act('requeue') }, 'Requeue') : null,
      j.state === 'dead' ? h('button', { type: 'button', 'data-write': true, class: 'ghost danger-text', 'data-fk': 'delete', onclick: () => act('delete') }, 'Delete') : null,
      j.key !== null ? h('a', { class: 'button ghost', href: jobsHref({ tenant: j.tenant, queue: j.queue, key: j.key }) }, 'Jobs of this lane') : null);

    timesBox = h('div', null, renderTimes(j));

    const fields = kv([
      ['ID', code(j.id), 'id'],
      ['State', h('span', null, badge(j.state), j.cancel_requested ? h('span', { class: 'badge st-cancelling', text: 'cancel requested' }) : null), 'state'],
      j.waiting ? ['Waiting', waitingEl(j.waiting, t), 'waiting'] : null,
      ['Tenant', link(jobsHref({ tenant: j.tenant }), j.tenant), 'tenant'],
      ['Queue', link(jobsHref({ queue: j.queue }), j.queue), 'queue'],
      ['Type', code(j.type), 'type'],
      ['Key (lane)', code(j.key), 'key'],
      j.concurrency_keys ? ['Concurrency keys', keysEl(j, j.concurrency_keys, 'concurrency_keys'), 'concurrency_keys'] : null,
      j.rate_keys ? ['Rate keys', keysEl(j, j.rate_keys, 'rate_keys'), 'rate_keys'] : null,
      j.expire_at ? ['Expires at', h('span', null, timeEl(j.expire_at, t, true), ' ', h('small', { class: 'muted',
        text: j.state === 'expired' ? 'not started by then: it never ran' : UNFINISHED.includes(j.state) ? fmtRel(j.expire_at, t) : '' })), 'expire_at'] : null,
      j.debounced ? ['Debounced', h('span', null, 'later submits of its lane replace it while it waits',
        j.debounce_until ? h('span', null, '; it starts by ', timeEl(j.debounce_until, t, true)) : null), 'debounced'] : null,
      j.batch ? ['Batch', h('span', null, link('#/batch/' + j.batch, 'batch ' + j.batch),
        j.batch_callback ? h('span', null, ' ', h('small', { class: 'muted', text: `(its ${j.batch_callback} callback)` })) : null), 'batch'] : null,
      ['Priority', String(j.priority), 'priority'],
      ['Attempts', `${j.attempts} of ${j.max_attempts}`, 'attempts'],
      ['Run at', timeEl(j.run_at, t, true), 'run_at'],
      ['Created', timeEl(j.created_at, t, true), 'created_at'],
      ['Ready at', timeEl(j.ready_at, t, true), 'ready_at'],
      ['Leased at', timeEl(j.leased_at, t, true), 'leased_at'],
      ['Started at', timeEl(j.started_at, t, true), 'started_at'],
      ['Finished at', timeEl(j.finished_at, t, true), 'finished_at'],
      ['Lease until', j.lease_until ? h('span', null, timeEl(j.lease_until, t, true), ' ', h('small', { class: 'muted', text: fmtRel(j.lease_until, t) })) : code(null), 'lease_until'],
      ['Worker', code(j.worker), 'worker'],
      ['Cancel requested', j.cancel_requested ? 'yes' : 'no', 'cancel_requested'],
      ['Unique key', code(j.unique_key), 'unique_key'],
      ['Idempotency key', code(j.idempotency_key), 'idempotency_key'],
      ['Error', j.error === null || j.error === undefined ? code(null) : jump('d-error'), 'error'],
      ['Result', j.result === null || j.result === undefined ? code(null) : jump('d-result'), 'result'],
      ['Stats', j.stats === null || j.stats === undefined ? code(null) : jump('d-stats'), 'stats'],
      ['Progress', j.progress === null || j.progress === undefined ? code(null) : jump('d-progress'), 'progress'],
      j.parents ? ['Parents', h('span', null, j.parents.flatMap((p, i) => [i ? ', ' : null, link('#/job/' + p, 'job ' + p)])), 'parents'] : null,
      j.on_parent_failure ? ['On parent failure', code(j.on_parent_failure), 'on_parent_failure'] : null,
      j.children ? ['Children', h('span', null, j.children.slice(0, 20).flatMap((c, i) => [i ? ', ' : null, link('#/job/' + c, 'job ' + c)]),
        (j.children_count || j.children.length) > 20 ? ` and ${(j.children_count || j.children.length) - 20} more` : null), 'children'] : null,
      j.steps ? ['Steps', h('span', null, String(j.steps), ' ', jump('job-steps')), 'steps'] : null,
      j.awaited_by ? ['Awaited by', h('span', null, link('#/job/' + j.awaited_by, 'job ' + j.awaited_by),
        h('small', { class: 'muted', text: ' (its handler waits for this job)' })), 'awaited_by'] : null,
      'merged_into' in j ? ['Merged into', j.merged_into ? link('#/job/' + j.merged_into, 'job ' + j.merged_into) : code(null), 'merged_into'] : null,
      'token' in j ? ['Lease token', code(j.token), 'token'] : null,
      ...Object.keys(j).filter((k) => !KNOWN.has(k)).map((k) => [k, typeof j[k] === 'object' ? jsonView(j[k]) : code(j[k]), k]),
    ]);

    const data = [];
    if ('payloads' in j) {
      data.push(h('section', { class: 'data', 'aria-labelledby': 'd-payloads' }, h('h3', { id: 'd-payloads', text: `Payloads (${(j.payloads || []).length}, by score)` }),
        h('div', { class: 'table-wrap' }, h('table', { class: 'grid' }, h('thead', null, h('tr', null, h('th', { class: 'num', text: 'Score' }), h('th', { text: 'Payload' }))),
          h('tbody', null, (j.payloads || []).map((p) => h('tr', null, h('td', { class: 'num', text: String(p.score) }), h('td', null, jsonView(p.payload)))))))));
    } else if (j.data_hidden) {
      data.push(h('section', { class: 'data', 'aria-labelledby': 'd-args' }, h('h3', { id: 'd-args', text: 'Args' }),
        h('p', { class: 'muted', 'data-hidden': 'args', text: 'Hidden: this token sees jobs without their args, results and progress.' })));
    } else {
      data.push(h('section', { class: 'data', 'aria-labelledby': 'd-args' }, h('h3', { id: 'd-args', text: 'Args' }), jsonView(j.args === undefined ? null : j.args)));
    }
    if (j.error !== null && j.error !== undefined) {
      data.push(h('section', { class: 'data', 'aria-labelledby': 'd-error' }, h('h3', { id: 'd-error', tabindex: '-1', text: 'Error (the last attempt\'s)' }),
        h('pre', { class: 'errtext', tabindex: '0', text: j.error })));
    }
    for (const [k, label] of [['result', 'Result'], ['stats', 'Stats'], ['progress', 'Progress']]) {
      if (j[k] === null || j[k] === undefined) continue;
      data.push(h('section', { class: 'data', 'aria-labelledby': 'd-' + k }, h('h3', { id: 'd-' + k, tabindex: '-1', text: label }), jsonView(j[k])));
    }
    const none = [['error', 'error'], ['result', 'result'], ['stats', 'stats'], ['progress', 'progress']]
      .filter(([k]) => j[k] === null || j[k] === undefined).map(([, w]) => w);

    replaceKeepFocus(body,
      h('div', { class: 'page-head job-head' }, h('p', { class: 'crumbs' }, link(jobsHref({ tenant: j.tenant }), '← Jobs of ' + j.tenant)),
        h('h1', null, `Job ${j.id} `, badge(j.state)), h('p', { class: 'muted' }, h('code', { text: j.type }), ` in ${j.queue} for ${j.tenant}`), actions),
      h('div', { class: 'job-grid' },
        h('section', { class: 'panel', 'aria-labelledby': 'job-fields' }, h('h2', { id: 'job-fields', text: 'Fields' }), fields),
        h('section', { class: 'panel', 'aria-labelledby': 'job-times' }, h('h2', { id: 'job-times', text: 'Timings' }), timesBox)),
      deps && (deps.parents.length || deps.children.length) ? depsPanel(deps, j.on_parent_failure) : null,
      steps && steps.steps.length ? stepsPanel(steps, t) : null,
      attempts ? attemptsPanel(attempts.attempts, t) : null,
      h('div', { class: 'data-grid' }, data),
      none.length ? h('p', { class: 'muted small', text: `No ${none.join(', ').replace(/, ([^,]*)$/, ' or $1')} recorded.` }) : null);
  }

  return {
    title: 'Job ' + id,
    async refresh() {
      if (!/^\d+$/.test(id)) { body.replaceChildren(h('div', { class: 'banner error', text: 'A job id is a number.' })); return; }
      try {
        const [j, attempts, deps] = await Promise.all([api('GET', 'v1/jobs/' + id),
          api('GET', `v1/jobs/${id}/attempts`).catch((e) => { if (e.status === 401) throw e; return null; }),
          api('GET', `v1/jobs/${id}/parents`).catch((e) => { if (e.status === 401) throw e; return null; })]);
        // its steps, when its handler stored some (a job waiting for one has)
        const steps = j.steps ? await api('GET', `v1/jobs/${id}/steps`).catch((e) => { if (e.status === 401) throw e; return null; }) : null;
        job = j;
        const js = JSON.stringify([j, attempts, deps, steps]);
        if (js !== lastJson) render(j, attempts, deps, steps);
        // unfinished jobs show times "so far": redraw those
        else if (UNFINISHED.includes(j.state) && timesBox) timesBox.replaceChildren(renderTimes(j));
        lastJson = js;
      } catch (e) {
        if (e.status === 401) throw e;
        lastJson = null;
        job = null;
        body.replaceChildren(h('div', { class: 'page-head' }, h('h1', { text: 'Job ' + id })),
          e.status === 404 ? h('div', { class: 'banner info', text: `No job ${id} that this token may see (it may have been deleted, or pruned after its queue's retention).` })
            : denied(e, 'Job ' + id),
          h('p', null, link('#/jobs', '← Search jobs')));
      }
    },
  };
}
