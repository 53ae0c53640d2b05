// The change detector per joint: CUSUM statistic as a share of the alarm threshold, and the
// residual's running sigma it is measured in.
export function create(el, ctx) {
  const d = ctx.info.settings.drift;
  el.innerHTML = `<div class="note" style="margin-bottom:6px">alarm when the bar is full: h = ${d.threshold_sigma} σ, allowance k = ${d.allowance_sigma} σ; response: ${d.response.replace("_", " ")}</div><div class="bars"></div>`;
  const bars = el.querySelector(".bars");
  bars.innerHTML = ctx.info.joint_names.map((name, j) => `<span>${j + 1} · ${name.replace("_joint", "")}</span><div class="bar"><div id="dr-${j}"></div></div><span class="note" id="ds-${j}"></span>`).join("");
  return {
    maxFps: 10, // redrawn at most 10 times a second
    render() {
      const l = ctx.latest;
      if (!l || !l.drift_statistic) return;
      l.drift_statistic.forEach((s, j) => {
        const bar = el.querySelector(`#dr-${j}`);
        bar.style.width = `${Math.min(100, 100 * s).toFixed(1)}%`;
        bar.style.background = s > 0.6 ? "var(--bad)" : s > 0.25 ? "var(--warn)" : "var(--good)";
        const sigma = l.residual_sigma[j];
        el.querySelector(`#ds-${j}`).textContent = sigma == null ? "" : `σ ${sigma.toFixed(3)}`;
      });
    },
  };
}
