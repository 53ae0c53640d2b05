// The event log, newest first; click an event to move the view there (paused).
export function create(el, ctx) {
  el.innerHTML = `<ul class="events"></ul>`;
  const list = el.querySelector("ul");
  let shown = -1;
  list.addEventListener("click", (e) => { const li = e.target.closest("li"); if (li && li.dataset.t) ctx.jump(+li.dataset.t); });
  return {
    render() {
      const events = ctx.store.events;
      if (events.length === shown) return;
      shown = events.length;
      const names = ctx.info.joint_names;
      list.innerHTML = events.slice(-200).reverse().map((e) => {
        const t = e.t == null ? "" : `${e.t.toFixed(2)} s`;
        let tag = "other", text = e.kind;
        if (e.kind === "drift") { tag = "drift"; text = `joint ${e.joint + 1} (${names[e.joint]}), σ ${e.sigma_Nm?.toFixed(3)} Nm`; }
        else if (e.kind === "response") { tag = "response"; text = e.response.replace("_", " "); }
        else if (e.kind === "twin") { tag = "twin"; text = e.valid ? `written (${e.solve_s?.toFixed(1)} s)` : `refused: ${(e.reasons || [""])[0].slice(0, 80)}`; }
        else if (e.kind === "start") text = `start: ${e.stream.source}, from ${e.initial}`;
        else if (e.kind === "end") text = `end: ${e.reason}`;
        else if (e.kind === "behind") { tag = "response"; text = `behind the source by ${e.lag_s.toFixed(2)} s: dashboard frames skipped`; }
        else if (e.kind === "caught_up") text = `caught up after ${e.behind_s.toFixed(1)} s`;
        return `<li data-t="${e.t ?? ""}"><span class="tag ${tag}">${e.kind}</span><span>${t}</span><span>${text}</span></li>`;
      }).join("");
    },
  };
}
