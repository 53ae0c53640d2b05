// The digital twin's last re-injection: when, valid or why not, its file and fit; the recent
// fits as a table (from the event history).
export function create(el, ctx) {
  el.innerHTML = `<div class="note">physically consistent fit of the recent ${ctx.info.settings.twin.window_s} s, every ${ctx.info.settings.twin.every_s ?? "–"} s</div>
    <div class="twin-big" id="twin-age">no twin yet</div><div id="twin-detail" class="note"></div>
    <table class="twins"><thead><tr><th>t [s]</th><th></th><th>RMSE [Nm]</th><th>samples</th><th>solve [s]</th></tr></thead><tbody></tbody></table>`;
  const body = el.querySelector("tbody");
  let shown = -1;
  return {
    maxFps: 4, // redrawn at most 4 times a second
    render() {
      const l = ctx.latest;
      if (!l) return;
      const twin = l.twin;
      const age = el.querySelector("#twin-age"), detail = el.querySelector("#twin-detail");
      if (!twin) { age.textContent = l.twin_pending ? "first fit running…" : "no twin yet"; detail.textContent = ""; }
      else {
        const ago = l.t != null ? l.t - twin.t : null;
        age.innerHTML = `${twin.valid ? "✔" : "✘"} updated ${ago == null ? "" : ago.toFixed(0) + " s ago"} <small class="note">(t = ${twin.t.toFixed(1)} s)</small>`;
        age.style.color = twin.valid ? "var(--good)" : "var(--bad)";
        const lines = [];
        if (twin.valid) lines.push(`file: ${twin.path.split("/").slice(-3).join("/")} · twin.xml replaced`);
        else lines.push(`not written: ${(twin.reasons || []).slice(0, 2).join("; ")}`);
        if (l.twin_pending) lines.push("next fit running…");
        detail.innerHTML = lines.join("<br>");
      }
      const events = ctx.store.events;
      if (events.length === shown) return;
      shown = events.length;
      const fits = events.filter((e) => e.kind === "twin").slice(-6).reverse();
      body.innerHTML = fits.map((e) => `<tr><td>${e.t.toFixed(1)}</td><td class="${e.valid ? "ok" : "no"}">${e.valid ? "written" : "refused"}</td>
        <td>${e.rmse == null ? "–" : e.rmse.toFixed(3)}</td><td>${e.samples ?? "–"}</td><td>${e.solve_s == null ? "–" : e.solve_s.toFixed(1)}</td></tr>`).join("");
    },
  };
}
