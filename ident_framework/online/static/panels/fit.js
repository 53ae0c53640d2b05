// Sliding R² (left) and RMSE (right) per joint over the kept history, drift events marked.
import { JOINT_COLORS, axisStyle, markerPlugin } from "/static/app.js";

export function create(el, ctx) {
  const { uPlot, info } = ctx;
  const n = info.joint_names.length;
  el.innerHTML = `<div class="legend-inline">${info.joint_names.map((name, j) =>
    `<span><i class="swatch" style="background:${JOINT_COLORS[j]}"></i>${j + 1}</span>`).join("")}
    <span><i class="swatch" style="background:#fff"></i>pooled R²</span>
    <span class="note" id="fit-now"></span></div>
    <div style="display:flex;gap:8px"><div class="r2"></div><div class="rmse"></div></div>`;
  const series = (extra) => [{}, ...info.joint_names.map((_, j) => ({ stroke: JOINT_COLORS[j], width: 1.3 })), ...extra];
  const base = (label, distr) => ({
    width: 400, height: 190, legend: { show: false }, cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: false }, y: { distr } },
    axes: [{ ...axisStyle, size: 28 }, { ...axisStyle, size: 56, label, labelSize: 12 }],
    plugins: [markerPlugin(ctx, null)],
  });
  // R² on a log scale of 1 - R², upwards towards 1: 0.9, 0.99 and 0.999 are equally far apart
  // (a linear axis shows every good fit as the same line at the top)
  const r2Options = base("R² (log scale towards 1)", 3);
  r2Options.scales.y.dir = -1;
  r2Options.axes[1].values = (u, splits) => splits.map((v) => (v == null ? null : v >= 1 ? "≤ 0" : (1 - v).toFixed(Math.round(-Math.log10(v)))));
  const r2 = new uPlot({ ...r2Options, series: series([{ stroke: "#ffffff", width: 2.2 }]) },
    [[], ...Array(n + 1).fill([])], el.querySelector(".r2"));
  const lack = (v) => (v == null || Number.isNaN(v) ? null : Math.min(Math.max(1 - v, 1e-6), 1));
  const rmse = new uPlot({ ...base("RMSE [Nm]", 3), series: series([]) }, [[], ...Array(n).fill([])], el.querySelector(".rmse"));
  function resize() {
    const width = Math.max(200, el.clientWidth / 2 - 8);
    const height = Math.max(140, el.clientHeight - 40);
    r2.setSize({ width, height }); rmse.setSize({ width, height });
  }
  setTimeout(resize, 0);
  return {
    maxFps: 4, // redrawn at most 4 times a second
    resize,
    render(view) {
      const f = ctx.store.fit;
      if (!f.t.length) return;
      const x = { min: f.t[0], max: Math.max(f.t[f.t.length - 1], f.t[0] + 1) };
      const lacks = [...f.r2, f.pooled].map((a) => a.map(lack));
      let best = 1;
      for (const a of lacks) for (const v of a) if (v != null && v < best) best = v;
      const yMin = 10 ** Math.floor(Math.log10(Math.max(best, 1e-6)));
      r2.batch(() => { r2.setData([f.t, ...lacks], false); r2.setScale("x", x); r2.setScale("y", { min: yMin, max: 1 }); });
      rmse.batch(() => { rmse.setData([f.t, ...f.rmse.map((a) => a.map((v) => (v > 0 ? v : null)))], false); rmse.setScale("x", x); });
      const l = ctx.latest;
      if (l && l.pooled_r2 != null) el.querySelector("#fit-now").textContent = `now: pooled R² ${l.pooled_r2.toFixed(5)}, RMSE ${l.pooled_rmse.toFixed(3)} Nm over ${info.settings.window_s} s`;
    },
  };
}
