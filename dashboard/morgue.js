// SPDX-License-Identifier: Apache-2.0
// The morgue: dead jobs, filtered and sorted; requeue or delete one, or all
// that match (after a confirmation).
import { h, fmtInt, timeEl, KeyedTable, field } from './dom.js';
import { api, qs } from './api.js';
import { ctx, now, totals, toast, describe, denied, confirmDialog, link, morgueHref } from './ctx.js';

function errorSnippet(e) {
  if (!e) return h('span', { class: 'muted', text: '—' });
  const one = String(e).split('\n')[0];
  return h('span', { class: 'err-snippet', title: String(e), text: one.length > 90 ? one.slice(0, 89) + '…' : one });
}

export function mount(root, { params }) {
  const tenantLocked = ctx.role === 'tenant' && ctx.tenant;
  const filter = {};
  for (const k of ['tenant', 'queue', 'type']) if (params.get(k)) filter[k] = params.get(k);
  if (tenantLocked) delete filter.tenant;
  const sort = params.get('sort') === 'id' ? 'id' : 'finished';
  const st = ctx.stats || {};

  const f = {
    tenant: h('input', { type: 'text', list: 'dl-m-tenants', spellcheck: 'false', value: tenantLocked ? ctx.tenant : filter.tenant || '', readonly: !!tenantLocked }),
    queue: h('input', { type: 'text', list: 'dl-m-queues', spellcheck: 'false', value: filter.queue || '' }),
    type: h('input', { type: 'text', spellcheck: 'false', value: filter.type || '' }),
    sort: h('select', { value: sort }, h('option', { value: 'finished', text: 'newest death first' }), h('option', { value: 'id', text: 'by id' })),
  };
  const form = h('form', {
    class: 'filters', role: 'search', 'aria-label': 'Filter the morgue',
    onsubmit: (e) => {
      e.preventDefault();
      const target = morgueHref({ tenant: tenantLocked ? '' : f.tenant.value.trim(), queue: f.queue.value.trim(), type: f.type.value.trim(),
        sort: f.sort.value === 'id' ? 'id' : '' });
      if (location.hash === target) ctx.refresh(); else location.hash = target;
    },
  }, field('Tenant', f.tenant), field('Queue', f.queue), field('Type', f.type), field('Sort', f.sort),
  h('div', { class: 'filter-actions' }, h('button', { type: 'submit', class: 'primary' }, 'Apply'), h('a', { href: '#/morgue', class: 'button ghost' }, 'Clear')),
  h('datalist', { id: 'dl-m-tenants' }, (st.tenants || []).map((t) => h('option', { value: t.name }))),
  h('datalist', { id: 'dl-m-queues' }, (st.queues || []).map((q) => h('option', { value: q.name }))));

  let rows = [];
  let next = null;

  async function one(id, what) {
    try {
      if (what === 'requeue') {
        const r = await api('POST', `v1/morgue/${id}/requeue`);
        toast(r.state === 'merged' ? `Job ${id} requeued into job ${r.merged_into}.` : `Job ${id} requeued (${r.state}).`);
      } else {
        const ok = await confirmDialog({ title: `Delete job ${id}?`, ok: 'Delete', danger: true, body: 'It is removed from the morgue and from the store, for good.' });
        if (!ok) return;
        await api('DELETE', `v1/morgue/${id}`);
        toast(`Job ${id} deleted.`);
      }
      rows = rows.filter((j) => j.id !== id);
      table.update(rows);
    } catch (e) { toast(describe(e), 'error'); }
    ctx.refresh();
  }

  function estimate() {
    const keys = Object.keys(filter);
    if (!keys.length) return totals()?.dead;
    if (keys.length === 1 && filter.tenant) return (ctx.stats?.tenants || []).find((t) => t.name === filter.tenant)?.dead;
    if (keys.length === 1 && filter.queue) return (ctx.stats?.queues || []).find((q) => q.name === filter.queue)?.dead;
    return null;
  }
  function describeFilter() {
    const parts = Object.entries(filter).map(([k, v]) => `${k} ${v}`);
    if (tenantLocked) parts.unshift('tenant ' + ctx.tenant);
    return parts.length ? 'matching ' + parts.join(', ') : 'in the morgue (no filter: all of them)';
  }
  async function bulk(what) {
    const n = estimate();
    const count = n === null || n === undefined ? 'every dead job' : `${fmtInt(n)} dead job${n === 1 ? '' : 's'}`;
    const ok = await confirmDialog({
      title: what === 'requeue' ? 'Requeue all matching jobs?' : 'Delete all matching jobs?',
      ok: what === 'requeue' ? 'Requeue them' : 'Delete them', danger: what === 'delete',
      body: [`This ${what}s ${count} ${describeFilter()}.`,
        what === 'requeue' ? 'They run again with their attempts reset.' : 'They are removed from the store for good.'],
    });
    if (!ok) return;
    try {
      const r = await api('POST', 'v1/morgue/' + (what === 'requeue' ? 'requeue' : 'delete'), { ...filter });
      toast(what === 'requeue' ? `${fmtInt(r.requeued)} job${r.requeued === 1 ? '' : 's'} requeued.` : `${fmtInt(r.deleted)} job${r.deleted === 1 ? '' : 's'} deleted.`);
      rows = [];
    } catch (e) { toast(describe(e), 'error'); }
    ctx.refresh();
  }

  const table = new KeyedTable({
    caption: 'Dead jobs', rowKey: (j) => j.id, empty: 'The morgue is empty' + (Object.keys(filter).length ? ' for this filter.' : '.'),
    columns: [
      { key: 'id', label: 'ID', num: true, render: (j) => link('#/job/' + j.id, String(j.id), { 'aria-label': 'Job ' + j.id }) },
      { key: 'tenant', label: 'Tenant', render: (j) => j.tenant },
      { key: 'queue', label: 'Queue', render: (j) => j.queue },
      { key: 'type', label: 'Type', render: (j) => h('code', { text: j.type }) },
      { key: 'key', label: 'Key', render: (j) => (j.key === null ? h('span', { class: 'muted', text: '—' }) : h('code', { text: j.key })) },
      { key: 'attempts', label: 'Attempts', num: true, render: (j) => `${j.attempts} / ${j.max_attempts}` },
      { key: 'error', label: 'Last error', render: (j) => errorSnippet(j.error) },
      { key: 'died', label: 'Died', render: (j) => timeEl(j.finished_at, now()) },
      { key: 'act', label: 'Actions', sig: (j) => 'a' + j.id, render: (j) => h('span', { class: 'row-actions' },
        h('button', { type: 'button', 'data-write': true, class: 'small', 'data-fk': 'rq-' + j.id, 'aria-label': 'Requeue job ' + j.id, onclick: () => one(j.id, 'requeue') }, 'Requeue'),
        h('button', { type: 'button', 'data-write': true, class: 'small ghost danger-text', 'data-fk': 'rm-' + j.id, 'aria-label': 'Delete job ' + j.id, onclick: () => one(j.id, 'delete') }, 'Delete')) },
    ],
  });
  const status = h('div');
  const count = h('p', { class: 'muted small', role: 'status' });
  const more = h('button', { type: 'button', hidden: true, onclick: () => loadMore() }, 'Load more');
  const bulkBar = h('div', { class: 'bulk', 'data-write': true },
    h('button', { type: 'button', onclick: () => bulk('requeue') }, 'Requeue all matching…'),
    h('button', { type: 'button', class: 'danger', onclick: () => bulk('delete') }, 'Delete all matching…'));

  function show() {
    table.update(rows);
    more.hidden = next === null;
    count.textContent = `${rows.length} dead job${rows.length === 1 ? '' : 's'} shown, ${sort === 'id' ? 'by id' : 'newest death first'}${next !== null ? '; more below' : ''}.`;
  }
  async function loadMore() {
    more.disabled = true;
    try {
      const r = await api('GET', 'v1/morgue' + qs({ ...filter, sort, after: next, limit: 50 }));
      rows = rows.concat(r.jobs);
      next = r.next;
      show();
    } catch (e) { toast(describe(e), 'error'); }
    more.disabled = false;
  }

  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Morgue' }),
    h('p', { class: 'muted', text: 'Jobs that died: out of attempts, refused retry, or at-most-once failures. Requeued jobs run again with attempts reset.' })),
  form, bulkBar, status, count, table.el, h('div', { class: 'more' }, more));

  return {
    title: 'Morgue',
    async refresh() {
      if (rows.length > 1000) return;
      try {
        const r = await api('GET', 'v1/morgue' + qs({ ...filter, sort, limit: Math.min(1000, Math.max(50, rows.length)) }));
        rows = r.jobs;
        next = r.next;
        status.replaceChildren();
        show();
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Morgue'));
      }
    },
  };
}
