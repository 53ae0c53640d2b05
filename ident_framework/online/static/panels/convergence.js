// Parameter convergence: how far the base parameters were from their current estimate,
// |θ_i(t) − θ_i(now)| / scale_i (scale: |θ_i(now)|, at least 1 % of the largest), median and
// 90th percentile over the parameters, on a log axis; it falls as the estimate settles and
// jumps when the robot changes.
import { axisStyle, markerPlugin } from "/static/app.js";

export function create(el, ctx) {
  const { uPlot } = ctx;
  el.innerHTML = `<div class="legend-inline"><span><i class="swatch" style="background:#ffffff"></i>median over parameters</span>
    <span><i class="swatch" style="background:#b197fc"></i>90th percentile</span><span class="note" id="conv-note"></span></div><div class="plot"></div>`;
  const plot = new uPlot({
    width: 600, height: 190, legend: { show: false }, cursor: { drag: { x: false, y: false }, points: { show: false } },
    scales: { x: { time: false }, y: { distr: 3 } },
    axes: [{ ...axisStyle, size: 28 }, { ...axisStyle, size: 56, label: "|Δθ| / |θ now|", labelSize: 12 }],
    series: [{}, { stroke: "#ffffff", width: 2, points: { show: false } }, { stroke: "#b197fc", width: 1.3, points: { show: false } }],
    plugins: [markerPlugin(ctx, null)],
  }, [[], [], []], el.querySelector(".plot"));
  function resize() { plot.setSize({ width: Math.max(300, el.clientWidth - 4), height: Math.max(140, el.clientHeight - 40) }); }
  setTimeout(resize, 0);
  return {
    maxFps: 4, // redrawn at most 4 times a second
    resize,
    render() {
      const th = ctx.store.theta;
      const m = th.t.length;
      if (m < 2) return;
      const now = th.values[m - 1];
      const largest = Math.max(...now.map(Math.abs), 1e-300);
      const scale = now.map((v) => Math.max(Math.abs(v), 0.01 * largest));
      const step = Math.max(1, Math.floor(m / 800));
      const t = [], med = [], p90 = [];
      for (let i = 0; i < m - 1; i += step) {
        const d = th.values[i].map((v, k) => Math.abs(v - now[k]) / scale[k]).sort((a, b) => a - b);
        t.push(th.t[i]); med.push(Math.max(d[Math.floor(d.length / 2)], 1e-6)); p90.push(Math.max(d[Math.floor(d.length * 0.9)], 1e-6));
      }
      plot.batch(() => { plot.setData([t, med, p90], false); plot.setScale("x", { min: th.t[0], max: th.t[m - 1] }); });
      el.querySelector("#conv-note").textContent = `${now.length} base parameters; 10 s ago: median ${fmt(atAge(th, now, scale, 10))}`;
    },
  };
}

function atAge(th, now, scale, seconds) {
  const target = th.t[th.t.length - 1] - seconds;
  let i = th.t.findIndex((t) => t >= target);
  if (i < 0) i = 0;
  const d = th.values[i].map((v, k) => Math.abs(v - now[k]) / scale[k]).sort((a, b) => a - b);
  return d[Math.floor(d.length / 2)];
}
const fmt = (v) => (v == null ? "–" : v < 1e-3 ? v.toExponential(1) : (100 * v).toFixed(2) + " %");
