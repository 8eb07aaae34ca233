// nkirun HTML profile: draws the JSON data element of the page (nkirun/show/profile_data.py).
// No network, no library: canvas for the timeline and charts, tables for the rest. Only what is
// on screen is drawn (bars narrower than a pixel merge), so 100,000 instructions stay responsive.
"use strict";
const D = JSON.parse(document.getElementById("data").textContent);
const P = D.profiles;
const body = document.body;
const errors = [];
window.addEventListener("error", e => { errors.push(String(e.message)); body.dataset.errors = errors.join(" | "); });
const $ = (sel, root) => (root || document).querySelector(sel);
const el = (tag, attrs, ...kids) => {
  const n = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") n.className = v; else if (k === "style") n.style.cssText = v; else n.setAttribute(k, v);
  }
  for (const k of kids) n.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return n;
};
const fmtNs = ns => ns >= 1e6 ? (ns / 1e6).toFixed(3) + " ms" : ns >= 1e3 ? (ns / 1e3).toFixed(2) + " µs" : ns.toFixed(1) + " ns";
const fmtB = b => b >= 1 << 20 ? (b / (1 << 20)).toFixed(2) + " MiB" : b >= 1024 ? (b / 1024).toFixed(1) + " KiB" : b + " B";
const pct = x => (100 * x).toFixed(1) + "%";
const PALETTE = ["#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f",
  "#ff9da7", "#86bcb6", "#8cd17d", "#a0cbe8", "#d4a6c8", "#fabfd2", "#b6992d", "#499894", "#79706e"];
const opOrdinal = new Map();  // string-table index of an op -> its colour, in order of first use
const opColor = i => { if (!opOrdinal.has(i)) opOrdinal.set(i, opOrdinal.size); return PALETTE[opOrdinal.get(i) % PALETTE.length]; };

function table(headers, rows, numeric) {
  const t = el("table", {}, el("tr", {}, ...headers.map((h, i) => el("th", { class: numeric[i] ? "n" : "" }, h))));
  for (const r of rows) t.append(el("tr", {}, ...r.map((c, i) => el("td", { class: numeric[i] ? "n" : "" }, c))));
  return t;
}

// ---- summary ----------------------------------------------------------------------------
function renderSummary(sec) {
  for (const p of P) {
    const s = p.summary, v = p.verdict;
    if (P.length > 1) sec.append(el("h3", {}, p.title));
    sec.append(el("div", { class: "cards" },
      el("div", { class: "card" }, el("b", {}, fmtNs(s.total_ns)), el("span", {}, "makespan")),
      el("div", { class: "card" }, el("b", {}, s.instruction_count.toLocaleString()), el("span", {}, "instructions")),
      el("div", { class: "card" }, el("b", {}, v.latency_bound ? "latency-bound" : (v.bottleneck || "-")), el("span", {}, v.latency_bound ? "verdict" : "bottleneck engine")),
      el("div", { class: "card" }, el("b", {}, pct(v.critical_wait_share)), el("span", {}, "critical path waiting")),
      el("div", { class: "card" }, el("b", {}, pct(v.assumed_share)), el("span", {}, "engine time on assumed formulas"))));
    sec.append(el("p", {}, v.words));
    const rows = Object.entries(s.engines).filter(([, e]) => e.instructions).map(([n, e]) => [
      n, e.instructions.toLocaleString(), fmtNs(e.busy_ns), el("span", {}, el("span", { class: "bar", style: `width:${Math.round(120 * e.utilization)}px` }), " " + pct(e.utilization))]);
    sec.append(table(["engine", "instructions", "busy", "utilisation"], rows, [0, 1, 1, 0]));
    if (s.notes && s.notes.length) sec.append(el("ul", { class: "note" }, ...s.notes.map(n => el("li", {}, n))));
    sec.append(el("details", { class: "note" }, el("summary", {}, "model assumptions"), el("ul", {}, ...s.assumptions.map(a => el("li", {}, a)))));
  }
}

// ---- timeline ---------------------------------------------------------------------------
const LANE_H = 22, LABEL_W = 170, TOP = 24;
function buildLanes() {
  let y = TOP, out = [];
  P.forEach((p, pi) => {
    const c = p.timeline.columns, n = c.start.length;
    const lanes = p.timeline.lanes.map(l => ({ name: l.name, items: [], maxDur: 0 }));
    const push = (k, i) => { const L = lanes[k]; L.items.push(i); L.maxDur = Math.max(L.maxDur, c.end[i] - c.start[i]); };
    const pos = new Map();
    for (let i = 0; i < n; i++) { push(c.lane[i], i); pos.set(c.index[i], i); }
    for (const [idx, extra] of Object.entries(p.timeline.extra_lanes)) for (const k of extra) push(k, pos.get(+idx));
    for (const L of lanes) {
      L.items.sort((a, b) => c.start[a] - c.start[b]);
      // overlapping bars (DMA transfers share their queues) go to the first free sub-row, up to 4
      const free = []; L.sub = new Map();
      for (const i of L.items) {
        let k = free.findIndex(t => t <= c.start[i]);
        if (k < 0) k = free.length < 4 ? free.length : free.indexOf(Math.min(...free));
        free[k] = Math.max(free[k] || 0, c.end[i]); L.sub.set(i, k);
      }
      L.subs = Math.max(1, free.length);
    }
    p._pos = pos; p._crit = new Set(p.timeline.critical);
    if (P.length > 1) { out.push({ header: p.title, y }); y += 18; }
    p._laneRows = lanes.map(L => { const r = { p, pi, lane: L, y }; out.push(r); y += LANE_H; return r; });
    y += 10;
  });
  return { rows: out, height: y + 10 };
}
function renderTimeline(sec) {
  const total = Math.max(...P.map(p => p.summary.total_ns), 1);
  const { rows, height } = buildLanes();
  const tools = el("div", { class: "toolbar" }, "wheel: zoom · drag: pan · double-click: whole schedule · click a bar: its source line ",
    el("label", {}, el("input", { type: "checkbox", id: "crit", checked: "" }), " critical path"),
    el("label", {}, el("input", { type: "checkbox", id: "arrows" }), " all 'waited for' arrows on screen"));
  const wrap = el("div", { id: "tl-wrap" }), cv = el("canvas", { id: "tl" });
  wrap.append(cv); sec.append(tools, wrap);
  const legend = el("div", { class: "legend" });
  for (const p of P) p.timeline.strings.forEach((s, i) => {
    if (p.timeline.columns.op.includes(i) && !legend.querySelector(`[data-op="${CSS.escape(s)}"]`))
      legend.append(el("span", { "data-op": s }, el("i", { style: `background:${opColor(i)}` }), s));
  });
  sec.append(legend, el("p", { class: "note" }, "Bars are instructions on their engine or DMA queue group; red outlines mark the critical path (the chain whose ends set the next start up to the makespan). Hover for the source line, cycles formula and why it waited."));
  const view = { t0: 0, t1: total * 1.02 };
  let hover = null;
  const tip = $("#tip");
  function x(t, w) { return LABEL_W + (t - view.t0) / (view.t1 - view.t0) * (w - LABEL_W); }
  function draw() {
    const dpr = window.devicePixelRatio || 1, w = wrap.clientWidth || 1200;
    cv.width = w * dpr; cv.height = height * dpr; cv.style.height = height + "px";
    const g = cv.getContext("2d"); g.scale(dpr, dpr); g.clearRect(0, 0, w, height);
    g.font = "12px system-ui, sans-serif"; g.textBaseline = "middle";
    // time axis
    g.fillStyle = "#5b6474"; g.strokeStyle = "#dde2ea";
    const span = view.t1 - view.t0, step = Math.pow(10, Math.floor(Math.log10(span / 6)));
    const tick = [1, 2, 5, 10].map(m => m * step).find(s => span / s <= 8) || step * 10;
    for (let t = Math.ceil(view.t0 / tick) * tick; t <= view.t1; t += tick) {
      const px = x(t, w); g.beginPath(); g.moveTo(px, TOP - 4); g.lineTo(px, height); g.stroke();
      g.fillText(fmtNs(t), px + 2, 10);
    }
    let drawn = 0;
    const crit = $("#crit").checked;
    for (const r of rows) {
      if (r.header) { g.fillStyle = "#1d2330"; g.font = "bold 12px system-ui"; g.fillText(r.header, 4, r.y + 8); g.font = "12px system-ui, sans-serif"; continue; }
      const c = r.p.timeline.columns, items = r.lane.items;
      g.fillStyle = "#1d2330"; g.fillText(r.lane.name, 4, r.y + LANE_H / 2);
      let lo = 0, hi = items.length;
      const from = view.t0 - r.lane.maxDur;
      while (lo < hi) { const m = (lo + hi) >> 1; if (c.start[items[m]] < from) lo = m + 1; else hi = m; }
      let lastPx = -1;
      for (let k = lo; k < items.length; k++) {
        const i = items[k];
        if (c.start[i] > view.t1) break;
        if (c.end[i] < view.t0) continue;
        const x0 = x(c.start[i], w), x1 = x(c.end[i], w), bw = Math.max(1, x1 - x0);
        if (x1 - x0 < 1 && Math.floor(x0) === lastPx) continue;  // merged into the pixel drawn
        lastPx = Math.floor(x0);
        const hh = (LANE_H - 6) / r.lane.subs, yy = r.y + 3 + hh * r.lane.sub.get(i), xx = Math.max(LABEL_W, x0);
        g.fillStyle = opColor(c.op[i]);
        g.fillRect(xx, yy, Math.min(bw, w - xx), Math.max(1, hh - 1));
        if (crit && r.p._crit.has(c.index[i])) { g.strokeStyle = "#d62d2d"; g.lineWidth = 1.5; g.strokeRect(xx, yy, bw, Math.max(1, hh - 1)); }
        drawn++;
      }
    }
    body.dataset.bars = drawn;
    const edges = [];
    if (hover) edges.push(hover);
    if ($("#arrows").checked && drawn < 3000) for (const r of rows) if (!r.header) for (const i of r.lane.items) edges.push({ p: r.p, i });
    for (const h of edges) arrow(g, h, w);
  }
  const rowOf = (p, i) => p._laneRows[p.timeline.columns.lane[i]];
  function arrow(g, h, w) {
    const c = h.p.timeline.columns, from = c.waited_on[h.i];
    if (from < 0 || !h.p._pos.has(from)) return;
    const j = h.p._pos.get(from), ra = rowOf(h.p, j), rb = rowOf(h.p, h.i);
    const ax = x(c.end[j], w), ay = ra.y + LANE_H / 2, bx = x(c.start[h.i], w), by = rb.y + LANE_H / 2;
    g.strokeStyle = "#1d2330"; g.lineWidth = 1.2; g.beginPath(); g.moveTo(ax, ay);
    g.bezierCurveTo(ax + 20, ay, bx - 20, by, bx, by); g.stroke();
    g.beginPath(); g.moveTo(bx, by); g.lineTo(bx - 6, by - 4); g.lineTo(bx - 6, by + 4); g.fill();
  }
  function hit(ev) {
    const rect = cv.getBoundingClientRect(), mx = ev.clientX - rect.left, my = ev.clientY - rect.top;
    const r = rows.find(r => !r.header && my >= r.y && my < r.y + LANE_H);
    if (!r || mx < LABEL_W) return null;
    const w = wrap.clientWidth, t = view.t0 + (mx - LABEL_W) / (w - LABEL_W) * (view.t1 - view.t0);
    const c = r.p.timeline.columns, slack = (view.t1 - view.t0) / (w - LABEL_W) * 2;
    let best = null;
    for (const i of r.lane.items) {
      if (c.start[i] - slack <= t && t <= c.end[i] + slack) { best = i; if (c.start[i] <= t && t <= c.end[i]) break; }
      if (c.start[i] > t + slack) break;
    }
    return best === null ? null : { p: r.p, i: best };
  }
  let drag = null;
  cv.addEventListener("mousedown", ev => { drag = { x: ev.clientX, t0: view.t0, t1: view.t1, moved: false }; });
  window.addEventListener("mouseup", ev => {
    if (drag && !drag.moved) { const h = hit(ev); if (h) showSource(h.p, h.p.timeline.columns.line[h.i]); }
    drag = null;
  });
  cv.addEventListener("mousemove", ev => {
    if (drag) {
      const dx = ev.clientX - drag.x; if (Math.abs(dx) > 2) drag.moved = true;
      const dt = dx / (wrap.clientWidth - LABEL_W) * (drag.t1 - drag.t0);
      view.t0 = drag.t0 - dt; view.t1 = drag.t1 - dt; draw(); return;
    }
    const h = hit(ev); hover = h; draw();
    if (!h) { tip.style.display = "none"; return; }
    tip.textContent = describe(h.p, h.i); tip.style.display = "block";
    tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 580) + "px"; tip.style.top = ev.clientY + 14 + "px";
  });
  cv.addEventListener("mouseleave", () => { tip.style.display = "none"; hover = null; draw(); });
  cv.addEventListener("wheel", ev => {
    ev.preventDefault();
    const rect = cv.getBoundingClientRect(), w = wrap.clientWidth;
    const f = Math.max(0, ev.clientX - rect.left - LABEL_W) / (w - LABEL_W), t = view.t0 + f * (view.t1 - view.t0);
    const k = ev.deltaY > 0 ? 1.25 : 0.8, span = Math.max(1, (view.t1 - view.t0) * k);
    view.t0 = t - f * span; view.t1 = view.t0 + span; draw();
  }, { passive: false });
  cv.addEventListener("dblclick", () => { view.t0 = 0; view.t1 = total * 1.02; draw(); });
  $("#crit").addEventListener("change", draw); $("#arrows").addEventListener("change", draw);
  window.addEventListener("resize", draw);
  return draw;
}
function describe(p, i) {
  const c = p.timeline.columns, S = p.timeline.strings, lane = p.timeline.lanes[c.lane[i]];
  const src = p.source.lines[c.line[i] - 1];
  const kind = S[c.wait_kind[i]], from = c.waited_on[i], tensor = c.wait_tensor[i] >= 0 ? S[c.wait_tensor[i]] : null;
  const why = { ready: "ready at start", data: `data from #${from}` + (tensor ? ` (tensor ${tensor})` : ""),
    war: `#${from} still reading ${tensor}`, waw: `#${from} writes ${tensor} first`, engine: `engine busy (#${from})`,
    dma_queue: `DMA queue busy (#${from})`, recompute: `recomputes #${from}: elided` }[kind] || `${kind} (#${from})`;
  return `#${c.index[i]} ${S[c.op[i]]} on ${lane.name}\nline ${c.line[i]}` + (src !== undefined ? `: ${src.trim()}` : "") +
    `\n${fmtNs(c.start[i])} → ${fmtNs(c.end[i])} (${fmtNs(c.end[i] - c.start[i])}; ${c.cycles[i].toLocaleString()} ${lane.unit})` +
    `\nformula: ${S[c.formula[i]]}${c.assumed[i] ? " (assumed: no documented formula)" : ""}\nwaited for: ${why}` +
    (p._crit.has(c.index[i]) ? "\non the critical path" : "");
}

// ---- source -----------------------------------------------------------------------------
function renderSource(sec) {
  P.forEach((p, pi) => {
    const s = p.source, per = s.per_line;
    if (P.length > 1) sec.append(el("h3", {}, p.title));
    const hot = Object.entries(per).map(([ln, v]) => [+ln, v]).filter(([ln]) => ln > 0).sort((a, b) => b[1].ns - a[1].ns || a[0] - b[0]);
    if (pi === 0) body.dataset.hottestLine = hot.length ? hot[0][0] : 0;
    sec.append(el("p", { class: "note" }, `${s.path}: engine time of the instructions recorded at each line, summed over loop iterations (instructions that overlap in time add up).`));
    sec.append(table(["line", "time", "share", "instructions", "text"], hot.slice(0, 15).map(([ln, v]) => [
      el("a", { href: "#", "data-line": ln }, ln), fmtNs(v.ns), pct(v.share), v.count.toLocaleString(), (s.lines[ln - 1] || "").trim().slice(0, 100)]), [1, 1, 1, 1, 0]));
    sec.querySelectorAll("a[data-line]").forEach(a => a.addEventListener("click", ev => { ev.preventDefault(); showSource(p, +a.dataset.line); }));
    const maxNs = hot.length ? hot[0][1].ns : 1, pre = el("pre", { class: "src", id: `src-${pi}` });
    s.lines.forEach((text, k) => {
      const v = per[k + 1];
      pre.append(el("div", { class: "srcline", id: `L${pi}-${k + 1}` }, el("span", { class: "ln" }, k + 1),
        el("span", { class: "heat" }, v ? el("i", { style: `width:${Math.max(1, Math.round(110 * v.ns / maxNs))}px` }) : ""),
        el("span", { class: "t" }, v ? fmtNs(v.ns) : ""), el("code", {}, text)));
    });
    if (s.truncated) pre.append(el("div", { class: "muted" }, "... (source truncated)"));
    if (!s.lines.length || (s.lines.length === 1 && !s.lines[0])) sec.append(el("p", { class: "muted" }, "(no source text available)"));
    sec.append(pre);
  });
}
function showSource(p, line) {
  select("source");
  const pi = P.indexOf(p), row = document.getElementById(`L${pi}-${line}`);
  document.querySelectorAll(".srcline.sel").forEach(n => n.classList.remove("sel"));
  if (row) { row.classList.add("sel"); row.scrollIntoView({ block: "center" }); }
}

// ---- memory -----------------------------------------------------------------------------
function stepChart(series, capacity, total, label) {
  const cv = el("canvas", { class: "chart" }), H = 160;
  requestAnimationFrame(() => {
    const w = cv.clientWidth || 1000, dpr = window.devicePixelRatio || 1;
    cv.width = w * dpr; cv.height = H * dpr; cv.style.height = H + "px";
    const g = cv.getContext("2d"); g.scale(dpr, dpr);
    const peak = Math.max(...series.map(s => s[1]), 1), top = capacity <= 1.5 * peak ? Math.max(capacity, peak) * 1.05 : peak * 1.15, X = t => 50 + t / (total || 1) * (w - 60), Y = b => H - 20 - b / top * (H - 30);
    g.font = "11px system-ui"; g.fillStyle = "#5b6474"; g.fillText(label, 52, 10);
    if (capacity <= top) {
      g.strokeStyle = "#d62d2d"; g.setLineDash([4, 3]); g.beginPath(); g.moveTo(50, Y(capacity)); g.lineTo(w - 10, Y(capacity)); g.stroke(); g.setLineDash([]);
      g.fillText("capacity " + fmtB(capacity), w - 140, Y(capacity) - 4);
    } else g.fillText(`capacity ${fmtB(capacity)} (${(100 * peak / capacity).toFixed(1)}% used at the peak; scale: the peak)`, w - 420, 10);
    g.fillText(fmtB(peak), 4, Y(peak) + 4);
    g.fillStyle = "rgba(47,111,222,0.35)"; g.strokeStyle = "#2f6fde"; g.beginPath(); g.moveTo(X(0), Y(0));
    let prev = 0;
    for (const [t, b] of series) { g.lineTo(X(t), Y(prev)); g.lineTo(X(t), Y(b)); prev = b; }
    g.lineTo(X(total), Y(prev)); g.lineTo(X(total), Y(0)); g.closePath(); g.fill(); g.stroke();
    g.fillStyle = "#5b6474"; g.fillText(fmtNs(0), 50, H - 5); g.fillText(fmtNs(total), w - 70, H - 5);
  });
  return cv;
}
function renderMemory(sec) {
  for (const p of P) {
    const m = p.memory, total = p.summary.total_ns;
    if (P.length > 1) sec.append(el("h3", {}, p.title));
    for (const buf of ["sbuf", "psum"]) {
      const pk = m.peaks[buf];
      sec.append(el("h4", {}, `${buf.toUpperCase()}: peak ${fmtB(pk.bytes)} of ${fmtB(m.capacity[buf])} at ${fmtNs(pk.t)}`));
      sec.append(stepChart(m.series[buf], m.capacity[buf], total, `live ${buf.toUpperCase()} bytes (all partitions)`));
      if (pk.tiles.length) sec.append(el("details", {}, el("summary", {}, `tiles live at the peak (${pk.tiles_total})`),
        table(["tile", "shape", "dtype", "bytes", "first used at line"], pk.tiles.map(t => [t.name, `[${t.shape.join(", ")}]`, t.dtype, fmtB(t.bytes), t.line]), [0, 0, 0, 1, 1])));
    }
    if (m.psum_banks.length) {
      sec.append(el("h4", {}, `PSUM by bank (${m.bank_count} banks)`), el("p", { class: "note" }, "Each PSUM tile is drawn on the first banks free at its first use: nkirun's picture, not the compiler's allocation."));
      const cv = el("canvas", { class: "chart" }), H = 24 + 16 * m.bank_count;
      requestAnimationFrame(() => {
        const w = cv.clientWidth || 1000, dpr = window.devicePixelRatio || 1;
        cv.width = w * dpr; cv.height = H * dpr; cv.style.height = H + "px";
        const g = cv.getContext("2d"); g.scale(dpr, dpr); g.font = "11px system-ui";
        const X = t => 60 + t / (total || 1) * (w - 70);
        for (let b = 0; b < m.bank_count; b++) { g.fillStyle = "#5b6474"; g.fillText("bank " + b, 4, 20 + 16 * b); }
        m.psum_banks.forEach((t, k) => { g.fillStyle = opColor(k); g.fillRect(X(t.start), 10 + 16 * t.bank, Math.max(1, X(t.end) - X(t.start)), 16 * t.banks - 2); });
      });
      sec.append(cv);
    }
  }
}

// ---- DMA --------------------------------------------------------------------------------
function renderDma(sec) {
  for (const p of P) {
    const d = p.dma;
    if (P.length > 1) sec.append(el("h3", {}, p.title));
    const bytes = d.rows.reduce((a, r) => a + r.bytes, 0), total = p.summary.total_ns;
    sec.append(el("div", { class: "cards" },
      el("div", { class: "card" }, el("b", {}, d.rows.length.toLocaleString()), el("span", {}, "transfers")),
      el("div", { class: "card" }, el("b", {}, fmtB(bytes)), el("span", {}, "bytes moved")),
      el("div", { class: "card" }, el("b", {}, total ? (bytes / total).toFixed(1) + " GB/s" : "-"), el("span", {}, "over the makespan")),
      el("div", { class: "card" }, el("b", {}, d.peak_gbps ? d.peak_gbps.toFixed(0) + " GB/s" : "-"), el("span", {}, "HBM peak (roofline)"))));
    sec.append(table(["queue group", "transfers", "bytes", "busy"], d.queues.map(q => [q.queue, q.transfers, fmtB(q.bytes), fmtNs(q.ns)]), [0, 1, 1, 1]));
    const top = [...d.rows].sort((a, b) => b.bytes - a.bytes).slice(0, 200);
    sec.append(el("h4", {}, "largest transfers"), table(["#", "op", "line", "queue", "bytes", "descriptor", "time", "achieved", "of peak"],
      top.map(r => [r.index, r.op, r.line, r.queue, fmtB(r.bytes), r.descriptor_bytes ? fmtB(r.descriptor_bytes) : "-", fmtNs(r.ns), r.gbps.toFixed(1) + " GB/s",
        d.peak_gbps ? el("span", {}, el("span", { class: "bar", style: `width:${Math.round(Math.min(1, r.gbps / d.peak_gbps) * 80)}px` }), " " + pct(r.gbps / d.peak_gbps)) : "-"]),
      [1, 0, 1, 0, 1, 1, 1, 1, 0]));
  }
}

// ---- precision --------------------------------------------------------------------------
function renderPrecision(sec) {
  const rows = P[0].precision;
  const num = x => x === null || x === undefined ? "-" : typeof x === "string" ? x : x === 0 ? "0" : x.toExponential(2);
  sec.append(el("p", { class: "note" }, "From run --shadow: each instruction's error against a float32 shadow run (carried: what its output holds; added: what it added itself)."));
  const ranked = [...rows].filter(r => r.added_max_abs_error).sort((a, b) => (+b.added_max_abs_error || 0) - (+a.added_max_abs_error || 0));
  body.dataset.precisionRows = ranked.length;
  body.dataset.heatmaps = (P[0].heatmaps || []).length;
  sec.append(table(["#", "op", "line", "max abs", "max rel", "added abs", "added rel", "overflow", "NaN born"],
    (ranked.length ? ranked : rows).slice(0, 300).map(r => [r.instruction, r.op, r.line, num(r.max_abs_error), num(r.max_rel_error),
      num(r.added_max_abs_error), num(r.added_max_rel_error), r.overflow, r.nan_born]), [1, 0, 1, 1, 1, 1, 1, 1, 1]));
  for (const hm of P[0].heatmaps || []) {
    const [h, w] = hm.shape, cv = el("canvas", { class: "heatmap", width: w, height: h, style: `width:${Math.min(1000, w * Math.max(1, Math.floor(600 / w)))}px` });
    const g = cv.getContext("2d"), img = g.createImageData(w, h), lo = hm.lo, hi = hm.hi;
    // blank: exact; pale to dark red: the smallest to the largest error (log scale)
    hm.values.forEach((v, k) => { const f = v === null ? -1 : hi > lo ? (v - lo) / (hi - lo) : 1;
      img.data.set(f < 0 ? [255, 255, 255, 255] : [255 - Math.round(90 * f), Math.round(200 * (1 - f)), Math.round(200 * (1 - f)), 255], 4 * k); });
    g.putImageData(img, 0, 0);
    sec.append(el("h4", {}, `${hm.name}: |error| against the shadow, max ${num(hm.max_abs_error)} (log10 colour scale ${hm.lo} .. ${hm.hi}; ${hm.note}; blank: exact)`), cv);
  }
}

// ---- navigation -------------------------------------------------------------------------
const VIEWS = [["summary", "Summary", renderSummary], ["timeline", "Timeline", renderTimeline], ["source", "Source", renderSource],
  ["memory", "Memory", renderMemory], ["dma", "DMA", renderDma]];
if (P[0].precision.length) VIEWS.push(["precision", "Precision", renderPrecision]);
const redraw = {};
function select(name) {
  document.querySelectorAll("nav a").forEach(a => a.classList.toggle("on", a.dataset.view === name));
  document.querySelectorAll("section").forEach(s => s.classList.toggle("on", s.id === name));
  if (redraw[name]) redraw[name]();
  body.dataset.view = name;
}
(function main() {
  $("h1").textContent = P.map(p => p.title).join("  vs  ");
  $(".verdict").textContent = P.map(p => `${p.summary.target}: ${fmtNs(p.summary.total_ns)}, ${p.verdict.words}`).join("  |  ");
  const nav = $("nav"), mainEl = $("main");
  for (const [id, label, render] of VIEWS) {
    const a = el("a", { href: "#view=" + id, "data-view": id }, label);
    a.addEventListener("click", ev => { ev.preventDefault(); history.replaceState(null, "", "#view=" + id); select(id); });
    nav.append(a);
    const sec = el("section", { id });
    mainEl.append(sec);
    const r = render(sec); if (typeof r === "function") redraw[id] = r;
  }
  body.dataset.instructions = P.reduce((a, p) => a + p.timeline.columns.start.length, 0);
  const want = location.hash.replace(/^#(view=)?/, "");
  select(VIEWS.some(v => v[0] === want) ? want : "timeline");
  if (redraw.timeline && body.dataset.view !== "timeline") redraw.timeline();  // count bars once
  body.dataset.rendered = "1";
})();
