// kpilot report: draws the views of the model embedded in this page (docs/report.md). No network,
// no libraries: plain DOM and SVG. The address's hash picks the view and node
// (#view=tree&node=3), so a view can be linked to and opened by a headless browser.
'use strict';
(function () {
  const errors = document.getElementById('report-errors');
  function reportError(where, e) {
    errors.textContent += where + ': ' + (e && e.stack ? e.stack : String(e)) + '\n';
  }
  window.addEventListener('error', (ev) => reportError('error', ev.error || ev.message));

  const t0 = performance.now();
  const M = JSON.parse(document.getElementById('report-model').textContent);
  const SVGNS = 'http://www.w3.org/2000/svg';
  const VERDICTS = ['passed', 'incorrect', 'compile_error', 'runtime_error', 'timeout', 'suspicious'];
  const COLOR = {passed: '#2e8b57', incorrect: '#d1495b', compile_error: '#e8871e', runtime_error: '#8e44ad',
                 timeout: '#7f8c8d', suspicious: '#c9a227'};
  const colorOf = (v) => COLOR[v] || '#95a5a6';

  // ---- small helpers ---------------------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'class') e.className = v; else if (k === 'text') e.textContent = v;
      else if (k.startsWith('on')) e.addEventListener(k.slice(2), v); else e.setAttribute(k, v);
    }
    for (const c of children) if (c != null) e.append(c);
    return e;
  }
  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    if (parent) parent.append(e);
    return e;
  }
  const fmt = (x, d = 3) => (x == null || !isFinite(x)) ? '—' : Number(x).toPrecision(d);
  const times = (x) => (x > 0 ? fmt(x) + '×' : '—');
  // A message of many lines on one: its first and last non-blank lines (a traceback's exception).
  const gist = (s) => {
    const lines = String(s || '').split('\n').map((l) => l.trim()).filter(Boolean);
    return lines.length > 1 ? lines[0] + ' … ' + lines[lines.length - 1] : (lines[0] || '');
  };
  const ci = (c) => (Array.isArray(c) && c.length === 2 && (c[0] || c[1])) ? '[' + fmt(c[0]) + ', ' + fmt(c[1]) + ']' : '';
  const badge = (v) => el('span', {class: 'badge', style: 'background:' + colorOf(v), text: v || 'unknown'});
  function kv(pairs) {
    const dl = el('dl', {class: 'kv'});
    for (const [k, v] of pairs) if (v !== undefined && v !== '') dl.append(el('dt', {text: k}), el('dd', {}, v));
    return dl;
  }
  function legend(items) {
    const d = el('div', {class: 'legend'});
    for (const [name, color] of items) {
      const i = el('i'); i.style.background = color; d.append(el('span', {}, i, name));
    }
    return d;
  }

  // A line diff (longest common subsequence; sources are hundreds of lines, so O(n·m) is fine).
  function diffLines(a, b) {
    const x = a.split('\n'), y = b.split('\n'), n = x.length, m = y.length;
    if (n * m > 4e6) return null;
    const L = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
    for (let i = n - 1; i >= 0; --i)
      for (let j = m - 1; j >= 0; --j) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    const out = [];
    let i = 0, j = 0;
    while (i < n || j < m) {
      if (i < n && j < m && x[i] === y[j]) { out.push([' ', x[i]]); ++i; ++j; }
      else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) out.push(['+', y[j++]]);
      else out.push(['-', x[i++]]);
    }
    return out;
  }
  function diffBlock(a, b) {
    const d = diffLines(a, b);
    const pre = el('pre', {class: 'diff'});
    if (!d) { pre.textContent = '(too large to diff here)'; return pre; }
    let changed = 0;
    for (const [op, line] of d) {
      if (op === ' ') { pre.append(document.createTextNode('  ' + line + '\n')); continue; }
      ++changed;
      pre.append(el('span', {class: op === '+' ? 'add' : 'del', text: op + ' ' + line}));
    }
    if (!changed) pre.textContent = '(the same source; only the params differ)';
    return pre;
  }

  // A chart frame: linear or log axes, ticks, labels. Returns {g, x, y} with scale functions.
  function chart(parent, opts) {
    const W = opts.width || 760, H = opts.height || 300, ml = 64, mr = 16, mt = 28, mb = 40;
    const root = svg('svg', {class: 'chart', width: W, height: H, viewBox: `0 0 ${W} ${H}`}, parent);
    svg('text', {class: 'title', x: ml, y: 18, text: opts.title || ''}, root);
    const scale = (lo, hi, a, b, log) => {
      if (log) { const l0 = Math.log10(lo), l1 = Math.log10(hi); return (v) => a + (Math.log10(Math.max(v, lo)) - l0) / (l1 - l0 || 1) * (b - a); }
      return (v) => a + (v - lo) / ((hi - lo) || 1) * (b - a);
    };
    const x = scale(opts.x[0], opts.x[1], ml, W - mr, opts.xlog);
    const y = scale(opts.y[0], opts.y[1], H - mb, mt, opts.ylog);
    const ticks = (lo, hi, log) => {
      if (log) { const t = []; for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); ++e) { const v = Math.pow(10, e); if (v >= lo * 0.999 && v <= hi * 1.001) t.push(v); } return t; }
      const step = Math.pow(10, Math.floor(Math.log10((hi - lo) || 1))) * ((hi - lo) / Math.pow(10, Math.floor(Math.log10((hi - lo) || 1))) > 5 ? 1 : 0.5);
      const t = []; for (let v = Math.ceil(lo / step) * step; v <= hi + 1e-12; v += step) t.push(+v.toPrecision(6)); return t;
    };
    const tl = (v) => (Math.abs(v) >= 1e4 || (Math.abs(v) < 1e-2 && v !== 0)) ? v.toExponential(0) : String(+v.toPrecision(4));
    for (const v of ticks(opts.x[0], opts.x[1], opts.xlog)) {
      svg('line', {x1: x(v), x2: x(v), y1: mt, y2: H - mb, stroke: '#eef1f4'}, root);
      svg('text', {x: x(v), y: H - mb + 14, 'text-anchor': 'middle', text: tl(v)}, root);
    }
    for (const v of ticks(opts.y[0], opts.y[1], opts.ylog)) {
      svg('line', {x1: ml, x2: W - mr, y1: y(v), y2: y(v), stroke: '#eef1f4'}, root);
      svg('text', {x: ml - 6, y: y(v) + 4, 'text-anchor': 'end', text: tl(v)}, root);
    }
    svg('rect', {x: ml, y: mt, width: W - ml - mr, height: H - mt - mb, fill: 'none', stroke: '#c9d0d8'}, root);
    svg('text', {x: (ml + W - mr) / 2, y: H - 6, 'text-anchor': 'middle', text: opts.xlabel || ''}, root);
    svg('text', {x: 14, y: (mt + H - mb) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(mt + H - mb) / 2})`, text: opts.ylabel || ''}, root);
    return {g: svg('g', {}, root), x, y, root};
  }
  function polyline(g, pts, attrs) {
    if (!pts.length) return;
    svg('polyline', Object.assign({fill: 'none', points: pts.map((p) => p[0].toFixed(1) + ',' + p[1].toFixed(1)).join(' ')}, attrs), g);
  }
  const extent = (vals, pad) => {
    const v = vals.filter((x) => isFinite(x));
    if (!v.length) return [0, 1];
    let lo = Math.min(...v), hi = Math.max(...v);
    if (lo === hi) { lo -= 0.5; hi += 0.5; }
    const p = (hi - lo) * (pad || 0.05);
    return [lo - p, hi + p];
  };

  // ---- header and navigation -------------------------------------------------------------------
  const run = M.run || {};
  const nodes = M.nodes || [];
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const VIEWS = {run: ['tree', 'progress', 'roofline', 'timeline'], bench: ['bench'], lineage: ['lineage']}[M.kind] || [];
  const TITLES = {tree: 'Search tree', progress: 'Progress', roofline: 'Roofline', timeline: 'GPU timeline', bench: 'Bench', lineage: 'Lineage'};
  function header() {
    const h = document.getElementById('report-header');
    const kindName = {run: 'optimize run', bench: 'bench', lineage: 'lineage walk'}[M.kind] || M.kind;
    const task = M.kind === 'bench' ? String(run.task || '').replace(/^bench:/, '') : run.task;
    h.append(el('h1', {text: `${task} — ${kindName} ${run.id}`}));
    const facts = el('div', {class: 'facts'});
    const fact = (k, v, id) => facts.append(el('span', id ? {id} : {}, k + ' ', el('b', {text: v})));
    fact('status', run.status + (run.stop_reason ? ' (' + run.stop_reason + ')' : ''));
    if (M.kind === 'run') {
      fact('nodes', String(nodes.length));
      fact('best', times(run.best_speedup) + (run.best_node >= 0 ? ' at node ' + run.best_node : ''));
      const cfg = run.config || {};
      if (cfg.generator) fact('generator', cfg.generator);
      if (cfg.policy) fact('policy', cfg.policy);
    }
    if (M.kind === 'bench' && M.bench) {
      const B = M.bench, slices = (B.slices || []).length, total = B.total || {};
      fact('problems', String((B.problems || []).length));
      // The bench's own wall time, its slices' summed (docs/bench.md, "The report").
      if (slices) fact('wall', `${Math.round(B.wall_s)} s` + (slices > 1 ? ` over ${slices} slices` : ''), 'fact-wall');
      const measured = (total.compile || {}).measured || 0;
      if (measured) fact('torch.compile cached', `${total.compile_cached || 0} of ${measured}`, 'fact-compile-cached');
    }
    fact('started', run.created_at || '');
    fact('last record', run.updated_at || '');
    h.append(facts);
    if (run.note) h.append(el('p', {class: 'note', id: 'status-note', text: run.note}));
    const nav = document.getElementById('report-nav');
    for (const v of VIEWS) nav.append(el('a', {href: '#view=' + v, 'data-view': v, text: TITLES[v]}));
  }

  const rendered = new Set();
  function show(view, nodeId) {
    if (!VIEWS.includes(view)) view = VIEWS[0];
    for (const a of document.querySelectorAll('#report-nav a')) a.classList.toggle('active', a.dataset.view === view);
    for (const s of document.querySelectorAll('section.view')) s.classList.toggle('active', s.id === 'view-' + view);
    if (!rendered.has(view)) {
      rendered.add(view);
      try { RENDER[view](document.getElementById('view-' + view)); } catch (e) { reportError('view ' + view, e); }
    }
    if (view === 'tree' && nodeId != null && byId.has(nodeId)) selectNode(nodeId);
  }
  function fromHash() {
    const p = new URLSearchParams(location.hash.slice(1));
    const n = p.get('node');
    show(p.get('view') || VIEWS[0], n == null ? null : Number(n));
  }

  // ---- the search tree -------------------------------------------------------------------------
  let selectNode = () => {};
  function renderTree(sec) {
    if (!nodes.length) { sec.append(el('p', {class: 'muted', text: 'No node was recorded.'})); return; }
    const children = new Map();
    for (const n of nodes) { if (!children.has(n.parent)) children.set(n.parent, []); children.get(n.parent).push(n.id); }
    for (const c of children.values()) c.sort((a, b) => a - b);
    // Layout: leaves one row each in depth-first order, a parent at the mean of its children.
    const pos = new Map();
    let row = 0, maxDepth = 0;
    const roots = nodes.filter((n) => !byId.has(n.parent)).map((n) => n.id);
    const stack = roots.slice().reverse().map((id) => [id, 0, false]);
    while (stack.length) {
      const [id, depth, done] = stack.pop();
      const kids = children.get(id) || [];
      if (!done && kids.length) {
        stack.push([id, depth, true]);
        for (let i = kids.length - 1; i >= 0; --i) stack.push([kids[i], depth + 1, false]);
        continue;
      }
      maxDepth = Math.max(maxDepth, depth);
      const y = kids.length ? kids.reduce((s, k) => s + pos.get(k).row, 0) / kids.length : row++;
      pos.set(id, {depth, row: y});
    }
    const DX = 70, DY = 16, W = 40 + (maxDepth + 1) * DX, H = 30 + row * DY;
    const onPath = new Set(M.best_path || []);
    const maxSpeed = Math.max(1, ...nodes.map((n) => n.speedup || 0));
    const radius = (n) => 3 + 7 * Math.sqrt(Math.max(0, n.speedup || 0) / maxSpeed);
    const split = el('div', {class: 'split'});
    const left = el('div');
    left.append(legend(VERDICTS.map((v) => [v, colorOf(v)]).concat([['promoted path', '#f0b400']])));
    left.append(el('p', {class: 'muted', text: 'Size: speedup over the baseline. Click a node for its source, diff, verdict, profile and cards.'}));
    const box = el('div', {class: 'scroll'});
    const s = svg('svg', {id: 'tree-svg', width: W, height: H}, box);
    const X = (p) => 20 + p.depth * DX, Y = (p) => 16 + p.row * DY;
    const eg = svg('g', {}, s), ng = svg('g', {}, s);
    const circles = new Map();
    for (const n of nodes) {
      const p = pos.get(n.id);
      if (!p) continue;
      const pp = pos.get(n.parent);
      if (pp) {
        const x0 = X(pp), y0 = Y(pp), x1 = X(p), y1 = Y(p), mx = (x0 + x1) / 2;
        svg('path', {class: 'edge' + (onPath.has(n.id) && onPath.has(n.parent) ? ' path' : ''), d: `M${x0},${y0} C${mx},${y0} ${mx},${y1} ${x1},${y1}`}, eg);
      }
      const c = svg('circle', {class: 'node', 'data-node': n.id, cx: X(p), cy: Y(p), r: radius(n), fill: colorOf(n.verdict)}, ng);
      if (onPath.has(n.id)) c.setAttribute('stroke', '#f0b400'), c.setAttribute('stroke-width', '2');
      svg('title', {text: `node ${n.id}: ${n.verdict} ${times(n.speedup)} — ${n.summary || ''}`}, c);
      if (nodes.length <= 200) svg('text', {class: 'node-label', x: X(p) + radius(n) + 2, y: Y(p) - 3, text: String(n.id)}, ng);
      c.addEventListener('click', () => { history.replaceState(null, '', '#view=tree&node=' + n.id); selectNode(n.id); });
      circles.set(n.id, c);
    }
    left.append(box);
    const panel = el('div', {class: 'panel', id: 'node-panel'}, el('p', {class: 'muted', text: 'Select a node.'}));
    split.append(left, panel);
    sec.append(split);
    let selected = null;
    selectNode = (id) => {
      if (selected != null && circles.has(selected)) circles.get(selected).classList.remove('selected');
      selected = id;
      if (circles.has(id)) circles.get(id).classList.add('selected');
      panel.replaceChildren(...nodePanel(byId.get(id)));
    };
  }

  function nodePanel(n) {
    const out = [];
    const ev = n.evaluation || {};
    out.push(el('h2', {id: 'node-title', text: `Node ${n.id}` + (n.parent >= 0 ? ` (child of ${n.parent})` : ' (root)')}));
    out.push(kv([
      ['verdict', el('span', {}, badge(n.verdict), ' ', (ev.verdict && ev.verdict.summary) || '')],
      ['speedup', times(n.speedup) + ' ' + ci(ev.ci)],
      ['change', n.summary || ''],
      ['aimed at', n.finding || ''],
      ['promoted', n.promoted ? 'yes' : ''],
      ['bottleneck', ev.bottleneck || ''],
      ['device', n.device != null && n.device >= 0 ? 'GPU ' + n.device : (ev.backend === 'host' ? 'host' : '')],
      ['file', n.source_name || ''],
    ]));
    if (n.note) out.push(el('p', {class: 'note', text: n.note}));
    const params = Object.entries(n.params || {});
    if (params.length) {
      out.push(el('h3', {text: 'Params'}));
      out.push(el('pre', {class: 'params', text: params.map(([k, v]) => `${k}=${v}`).join('  ')}));
    }
    if (n.verdict !== 'passed' && ev.verdict && ev.verdict.evidence && Object.keys(ev.verdict.evidence).length) {
      out.push(el('h3', {text: 'Evidence'}));
      out.push(el('pre', {text: JSON.stringify(ev.verdict.evidence, null, 2)}));
    }
    if (ev.compile && ev.compile.first_error) {
      out.push(el('h3', {text: 'Compile error'}));
      out.push(el('pre', {text: ev.compile.first_error}));
    }
    if ((ev.timings || []).length) {
      out.push(el('h3', {text: 'Timings'}));
      const t = el('table', {}, el('tr', {}, ...['workload', 'candidate ms', 'baseline ms', 'speedup', '95% CI'].map((h) => el('th', {text: h}))));
      for (const w of ev.timings)
        t.append(el('tr', {}, el('td', {text: w.workload}), el('td', {class: 'num', text: fmt(w.candidate_ms, 4)}),
                     el('td', {class: 'num', text: fmt(w.baseline_ms, 4)}), el('td', {class: 'num', text: times(w.speedup)}),
                     el('td', {class: 'num', text: ci(w.ci)})));
      out.push(t);
    }
    const findings = (n.profile && n.profile.findings) || ev.findings || [];
    if (findings.length || n.profile) {
      out.push(el('h3', {text: 'Profile findings'}));
      if (n.profile) out.push(el('p', {class: 'muted', text: n.profile.error ? 'no counter profile: ' + n.profile.error
        : `${n.profile.profiler || ''} profile, ${n.profile.bottleneck || 'unclassified'}`}));
      for (const f of findings)
        out.push(el('div', {class: 'finding'}, el('b', {text: f.id}), ' ', el('span', {class: 'muted', text: `(${f.tool || ''}, severity ${fmt(f.severity, 2)})`}),
                    el('div', {text: f.guidance || ''})));
    }
    const offered = n.cards_offered || [], applied = n.cards_applied || [];
    if (offered.length || applied.length) {
      out.push(el('h3', {text: 'Skill cards'}));
      out.push(kv([['offered', offered.join(', ') || 'none'], ['applied', applied.join(', ') || 'none']]));
    }
    const src = (M.sources || {})[n.source] || '';
    out.push(el('h3', {text: 'Source'}));
    out.push(el('pre', {id: 'node-source', text: src}));
    const parent = byId.get(n.parent);
    if (parent) {
      out.push(el('h3', {text: `Diff against node ${parent.id}`}));
      const pp = Object.entries(parent.params || {}).map(([k, v]) => `${k}=${v}`).join(' ');
      const np = params.map(([k, v]) => `${k}=${v}`).join(' ');
      if (pp !== np) out.push(el('pre', {text: `params: ${pp || '(none)'}\n     → ${np || '(none)'}`}));
      out.push(diffBlock((M.sources || {})[parent.source] || '', src));
    }
    for (const t of n.transcripts || []) {
      out.push(el('h3', {text: `Generator exchange (${t.endpoint}, ${fmt(t.seconds)} s)`}));
      out.push(el('pre', {text: t.text || t.error || ''}));
    }
    return out;
  }

  // ---- progress --------------------------------------------------------------------------------
  function renderProgress(sec) {
    const pts = (M.progress || []).filter((p) => p.evaluations > 0);
    if (!pts.length) { sec.append(el('p', {class: 'muted', text: 'No evaluation was recorded.'})); return; }
    for (const [key, label] of [['evaluations', 'evaluations'], ['t_s', 'wall-clock seconds since the run started']]) {
      const xs = pts.map((p) => p[key]);
      const ys = pts.map((p) => p.speedup).filter((v) => v > 0).concat(pts.map((p) => p.best));
      const c = chart(sec, {title: 'Best speedup against ' + (key === 't_s' ? 'wall-clock time' : 'evaluations'),
                            x: extent(xs, 0.02), y: [0, extent(ys)[1]], xlabel: label, ylabel: 'speedup ×'});
      c.root.setAttribute('id', 'progress-' + key);
      const best = pts.map((p) => [c.x(p[key]), c.y(p.best)]);
      const step = [];
      for (let i = 0; i < best.length; ++i) { if (i) step.push([best[i][0], best[i - 1][1]]); step.push(best[i]); }
      polyline(c.g, step, {stroke: '#f0b400', 'stroke-width': 2.5});
      for (const p of pts)
        svg('circle', {cx: c.x(p[key]), cy: c.y(Math.max(0, p.speedup)), r: 3, fill: colorOf(p.verdict), opacity: 0.8}, c.g);
    }
    const proms = (M.promotions || []).filter((p) => p.ci && p.ci.length === 2 && (p.ci[0] || p.ci[1]));
    if (proms.length) {
      const ys = proms.flatMap((p) => [p.ci[0], p.ci[1], p.paired_speedup]).concat([1]);
      const c = chart(sec, {title: 'Promotion checks: challenger against incumbent, paired, with 95% CI', height: 260,
                            x: [0.5, proms.length + 0.5], y: extent(ys, 0.1), xlabel: 'promotion check', ylabel: 'paired speedup ×'});
      svg('line', {x1: c.x(0.5), x2: c.x(proms.length + 0.5), y1: c.y(1), y2: c.y(1), stroke: '#999', 'stroke-dasharray': '4 3'}, c.g);
      proms.forEach((p, i) => {
        const x = c.x(i + 1), col = p.promoted ? '#2e8b57' : '#d1495b';
        svg('line', {x1: x, x2: x, y1: c.y(p.ci[0]), y2: c.y(p.ci[1]), stroke: col, 'stroke-width': 2}, c.g);
        const d = svg('circle', {cx: x, cy: c.y(p.paired_speedup), r: 4, fill: col}, c.g);
        svg('title', {text: `node ${p.node} vs ${p.incumbent}: ${fmt(p.paired_speedup)}× ${ci(p.ci)} — ${p.promoted ? 'promoted' : 'rejected'}`}, d);
      });
      sec.append(legend([['promoted', '#2e8b57'], ['rejected', '#d1495b']]));
    }
  }

  // ---- roofline --------------------------------------------------------------------------------
  function renderRoofline(sec) {
    const R = M.roofline || {};
    const W = (R.workloads || []).filter((w) => w.flops > 0 && w.min_bytes > 0);
    if (R.note) sec.append(el('p', {class: 'note', text: R.note}));
    if (!W.length) return;
    const pts = [];
    for (const n of nodes)
      for (const t of ((n.evaluation || {}).timings || [])) {
        const w = W.find((x) => x.workload === t.workload);
        if (!w || !(t.candidate_ms > 0)) continue;
        pts.push({n, ai: w.flops / w.min_bytes, perf: w.flops / (t.candidate_ms * 1e-3), wl: t.workload});
      }
    const base = [];
    for (const w of W) {
      const t = nodes.flatMap((n) => ((n.evaluation || {}).timings || [])).find((t) => t.workload === w.workload && t.baseline_ms > 0);
      if (t) base.push({ai: w.flops / w.min_bytes, perf: w.flops / (t.baseline_ms * 1e-3), wl: w.workload});
    }
    const cz = R.ceilings || null;
    const ais = pts.map((p) => p.ai).concat(base.map((p) => p.ai));
    const perfs = pts.map((p) => p.perf).concat(base.map((p) => p.perf));
    let xlo = Math.min(...ais) / 10, xhi = Math.max(...ais) * 10;
    let yhi = Math.max(...perfs) * 3, ylo = Math.min(...perfs) / 10;
    if (cz) { yhi = Math.max(yhi, cz.fp32_flops_per_s * 2); xlo = Math.min(xlo, 0.01); xhi = Math.max(xhi, 1000); }
    const c = chart(sec, {title: 'Every node against the ceilings' + (R.gpu ? ' of the ' + R.gpu : ''), width: 820, height: 440,
                          x: [xlo, xhi], y: [ylo, yhi], xlog: true, ylog: true,
                          xlabel: 'arithmetic intensity (FLOP per byte, the task\'s minimum bytes)', ylabel: 'FLOP/s'});
    c.root.setAttribute('id', 'roofline-chart');
    if (cz && cz.dram_bytes_per_s > 0 && cz.fp32_flops_per_s > 0) {
      const ridge = cz.fp32_flops_per_s / cz.dram_bytes_per_s;
      polyline(c.g, [[c.x(xlo), c.y(cz.dram_bytes_per_s * xlo)], [c.x(ridge), c.y(cz.fp32_flops_per_s)], [c.x(xhi), c.y(cz.fp32_flops_per_s)]],
               {stroke: '#2c6fbb', 'stroke-width': 2});
      svg('text', {x: c.x(ridge) - 6, y: c.y(cz.fp32_flops_per_s) - 6, 'text-anchor': 'end', text: `FP32 ${fmt(cz.fp32_flops_per_s / 1e12)} TFLOP/s, DRAM ${fmt(cz.dram_bytes_per_s / 1e9)} GB/s (measured)`}, c.g);
    }
    for (const b of base) svg('rect', {x: c.x(b.ai) - 5, y: c.y(b.perf) - 5, width: 10, height: 10, fill: 'none', stroke: '#333'}, c.g);
    for (const p of pts) {
      const d = svg('circle', {class: 'node', cx: c.x(p.ai), cy: c.y(p.perf), r: 4, fill: colorOf(p.n.verdict), opacity: 0.85}, c.g);
      svg('title', {text: `node ${p.n.id} (${p.wl}): ${fmt(p.perf / 1e9)} GFLOP/s`}, d);
    }
    sec.append(legend([['node (by verdict)', '#2e8b57'], ['baseline (square)', '#333'], ['measured ceilings', '#2c6fbb']]));
  }

  // ---- timeline --------------------------------------------------------------------------------
  function renderTimeline(sec) {
    const T = M.timeline || {}, jobs = T.jobs || [];
    if (!jobs.length) { sec.append(el('p', {class: 'muted', text: 'No job carried executor times (runs made from a space file, or before times were recorded).'})); return; }
    const KIND = {compile: '#e8871e', evaluate: '#2c6fbb', 'promotion check': '#2e8b57', profile: '#8e44ad'};
    // Lanes: the compiles, stacked where they overlap, then one lane per evaluation queue.
    const lanes = [];
    const compileRows = [];
    for (const j of jobs.filter((j) => j.lane === 'compile').sort((a, b) => a.start - b.start)) {
      let r = compileRows.findIndex((end) => end <= j.start);
      if (r < 0) { r = compileRows.length; compileRows.push(0); }
      compileRows[r] = j.end;
      j.row = r;
    }
    for (let r = 0; r < compileRows.length; ++r) lanes.push({name: 'compile ' + (r + 1), jobs: jobs.filter((j) => j.lane === 'compile' && j.row === r)});
    // One lane per queue: by the machine it ran on (a Slurm allocation), else by its GPU.
    const laneOf = (j) => j.where || (j.device >= 0 ? 'GPU ' + j.device : 'host queue');
    const queues = [...new Set(jobs.filter((j) => j.lane === 'queue').map(laneOf))].sort();
    for (const q of queues) lanes.push({name: q, queue: true, jobs: jobs.filter((j) => j.lane === 'queue' && laneOf(j) === q)});
    const end = Math.max(T.end_s || 0, ...jobs.map((j) => j.end));
    const Wd = 960, LH = 22, top = 30, left = 170, H = top + lanes.length * LH + 40;
    const root = svg('svg', {class: 'chart', id: 'timeline-chart', width: Wd, height: H}, sec);
    svg('text', {class: 'title', x: left, y: 18, text: 'Compile, evaluate, promotion checks and profiles per queue; gaps on a queue are idle'}, root);
    const x = (t) => left + t / (end || 1) * (Wd - left - 20);
    lanes.forEach((lane, i) => {
      const y = top + i * LH;
      svg('text', {x: left - 8, y: y + 15, 'text-anchor': 'end', text: lane.name}, root);
      if (lane.queue) svg('rect', {x: x(0), y: y + 2, width: x(end) - x(0), height: LH - 4, fill: '#f1f3f5'}, root);
      for (const j of lane.jobs) {
        const r = svg('rect', {x: x(j.start), y: y + 2, width: Math.max(1, x(j.end) - x(j.start)), height: LH - 4, fill: KIND[j.kind] || '#999'}, root);
        svg('title', {text: `${j.kind} of node ${j.node}: ${fmt(j.start)}–${fmt(j.end)} s`}, r);
      }
      if (lane.queue) {
        const busy = lane.jobs.reduce((s, j) => s + (j.end - j.start), 0);
        svg('text', {x: Wd - 16, y: y + 15, 'text-anchor': 'end', text: `busy ${Math.round(100 * busy / (end || 1))}%`}, root);
      }
    });
    for (let t = 0; t <= end; t += Math.max(1, Math.pow(10, Math.floor(Math.log10(end || 1))) / (end / Math.pow(10, Math.floor(Math.log10(end || 1))) > 4 ? 1 : 2)))
      svg('text', {x: x(t), y: H - 12, 'text-anchor': 'middle', text: String(+t.toPrecision(4))}, root);
    svg('text', {x: (left + Wd) / 2, y: H - 0, 'text-anchor': 'middle', text: 'seconds since the run started'}, root);
    sec.append(legend(Object.entries(KIND).concat([['idle', '#f1f3f5']])));
  }

  // ---- bench -----------------------------------------------------------------------------------
  function renderBench(sec) {
    const B = M.bench || {};
    const natural = (a, b) => String(a).localeCompare(String(b), undefined, {numeric: true});
    // Suite order: by level, then by the number in the problem's name (level1/2_… before level1/10_…).
    const probs = (B.problems || []).slice().sort((a, b) => natural(a.id, b.id));
    if ((B.unfinished || []).length)
      sec.append(el('p', {class: 'note', text: `${B.unfinished.length} problem(s) started and not finished: ` + B.unfinished.map((u) => u.problem).join(', ')}));
    if (!probs.length) { sec.append(el('p', {class: 'muted', text: 'No problem has finished yet.'})); return; }
    const levels = [...new Set(probs.map((p) => p.level))].sort(natural);
    const lt = el('table', {id: 'bench-levels'}, el('tr', {}, ...['level', 'problems', 'correct', 'fast_1 eager', 'geomean × eager', 'fast_1 compile', 'geomean × compile', 'wall s (sum)'].map((h) => el('th', {text: h}))));
    for (const l of (B.levels || []).slice().sort((a, b) => natural(a.level, b.level)).concat(B.total ? [B.total] : [])) {
      const e = l.eager || {}, c = l.compile || {};
      const f1 = (m) => (m.fast_p && m.fast_p['1'] != null ? Math.round(100 * m.fast_p['1']) + '%' : '—');
      lt.append(el('tr', {}, el('td', {text: l.level}), el('td', {class: 'num', text: String(l.problems)}), el('td', {class: 'num', text: String(l.correct)}),
                   el('td', {class: 'num', text: f1(e)}), el('td', {class: 'num', text: times(e.geomean_speedup)}), el('td', {class: 'num', text: c.measured ? f1(c) : '—'}),
                   el('td', {class: 'num', text: c.measured ? times(c.geomean_speedup) : '—'}), el('td', {class: 'num', text: String(Math.round((l.cost || {}).wall_s || 0))})));
    }
    sec.append(lt);
    const sp = probs.flatMap((p) => [p.speedup_eager, p.speedup_compile]).filter((v) => v > 0);
    const pmax = Math.max(2, Math.min(16, (Math.max(...sp, 1)) * 1.1));
    const c = chart(sec, {title: 'fast_p: share of problems correct and faster than p × the baseline', width: 820, height: 340,
                          x: [0, pmax], y: [0, 1], xlabel: 'p (speedup threshold)', ylabel: 'fast_p'});
    c.root.setAttribute('id', 'fastp-chart');
    const palette = ['#2c6fbb', '#d1495b', '#2e8b57', '#8e44ad', '#e8871e', '#16a085'];
    const items = [];
    levels.forEach((lv, i) => {
      const ps = probs.filter((p) => p.level === lv);
      for (const [key, dash] of [['speedup_eager', ''], ['speedup_compile', '6 4']]) {
        if (key === 'speedup_compile' && !ps.some((p) => p.compile_measured)) continue;
        const curve = [];
        for (let k = 0; k <= 200; ++k) {
          const p = pmax * k / 200;
          const f = ps.filter((q) => q.verdict === 'passed' && !q.error && q[key] > p).length / ps.length;
          curve.push([c.x(p), c.y(f)]);
        }
        polyline(c.g, curve, {stroke: palette[i % palette.length], 'stroke-width': 2, 'stroke-dasharray': dash, class: 'fastp-curve'});
      }
      items.push(['level ' + lv + ' (solid: eager, dashed: torch.compile)', palette[i % palette.length]]);
    });
    svg('line', {x1: c.x(1), x2: c.x(1), y1: c.y(0), y2: c.y(1), stroke: '#999', 'stroke-dasharray': '3 3'}, c.g);
    sec.append(legend(items));
    // The per-problem table, sortable by any column.
    const order = new Map(probs.map((p, i) => [p.id, i + 1]));
    const cols = [
      ['#', (p) => order.get(p.id), true],
      ['problem', (p) => p.id], ['level', (p) => p.level], ['verdict', (p) => p.error ? 'error' : p.verdict],
      ['× eager', (p) => p.speedup_eager, true], ['× compile', (p) => p.compile_measured ? p.speedup_compile : null, true],
      ['CI (first workload)', (p) => ci(((p.workloads || [])[0] || {}).ci)], ['evaluations', (p) => p.evaluations, true],
      ['wall s', (p) => p.wall_s, true], ['notes', (p) => [gist(p.error), gist(p.message), ...(p.reference_flaws || []).map((f) => f.flaw + ': ' + f.evidence), ...(p.warnings || [])].filter(Boolean).join('; ')],
    ];
    const table = el('table', {id: 'bench-table'});
    const head = el('tr');
    const body = el('tbody');
    let sortCol = 0, asc = true;
    const draw = () => {
      const rows = probs.slice().sort((a, b) => {
        const x = cols[sortCol][1](a), y = cols[sortCol][1](b);
        const r = (x == null) - (y == null) || (typeof x === 'string' ? natural(x, y) : x < y ? -1 : x > y ? 1 : 0);
        return asc ? r : -r;
      });
      body.replaceChildren(...rows.map((p) => el('tr', {}, ...cols.map(([name, get, num], i) => {
        const v = get(p);
        const td = el('td', {class: num ? 'num' : ''});
        if (name === 'problem' && p.page) td.append(el('a', {href: p.page, text: v}));
        else if (name === 'verdict') td.append(badge(v));
        else if (name.startsWith('×')) td.textContent = v > 0 ? fmt(v, 4) + '×' : '—';
        else td.textContent = v == null ? '' : (num && !Number.isInteger(v) ? fmt(v) : String(v));
        return td;
      }))));
    };
    cols.forEach(([name, , num], i) => head.append(el('th', {class: num ? 'num' : '', text: name, onclick: () => { asc = sortCol === i ? !asc : true; sortCol = i; draw(); }})));
    table.append(el('thead', {}, head), body);
    draw();
    sec.append(el('div', {class: 'scroll'}, table));
  }

  // ---- lineage ---------------------------------------------------------------------------------
  function renderLineage(sec) {
    const L = M.lineage || {};
    const e = L.expert || {};
    sec.append(kv([['expert against the naive reference', times(e.speedup) + ' ' + ci(e.ci)],
                   ['stopped', (L.stop && (L.stop.reason + (L.stop.detail ? ': ' + L.stop.detail : ''))) || ''],
                   ['generator exchanges', String(L.transcripts || 0)]]));
    for (const m of L.errors || []) sec.append(el('p', {class: 'note', text: m}));
    const accepted = (L.attempts || []).filter((a) => a.accepted);
    sec.append(el('h3', {text: 'Steps (each a validated simplification; its card reverses it)'}));
    const t = el('table', {id: 'lineage-steps'}, el('tr', {}, ...['step', 'feature removed', 'mechanism', 'summary', 'simplified ×', 'round trip'].map((h) => el('th', {text: h}))));
    for (const a of accepted) {
      const d = a.declaration || {};
      const rt = (a.round_trip || []).map((c) => times(c.speedup)).join(', ');
      t.append(el('tr', {}, el('td', {text: String(a.step)}), el('td', {text: d.feature || ''}), el('td', {text: d.mechanism || ''}),
                  el('td', {text: d.summary || ''}), el('td', {class: 'num', text: times((a.simplified || {}).speedup) + ' ' + ci((a.simplified || {}).ci)}),
                  el('td', {text: rt})));
    }
    sec.append(t);
    const rejected = (L.attempts || []).filter((a) => !a.accepted);
    if (rejected.length) {
      sec.append(el('h3', {text: 'Rejected attempts'}));
      const r = el('table', {}, el('tr', {}, ...['step', 'attempt', 'stage', 'reason'].map((h) => el('th', {text: h}))));
      for (const a of rejected) r.append(el('tr', {}, el('td', {text: String(a.step)}), el('td', {text: String(a.attempt)}), el('td', {text: a.stage}), el('td', {text: a.reason})));
      sec.append(r);
    }
    const cards = (L.cards && L.cards.cards) || [];
    const adm = new Map((L.admissions || []).map((a) => [a.card, a]));
    sec.append(el('h3', {text: 'Cards and their measured effect'}));
    const ct = el('table', {id: 'lineage-cards'}, el('tr', {}, ...['card', 'admitted', 'effect on the held-out task', 'reason'].map((h) => el('th', {text: h}))));
    // Cards are recorded by the path of their SKILL.md (the folder is the card's id) or by id.
    const cardId = (c) => {
      const t = typeof c === 'string' ? c : c.id || c.name || JSON.stringify(c);
      const m = /([^/]+)\/SKILL\.md$/.exec(t);
      return m ? m[1] : t;
    };
    const cardIds = cards.map(cardId);
    for (const id of new Set(cardIds.concat([...adm.keys()]))) {
      const a = adm.get(id) || {};
      const cmp = a.comparison || {};
      ct.append(el('tr', {}, el('td', {text: id}), el('td', {text: a.admitted == null ? '(not judged)' : a.admitted ? 'yes' : 'no (' + a.stage + ')'}),
                   el('td', {class: 'num', text: cmp.speedup ? times(cmp.speedup) + ' ' + ci(cmp.ci) : ''}), el('td', {text: a.reason || ''})));
    }
    sec.append(ct);
  }

  const RENDER = {tree: renderTree, progress: renderProgress, roofline: renderRoofline, timeline: renderTimeline, bench: renderBench, lineage: renderLineage};
  try {
    header();
    const main = document.getElementById('report-main');
    for (const v of VIEWS) main.append(el('section', {class: 'view', id: 'view-' + v}));
    window.addEventListener('hashchange', fromHash);
    fromHash();
    document.body.setAttribute('data-render-ms', (performance.now() - t0).toFixed(1));
    document.body.setAttribute('data-ready', '1');
  } catch (e) { reportError('report', e); }
})();
