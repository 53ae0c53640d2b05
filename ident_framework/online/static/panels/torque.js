// Measured (as recorded) vs a-priori predicted torque per joint, over the shared time window.
// Drag horizontally to move back through the history (pauses); wheel to zoom the window.
import { axisStyle, markerPlugin, timeRange } from "/static/app.js";

export function create(el, ctx) {
  const { uPlot, info } = ctx;
  el.innerHTML = `<div class="legend-inline"><span><i class="swatch" style="background:var(--meas)"></i>measured</span>
    <span><i class="swatch" style="background:var(--pred)"></i>predicted (before the update)</span>
    <span><i class="swatch" style="background:var(--err)"></i>error (right axis, Nm)</span>
    <span><i class="swatch" style="background:#ff5c5c"></i>drift</span>
    <span><i class="swatch" style="background:#66d9e8"></i>twin update</span></div><div class="joints"></div>`;
  const box = el.querySelector(".joints");
  const plots = info.joint_names.map((name, j) => {
    const cell = document.createElement("div");
    cell.innerHTML = `<div class="joint-title"><b>${j + 1} · ${name}</b><span class="fig"></span></div><div class="plot"></div>`;
    box.appendChild(cell);
    const opts = {
      width: 300, height: 150, legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      scales: { x: { time: false }, err: { auto: false, range: [-1, 5] } },
      axes: [
        { ...axisStyle, size: 28 },
        { ...axisStyle, size: 46, label: "Nm", labelSize: 12, space: 18,
          filter: (u, splits) => splits.map((v) => (v >= u._torqueMin ? v : null)) },
        // the error keeps to the bottom band: ticks only at -e, 0, e (e its largest size)
        { ...axisStyle, scale: "err", side: 1, size: 40, grid: { show: false }, stroke: "#c77",
          splits: (u) => { const e = u.scales.err.max / 5; return [-e, 0, e]; },
          values: (u, splits) => splits.map((v) => (v === 0 ? "0" : fmtErr(v))) },
      ],
      series: [{}, { stroke: "#7fb3ff", width: 2.4 }, { stroke: "#ffa94d", width: 1.1 },
        { stroke: "rgba(255,120,120,0.85)", width: 1, scale: "err" }],
      plugins: [markerPlugin(ctx, j)],
    };
    const plot = new uPlot(opts, [[], [], [], []], cell.querySelector(".plot"));
    const area = plot.over;
    let dragX = null;
    area.addEventListener("mousedown", (e) => { dragX = e.clientX; });
    window.addEventListener("mouseup", () => { dragX = null; });
    window.addEventListener("mousemove", (e) => {
      if (dragX == null) return;
      const dx = e.clientX - dragX; dragX = e.clientX;
      ctx.pan((-dx / area.clientWidth) * ctx.view.width);
    });
    area.addEventListener("wheel", (e) => { e.preventDefault(); ctx.zoom(e.deltaY > 0 ? 1.25 : 0.8); }, { passive: false });
    return { plot, fig: cell.querySelector(".fig") };
  });

  function resize() {
    const width = Math.max(200, box.clientWidth / 2 - 12);
    const height = Math.max(110, (el.clientHeight - 70) / 3 - 20);
    for (const p of plots) p.plot.setSize({ width, height });
  }
  setTimeout(resize, 0);

  return {
    resize,
    render(view) {
      const s = ctx.store.trace;
      if (view.tEnd == null) return;
      const [lo, hi] = timeRange(s.t, view.tStart, view.tEnd);
      const step = Math.max(1, Math.floor((hi - lo) / 1500)); // at most ~1500 points per trace
      const pick = (a) => (step === 1 ? a.slice(lo, hi) : a.slice(lo, hi).filter((_, i) => i % step === 0));
      const t = pick(s.t);
      const latest = ctx.latest;
      plots.forEach((p, j) => {
        const meas = pick(s.meas[j]), pred = pick(s.pred[j]);
        const err = meas.map((v, i) => v - pred[i]);
        let e = 0;
        for (const v of err) if (Math.abs(v) > e) e = Math.abs(v);
        e = niceCeil(Math.max(e, 1e-3));
        p.plot.batch(() => {
          p.plot.setData([t, meas, pred, err], false);
          p.plot.setScale("x", { min: view.tStart, max: view.tEnd });
          const y = yRange(s.meas[j], s.pred[j], lo, hi);
          p.plot._torqueMin = y.dataMin;
          p.plot.setScale("y", y);
          p.plot.setScale("err", { min: -e, max: 5 * e });
        });
        if (latest && latest.r2) {
          const r2 = latest.r2[j], rmse = latest.rmse[j];
          p.fig.textContent = `R² ${r2 == null ? "–" : r2.toFixed(4)} · RMSE ${rmse == null ? "–" : rmse.toFixed(3)} Nm`;
        }
      });
    },
  };
}

function yRange(a, b, lo, hi) {
  let min = Infinity, max = -Infinity;
  for (let i = lo; i < hi; i++) {
    const x = a[i], y = b[i];
    if (x < min) min = x; if (x > max) max = x; if (y < min) min = y; if (y > max) max = y;
  }
  if (!isFinite(min)) return { min: -1, max: 1, dataMin: -1 };
  const pad = Math.max((max - min) * 0.08, 0.05);
  // room below the torque for the error band (the bottom third)
  return { min: min - pad - 0.5 * (max - min + 2 * pad), max: max + pad, dataMin: min - pad };
}

// 1, 2 or 5 times a power of ten, >= v
function niceCeil(v) {
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}
const fmtErr = (v) => (Math.abs(v) >= 1 ? v.toFixed(0) : Math.abs(v) >= 0.1 ? v.toFixed(1) : v.toFixed(2));
