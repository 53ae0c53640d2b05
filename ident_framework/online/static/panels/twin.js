// The digital twin's last re-injection: when, valid or why not, its file and fit.
export function create(el, ctx) {
  el.innerHTML = `<div class="note">physically consistent fit of the recent window, every ${ctx.info.settings.twin.every_s ?? "–"} s</div>
    <div class="twin-big" id="twin-age">no twin yet</div><div id="twin-detail" class="note"></div>`;
  return {
    maxFps: 4, // redrawn at most 4 times a second
    render() {
      const l = ctx.latest;
      if (!l) return;
      const twin = l.twin;
      const age = el.querySelector("#twin-age"), detail = el.querySelector("#twin-detail");
      if (!twin) { age.textContent = l.twin_pending ? "first fit running…" : "no twin yet"; detail.textContent = ""; return; }
      const ago = l.t != null ? l.t - twin.t : null;
      age.innerHTML = `${twin.valid ? "✔" : "✘"} updated ${ago == null ? "" : ago.toFixed(0) + " s ago"} <small class="note">(t = ${twin.t.toFixed(1)} s)</small>`;
      age.style.color = twin.valid ? "var(--good)" : "var(--bad)";
      const lines = [];
      if (twin.valid) lines.push(`file: ${twin.path.split("/").slice(-3).join("/")} · twin.xml replaced`);
      else lines.push(`not written: ${(twin.reasons || []).slice(0, 2).join("; ")}`);
      if (twin.rmse != null) lines.push(`RMSE on its ${twin.samples} samples: ${twin.rmse.toFixed(3)} Nm · solved in ${twin.solve_s.toFixed(1)} s`);
      if (l.twin_pending) lines.push("next fit running…");
      detail.innerHTML = lines.join("<br>");
    },
  };
}
