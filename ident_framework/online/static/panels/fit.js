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
  const r2 = new uPlot({ ...base("R² (window)", 1), series: series([{ stroke: "#ffffff", width: 2.2 }]) },
    [[], ...Array(n + 1).fill([])], el.querySelector(".r2"));
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
      let low = 1;
      for (const a of f.r2) for (let i = Math.floor(a.length / 10); i < a.length; i++) if (a[i] != null && a[i] < low) low = a[i];
      const yMin = Math.max(-0.2, Math.min(0.99, low - (1 - low) * 0.15));
      r2.batch(() => { r2.setData([f.t, ...f.r2, f.pooled], false); r2.setScale("x", x); r2.setScale("y", { min: yMin, max: 1.0005 }); });
      rmse.batch(() => { rmse.setData([f.t, ...f.rmse.map((a) => a.map((v) => (v > 0 ? v : null)))], false); rmse.setScale("x", x); });
      const l = ctx.latest;
      if (l && l.pooled_r2 != null) el.querySelector("#fit-now").textContent = `now: pooled R² ${l.pooled_r2.toFixed(5)}, RMSE ${l.pooled_rmse.toFixed(3)} Nm over ${info.settings.window_s} s`;
    },
  };
}
