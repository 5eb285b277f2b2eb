// SPDX-License-Identifier: Apache-2.0
// A live line chart drawn as SVG, sized to its container.  Samples are
// {t, <series key>: number}; a gap in sampling (the tab was hidden) breaks
// the lines.  Pointer or arrow keys move a cursor whose values show in the
// legend.
import { h, s, fmtClock } from './dom.js';

const NICE = [1, 2, 2.5, 5, 10];
function niceStep(span, count) {
  const raw = span / count;
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  for (const n of NICE) if (n * mag >= raw) return n * mag;
  return 10 * mag;
}
// A tick label with as many decimals as the step needs.
function axisLabel(v, step) {
  let dec = 0;
  while (dec < 4 && Math.abs(step * 10 ** dec - Math.round(step * 10 ** dec)) > 1e-6) dec++;
  return v >= 1000 ? new Intl.NumberFormat('en-US').format(Math.round(v)) : v.toFixed(dec);
}
const TIME_STEPS = [5e3, 10e3, 15e3, 30e3, 60e3, 120e3, 300e3, 600e3, 900e3, 1800e3, 3600e3];

export class LineChart {
  // series: [{key, label, cls}]; fmt: value -> text; minMax: the y axis
  // reaches at least this value.
  constructor({ title, series, fmt, unit = '', minMax = 1, gapMs = 15000 }) {
    this.series = series;
    this.fmt = fmt;
    this.unit = unit;
    this.minMax = minMax;
    this.gapMs = gapMs;
    this.samples = [];
    this.range = 3600e3;
    this.now = Date.now();
    this.cursorT = null;
    this.title = title;
    this.svgWrap = h('div', { class: 'chart-svg' });
    this.cursorLabel = h('span', { class: 'chart-time muted' });
    this.values = new Map();
    const legend = h('ul', { class: 'legend' }, series.map((sr) => {
      const v = h('span', { class: 'lv' });
      this.values.set(sr.key, v);
      return h('li', null, h('span', { class: 'swatch ' + sr.cls, 'aria-hidden': 'true' }), sr.label + ' ', v);
    }));
    this.el = h('figure', { class: 'chart' },
      h('figcaption', null, h('span', { class: 'chart-title', text: title }), this.cursorLabel),
      this.svgWrap, legend);
    this.svgWrap.addEventListener('pointermove', (e) => this.pointer(e));
    this.svgWrap.addEventListener('pointerleave', () => { this.cursorT = null; this.draw(); });
    if (typeof ResizeObserver !== 'undefined') {
      let lastW = 0;
      new ResizeObserver(() => {
        const w = this.svgWrap.clientWidth;
        if (w && w !== lastW) { lastW = w; this.draw(); }
      }).observe(this.svgWrap);
    }
  }

  update(samples, range, now) {
    this.samples = samples;
    this.range = range;
    this.now = now;
    this.draw();
  }

  domain() {
    const t1 = this.now;
    let t0 = t1 - this.range;
    // with less history than the range, fit what there is (2 minutes at least)
    const first = this.samples.length ? this.samples[0].t : t1;
    if (first > t0) t0 = Math.min(first, t1 - 120e3);
    return [t0, t1];
  }

  visible() {
    const [t0] = this.domain();
    return this.samples.filter((x) => x.t >= t0 - this.gapMs);
  }

  nearest(t) {
    const v = this.visible();
    if (!v.length) return null;
    let best = v[0];
    for (const x of v) if (Math.abs(x.t - t) < Math.abs(best.t - t)) best = x;
    return best;
  }

  pointer(e) {
    if (!this.geom) return;
    const r = this.svgWrap.getBoundingClientRect();
    const x = e.clientX - r.left;
    const g = this.geom;
    if (x < g.l || x > g.w - g.r) { this.cursorT = null; this.draw(); return; }
    const t = g.t0 + ((x - g.l) / (g.w - g.l - g.r)) * (g.t1 - g.t0);
    const n = this.nearest(t);
    this.cursorT = n ? n.t : null;
    this.draw();
  }

  key(e) {
    const v = this.visible();
    if (!v.length) return;
    let i = this.cursorT === null ? v.length - 1 : v.findIndex((x) => x.t === this.cursorT);
    if (e.key === 'ArrowLeft') i = Math.max(0, i - 1);
    else if (e.key === 'ArrowRight') i = Math.min(v.length - 1, i + 1);
    else if (e.key === 'Home') i = 0;
    else if (e.key === 'End') i = v.length - 1;
    else if (e.key === 'Escape') { this.cursorT = null; this.draw(); return; }
    else return;
    e.preventDefault();
    this.cursorT = v[i].t;
    this.draw();
  }

  draw() {
    const w = Math.max(240, this.svgWrap.clientWidth || 600);
    const H = 180, l = 48, r = 12, t = 10, b = 22;
    const [t0, t1] = this.domain();
    const vis = this.visible();
    let max = this.minMax;
    for (const x of vis) for (const sr of this.series) max = Math.max(max, x[sr.key] || 0);
    const step = niceStep(max, 4);
    const ymax = Math.ceil(max / step) * step;
    const X = (tt) => l + ((tt - t0) / (t1 - t0)) * (w - l - r);
    const Y = (v) => t + (1 - v / ymax) * (H - t - b);
    this.geom = { w, l, r, t0, t1 };

    const grid = [];
    for (let v = 0; v <= ymax + step / 2; v += step) {
      grid.push(s('line', { class: 'grid-line', x1: l, x2: w - r, y1: Y(v), y2: Y(v) }));
      grid.push(s('text', { class: 'axis', x: l - 6, y: Y(v) + 4, 'text-anchor': 'end', text: axisLabel(v, step) }));
    }
    const span = t1 - t0;
    const tstep = TIME_STEPS.find((x) => span / x <= Math.max(2, Math.floor((w - l - r) / 90))) || 3600e3;
    for (let tt = Math.ceil(t0 / tstep) * tstep; tt <= t1; tt += tstep) {
      grid.push(s('line', { class: 'grid-line tick', x1: X(tt), x2: X(tt), y1: H - b, y2: H - b + 4 }));
      grid.push(s('text', { class: 'axis', x: X(tt), y: H - 6, 'text-anchor': 'middle', text: fmtClock(tt, tstep < 60e3) }));
    }

    const lines = this.series.map((sr) => {
      let d = '';
      let prev = null;
      for (const x of vis) {
        const v = x[sr.key];
        if (v === undefined || v === null) { prev = null; continue; }
        const cmd = prev === null || x.t - prev > this.gapMs ? 'M' : 'L';
        d += `${cmd}${X(Math.max(x.t, t0)).toFixed(1)},${Y(v).toFixed(1)}`;
        prev = x.t;
      }
      return s('path', { class: 'series ' + sr.cls, d: d || 'M0,0' , fill: 'none' });
    });

    const cur = this.cursorT !== null ? vis.find((x) => x.t === this.cursorT) : null;
    const shown = cur || vis[vis.length - 1] || null;
    const marks = [];
    if (cur) {
      marks.push(s('line', { class: 'cursor', x1: X(cur.t), x2: X(cur.t), y1: t, y2: H - b }));
      for (const sr of this.series) {
        if (cur[sr.key] === undefined) continue;
        marks.push(s('circle', { class: 'dot ' + sr.cls, cx: X(cur.t), cy: Y(cur[sr.key]), r: 3.5 }));
      }
    }
    for (const sr of this.series) {
      this.values.get(sr.key).textContent = shown && shown[sr.key] !== undefined ? this.fmt(shown[sr.key]) + this.unit : '—';
    }
    this.cursorLabel.textContent = cur ? 'at ' + fmtClock(cur.t, true) : (vis.length ? 'now' : 'collecting samples…');

    const last = shown ? this.series.map((sr) => `${sr.label} ${this.fmt(shown[sr.key] || 0)}${this.unit}`).join(', ') : 'no samples yet';
    const svg = s('svg', {
      width: w, height: H, viewBox: `0 0 ${w} ${H}`, role: 'img', tabindex: '0',
      'aria-label': `${this.title} from ${fmtClock(t0)} to ${fmtClock(t1)}: ${last}. Arrow keys move the cursor.`,
      onkeydown: (e) => this.key(e),
    }, s('g', null, grid), s('g', null, lines), s('g', null, marks));
    const hadFocus = this.svgWrap.contains(document.activeElement);
    this.svgWrap.replaceChildren(svg);
    if (hadFocus) svg.focus();
  }
}
