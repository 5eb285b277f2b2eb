// SPDX-License-Identifier: Apache-2.0
// Small DOM helpers.  Everything is built with createElement and
// textContent: data from the server is never parsed as HTML.

export function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  let value;
  if (props) {
    for (const [k, v] of Object.entries(props)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = Array.isArray(v) ? v.filter(Boolean).join(' ') : v;
      else if (k === 'text') el.textContent = String(v);
      else if (k === 'value') value = v;
      else if (k === 'checked' || k === 'selected') el[k] = true;
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
  }
  add(el, kids);
  if (value !== undefined) el.value = value;
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';
export function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVGNS, tag);
  if (attrs) {
    for (const [k, v] of Object.entries(attrs)) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.setAttribute('class', v);
      else if (k === 'text') el.textContent = String(v);
      else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, String(v));
    }
  }
  add(el, kids);
  return el;
}

function add(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === undefined || k === null || k === false) continue;
    el.append(k instanceof Node ? k : String(k));
  }
}

// ---- formatting --------------------------------------------------------------------------

const nf = new Intl.NumberFormat('en-US');
export function fmtInt(n) { return n === undefined || n === null ? '—' : nf.format(n); }
export function fmtRate(n) {
  if (n === undefined || n === null) return '—';
  if (n >= 100) return nf.format(Math.round(n));
  if (n >= 10) return n.toFixed(1);
  return n.toFixed(2);
}
export function fmtBytes(n) {
  if (n === undefined || n === null) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 || n >= 100 ? Math.round(n) : n.toFixed(1)) + ' ' + units[i];
}
export function fmtDur(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return '—';
  if (ms < 0) return '−' + fmtDur(-ms);
  if (ms < 1000) return Math.round(ms) + ' ms';
  const sec = ms / 1000;
  if (sec < 60) return (sec < 10 ? sec.toFixed(2) : sec.toFixed(1)) + ' s';
  const m = Math.floor(sec / 60);
  const two = (a, ua, b, ub) => (b ? `${a} ${ua} ${b} ${ub}` : `${a} ${ua}`);
  if (m < 60) return two(m, 'min', Math.floor(sec % 60), 's');
  const hr = Math.floor(m / 60);
  if (hr < 48) return two(hr, 'h', m % 60, 'min');
  return two(Math.floor(hr / 24), 'd', hr % 24, 'h');
}
const p2 = (n) => String(n).padStart(2, '0');
export function fmtTime(ms, withMs = true) {
  if (ms === undefined || ms === null || ms === 0) return '—';
  const d = new Date(ms);
  const t = `${d.getFullYear()}-${p2(d.getMonth() + 1)}-${p2(d.getDate())} ` +
    `${p2(d.getHours())}:${p2(d.getMinutes())}:${p2(d.getSeconds())}`;
  return withMs ? t + '.' + String(d.getMilliseconds()).padStart(3, '0') : t;
}
export function fmtClock(ms, seconds = false) {
  const d = new Date(ms);
  return p2(d.getHours()) + ':' + p2(d.getMinutes()) + (seconds ? ':' + p2(d.getSeconds()) : '');
}
// "3 min ago" / "in 20 s", relative to the server's clock.
export function fmtRel(ms, now) {
  if (!ms) return '';
  const d = ms - now;
  if (Math.abs(d) < 1000) return 'now';
  return d < 0 ? fmtDur(-d) + ' ago' : 'in ' + fmtDur(d);
}
// A timestamp element: absolute time, relative time in the tooltip.
export function timeEl(ms, now, withMs = false) {
  if (!ms) return h('span', { class: 'muted', text: '—' });
  return h('time', { datetime: new Date(ms).toISOString(), title: fmtRel(ms, now) }, fmtTime(ms, withMs));
}

// the job states: made by the server from its table (include/tenq/states.h)
export { STATES, LIVE, UNFINISHED } from './states.js';
export function badge(state) {
  return h('span', { class: 'badge st-' + state, text: state });
}

// JSON pretty-printed with its parts marked for colouring.
export function jsonView(value) {
  const pre = h('pre', { class: 'json', tabindex: '0' });
  const out = [];
  const put = (text, cls) => out.push(cls ? h('span', { class: cls, text }) : text);
  const walk = (v, ind) => {
    if (v === null) put('null', 'j-null');
    else if (Array.isArray(v)) {
      if (!v.length) { put('[]'); return; }
      put('[\n');
      v.forEach((x, i) => { put(ind + '  '); walk(x, ind + '  '); put(i < v.length - 1 ? ',\n' : '\n'); });
      put(ind + ']');
    } else if (typeof v === 'object') {
      const ks = Object.keys(v);
      if (!ks.length) { put('{}'); return; }
      put('{\n');
      ks.forEach((k, i) => {
        put(ind + '  '); put(JSON.stringify(k), 'j-key'); put(': ');
        walk(v[k], ind + '  '); put(i < ks.length - 1 ? ',\n' : '\n');
      });
      put(ind + '}');
    } else if (typeof v === 'string') put(JSON.stringify(v), 'j-str');
    else if (typeof v === 'number') put(String(v), 'j-num');
    else if (typeof v === 'boolean') put(String(v), 'j-bool');
    else put(String(v));
  };
  walk(value, '');
  pre.append(...out);
  return pre;
}

// Replaces the children of el, keeping the keyboard focus on the element
// with the same data-fk if there is one.
export function replaceKeepFocus(el, ...kids) {
  const a = document.activeElement;
  const fk = a && el.contains(a) ? a.getAttribute('data-fk') : null;
  el.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  if (fk) {
    const n = el.querySelector(`[data-fk="${CSS.escape(fk)}"]`);
    if (n) n.focus();
  }
}

// A table whose rows are keyed: updates change only the cells whose content
// changed, so focus, open editors and scroll positions survive live refresh.
// columns: [{key, label, num, sort(row) -> value, render(row) -> Node|string,
//            sig(row) -> string (when to redraw; default: the rendered text)}]
export class KeyedTable {
  constructor({ columns, rowKey, caption, sort, empty = 'Nothing here.', rowClass }) {
    this.columns = columns;
    this.rowKey = rowKey;
    this.rowClass = rowClass;
    this.sort = sort || null; // {key, dir}
    this.rows = [];
    this.trs = new Map();
    this.details = new Map(); // key -> <tr> shown under the row
    this.editing = new Set();
    this.tbody = h('tbody');
    this.empty = h('p', { class: 'empty muted', text: empty, hidden: true });
    const head = h('tr', null, columns.map((c) => {
      const th = h('th', { scope: 'col', class: c.num ? 'num' : null });
      if (c.sort) {
        const b = h('button', { type: 'button', class: 'sort', 'data-fk': 'sort-' + c.key,
          onclick: () => this.toggleSort(c.key) }, c.label);
        th.append(b);
      } else th.textContent = c.label;
      c.th = th;
      return th;
    }));
    this.table = h('table', { class: 'grid' }, caption ? h('caption', { class: 'sr-only', text: caption }) : null,
      h('thead', null, head), this.tbody);
    this.el = h('div', { class: 'table-wrap' }, this.table, this.empty);
    this.markSort();
  }

  toggleSort(key) {
    if (this.sort && this.sort.key === key) this.sort.dir = -this.sort.dir;
    else this.sort = { key, dir: 1 };
    this.markSort();
    this.update(this.rows);
  }

  markSort() {
    for (const c of this.columns) {
      if (!c.sort) continue;
      const on = this.sort && this.sort.key === c.key;
      c.th.setAttribute('aria-sort', on ? (this.sort.dir > 0 ? 'ascending' : 'descending') : 'none');
    }
  }

  setEditing(key, on) {
    if (on) this.editing.add(key); else this.editing.delete(key);
    this.update(this.rows);
  }

  setDetail(key, node) {
    if (node) this.details.set(key, h('tr', { class: 'detail' }, h('td', { colspan: this.columns.length }, node)));
    else this.details.delete(key);
    this.update(this.rows);
  }

  update(rows) {
    this.rows = rows;
    let list = rows.slice();
    if (this.sort) {
      const c = this.columns.find((x) => x.key === this.sort.key);
      if (c && c.sort) {
        const d = this.sort.dir;
        list.sort((a, b) => {
          const x = c.sort(a), y = c.sort(b);
          if (x === y) return 0;
          if (x === null || x === undefined) return 1;
          if (y === null || y === undefined) return -1;
          return (x < y ? -1 : 1) * d;
        });
      }
    }
    const seen = new Set();
    const want = [];
    for (const r of list) {
      const k = String(this.rowKey(r));
      seen.add(k);
      let tr = this.trs.get(k);
      if (!tr) {
        tr = h('tr', { 'data-key': k }, this.columns.map((c) => h('td', { class: c.num ? 'num' : null })));
        tr.sigs = [];
        this.trs.set(k, tr);
      }
      const editing = this.editing.has(k);
      tr.classList.toggle('editing', editing);
      if (this.rowClass) tr.className = [this.rowClass(r), editing ? 'editing' : ''].filter(Boolean).join(' ');
      this.columns.forEach((c, i) => {
        const ctx = { editing, key: k };
        const sig = c.sig ? c.sig(r, ctx) : null;
        if (sig !== null && tr.sigs[i] === sig) return;
        const content = c.render(r, ctx);
        const td = tr.children[i];
        const nodeSig = sig !== null ? sig : (content instanceof Node ? content.outerHTML : String(content));
        if (tr.sigs[i] === nodeSig) return;
        tr.sigs[i] = nodeSig;
        replaceKeepFocus(td, content);
      });
      want.push(tr);
      if (this.details.has(k)) want.push(this.details.get(k));
    }
    for (const [k, tr] of this.trs) if (!seen.has(k)) { tr.remove(); this.trs.delete(k); }
    for (const [k, tr] of this.details) if (!seen.has(k)) { tr.remove(); this.details.delete(k); }
    // put rows in order, moving only those out of place
    want.forEach((tr, i) => {
      if (this.tbody.children[i] !== tr) this.tbody.insertBefore(tr, this.tbody.children[i] || null);
    });
    while (this.tbody.children.length > want.length) this.tbody.lastChild.remove();
    this.empty.hidden = list.length > 0;
    this.table.classList.toggle('is-empty', list.length === 0);
  }
}

// A labelled form field.
let fieldSeq = 0;
export function field(label, input, hint) {
  const id = input.id || 'f' + ++fieldSeq;
  input.id = id;
  return h('div', { class: 'field' }, h('label', { for: id, text: label }), input,
    hint ? h('small', { class: 'muted', text: hint }) : null);
}
