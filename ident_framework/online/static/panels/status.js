// Counters of the service: updates, skipped updates (target 0), samples, rate, latency, CPU.
export function create(el, ctx) {
  el.innerHTML = `<div class="stats"></div><div class="note" style="margin-top:8px" id="status-note"></div>`;
  const stats = el.querySelector(".stats");
  const items = [
    ["updates", "estimator updates"], ["skipped", "skipped updates"], ["received", "samples received"],
    ["rate", "update rate"], ["lat_pred", "latency → prediction (last 10 s)"], ["lat_upd", "latency → estimate (last 10 s)"],
    ["cpu", "estimator CPU"], ["lag", "behind the source"], ["frames", "frames dropped / skipped"],
  ];
  stats.innerHTML = items.map(([id, label]) => `<div class="stat"><div class="k">${label}</div><div class="v" id="st-${id}">–</div></div>`).join("");
  let lastUpdates = null, lastWall = null, rate = null;
  const set = (id, html, cls = "") => { const e = el.querySelector(`#st-${id}`); e.innerHTML = html; e.className = `v ${cls}`; };
  return {
    maxFps: 10, // redrawn at most 10 times a second
    render() {
      const l = ctx.latest;
      if (!l) return;
      if (l.wall_s != null && lastWall != null && l.wall_s > lastWall + 0.5) {
        rate = (l.updates - lastUpdates) / (l.wall_s - lastWall); lastUpdates = l.updates; lastWall = l.wall_s;
      } else if (lastWall == null || (l.wall_s != null && l.wall_s < lastWall)) { lastUpdates = l.updates; lastWall = l.wall_s; }
      set("updates", (l.updates ?? 0).toLocaleString());
      set("skipped", (l.skipped_updates ?? 0).toLocaleString(), l.skipped_updates ? "bad" : "good");
      set("received", (l.samples_received ?? 0).toLocaleString());
      set("rate", rate == null ? "–" : `${rate.toFixed(0)} <small>/s</small>`);
      const lat = l.latency_ms || {};
      const ms = (a, b) => `${fix(a)} <small>median</small> ${fix(b)} <small>p99 ms</small>`;
      set("lat_pred", ms(lat.prediction_median, lat.prediction_p99), lat.prediction_p99 > 2 ? "warn" : "");
      set("lat_upd", ms(lat.update_median, lat.update_p99), lat.update_p99 > 2 ? "warn" : "");
      set("cpu", l.cpu_share == null ? "–" : `${(100 * l.cpu_share).toFixed(0)} <small>% of a core</small>`);
      const dropped = (ctx.droppedFrames || 0) + (l.frames_deferred || 0);
      set("frames", `${dropped} / ${l.frames_skipped ?? 0} <small>view only</small>`);
      set("lag", l.lag_ms == null ? "–" : `${fix(l.lag_ms)} <small>ms${l.behind ? " · BEHIND: frames skipped" : ""}</small>`, l.behind ? "bad" : "");
      const f = ctx.info.filter;
      el.querySelector("#status-note").textContent =
        `causal filter: ${f.window_samples} samples, degree ${f.polyorder}, delay ${(1e3 * f.delay_s).toFixed(0)} ms (torque delayed alike) · ${estimatorText(ctx.info.settings.estimator, l)}`;
    },
  };
}
const fix = (v) => (v == null || !isFinite(v) ? "–" : v < 1 ? v.toFixed(3) : v.toFixed(2));
function estimatorText(est, l) {
  const memory = l.memory_s == null || !isFinite(l.memory_s) ? "" : `, memory ${l.memory_s.toFixed(1)} s`;
  return est.method === "sliding_ls" ? `sliding-window LS${memory}` : `rls, forgetting ${est.forgetting}${memory}`;
}
