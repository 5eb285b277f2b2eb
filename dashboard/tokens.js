// SPDX-License-Identifier: Apache-2.0
// Tokens (admin): list, create (the secret is shown once), revoke.
import { h, timeEl, KeyedTable, field } from './dom.js';
import { api } from './api.js';
import { ctx, now, toast, describe, denied, confirmDialog } from './ctx.js';

export function mount(root) {
  const status = h('div');
  const secretBox = h('div', { class: 'banner ok', role: 'status', hidden: true });
  async function revoke(t) {
    const ok = await confirmDialog({ title: `Revoke token ${t.id} (${t.role})?`, ok: 'Revoke', danger: true,
      body: 'It stops working at once. If it is the token of this page, you are signed out.' });
    if (!ok) return;
    try {
      await api('DELETE', 'v1/tokens/' + t.id);
      toast(`Token ${t.id} revoked.`);
    } catch (e) { toast(describe(e), 'error'); }
    ctx.refresh();
  }
  const table = new KeyedTable({
    caption: 'Tokens', rowKey: (t) => t.id, sort: { key: 'id', dir: 1 }, empty: 'No tokens: this server accepts every request from loopback.',
    columns: [
      { key: 'id', label: 'ID', num: true, sort: (t) => t.id, render: (t) => String(t.id) },
      { key: 'role', label: 'Role', sort: (t) => t.role, render: (t) => h('code', { text: t.role }) },
      { key: 'queues', label: 'Queues', render: (t) => (t.queues ? t.queues.join(', ') : h('span', { class: 'muted', text: 'all' })) },
      { key: 'created', label: 'Created', sort: (t) => t.created_at, render: (t) => timeEl(t.created_at, now()) },
      { key: 'act', label: 'Actions', sig: (t) => 'r' + t.id, render: (t) => h('button', { type: 'button', 'data-write': true, class: 'small ghost danger-text', 'data-fk': 'revoke-' + t.id,
        'aria-label': 'Revoke token ' + t.id, onclick: () => revoke(t) }, 'Revoke') },
    ],
  });

  const kind = h('select', null, ['tenant', 'worker', 'admin', 'viewer'].map((k) => h('option', { value: k, text: k })));
  const tenant = h('input', { type: 'text', list: 'dl-tok-tenants', spellcheck: 'false' });
  const queues = h('input', { type: 'text', spellcheck: 'false', placeholder: 'all' });
  const err = h('p', { class: 'error-text', role: 'alert', hidden: true });
  const tenantField = field('Tenant', tenant);
  kind.addEventListener('change', () => { tenantField.hidden = kind.value !== 'tenant' && kind.value !== 'viewer'; });
  const form = h('form', {
    class: 'inline-form',
    onsubmit: async (e) => {
      e.preventDefault();
      err.hidden = true;
      const role = (kind.value === 'tenant' || (kind.value === 'viewer' && tenant.value.trim())) ? kind.value + ':' + tenant.value.trim() : kind.value;
      const body = { role };
      const q = queues.value.split(/[\s,]+/).filter(Boolean);
      if (q.length) body.queues = q;
      try {
        const r = await api('POST', 'v1/tokens', body);
        secretBox.replaceChildren(h('strong', { text: `Token ${r.id} (${r.role}) created. ` }),
          'Copy its secret now; it is not shown again: ', h('code', { class: 'secret', text: r.token }));
        secretBox.hidden = false;
        ctx.refresh();
      } catch (x) { err.textContent = describe(x); err.hidden = false; }
    },
  }, field('Role', kind), tenantField, field('Queues', queues, 'comma-separated; empty: all'),
  h('button', { type: 'submit', class: 'primary' }, 'Create token'), err,
  h('datalist', { id: 'dl-tok-tenants' }, ((ctx.stats && ctx.stats.tenants) || []).map((t) => h('option', { value: t.name }))));

  root.append(h('div', { class: 'page-head' }, h('h1', { text: 'Tokens' }),
    h('p', { class: 'muted', text: 'Secrets are stored as hashes: a token is shown once, when it is made.' })),
  status, secretBox, table.el, h('details', { class: 'panel', 'data-write': true }, h('summary', { text: 'Create a token' }), form));

  return {
    title: 'Tokens',
    async refresh() {
      try {
        const r = await api('GET', 'v1/tokens');
        status.replaceChildren();
        table.update(r.tokens || []);
      } catch (e) {
        if (e.status === 401) throw e;
        status.replaceChildren(denied(e, 'Tokens'));
      }
    },
  };
}
