// The dashboard's core: panel registry, shared history store, view (live / paused), SSE link.
// Panels are ES modules listed by GET /api/panels (ident_framework/online/panels.py); each
// exports create(element, ctx) -> { render(view) } and reads ctx.store / ctx.latest.
import uPlot from "/static/vendor/uplot/uPlot.esm.js";

const $ = (id) => document.getElementById(id);
export const JOINT_COLORS = ["#7fb3ff", "#ffa94d", "#3ddc84", "#f783ac", "#b197fc", "#66d9e8"];

class Store {
  // Columns of the kept past; trimmed to `cap` points (amortised: 10 % at a time).
  constructor(cap, n, r) { this.cap = cap; this.n = n; this.r = r; this.clear(); }
  clear() {
    const n = this.n;
    this.trace = { t: [], meas: [...Array(n)].map(() => []), pred: [...Array(n)].map(() => []) };
    this.fit = { t: [], r2: [...Array(n)].map(() => []), rmse: [...Array(n)].map(() => []), pooled: [] };
    this.theta = { t: [], values: [] };
    this.events = [];
  }
  static trim(obj, cap) {
    if (obj.t.length <= cap * 1.1) return;
    const k = obj.t.length - cap;
    for (const key of Object.keys(obj)) {
      const v = obj[key];
      if (!Array.isArray(v)) continue;
      if (v.length && Array.isArray(v[0])) v.forEach((a) => a.splice(0, k)); else v.splice(0, k);
    }
  }
  addTrace(tr) {
    if (!tr || !tr.t.length) return;
    const s = this.trace;
    const last = s.t.length ? s.t[s.t.length - 1] : -Infinity;
    for (let i = 0; i < tr.t.length; i++) {
      if (tr.t[i] <= last) continue;
      s.t.push(tr.t[i]);
      for (let j = 0; j < this.n; j++) { s.meas[j].push(tr.tau_meas[j][i]); s.pred[j].push(tr.tau_pred[j][i]); }
    }
    Store.trim(s, this.cap);
  }
  addFit(f) {
    if (f.t == null) return;
    const s = this.fit;
    if (s.t.length && f.t <= s.t[s.t.length - 1]) return;
    s.t.push(f.t);
    for (let j = 0; j < this.n; j++) { s.r2[j].push(f.r2[j]); s.rmse[j].push(f.rmse[j]); }
    s.pooled.push(f.pooled_r2);
    Store.trim(s, this.cap);
  }
  addTheta(t, values) {
    if (t == null || !values) return;
    const s = this.theta;
    if (s.t.length && t <= s.t[s.t.length - 1]) return;
    s.t.push(t); s.values.push(values);
    if (s.t.length > 5000) { s.t.splice(0, 500); s.values.splice(0, 500); }
  }
  setHistory(h) {
    this.clear();
    this.addTrace(h.trace);
    const f = h.fit;
    for (let i = 0; i < f.t.length; i++) {
      this.addFit({ t: f.t[i], r2: f.r2.map((a) => a[i]), rmse: f.rmse.map((a) => a[i]), pooled_r2: f.pooled_r2[i] });
    }
    const th = h.theta;
    for (let i = 0; i < th.t.length; i++) this.addTheta(th.t[i], th.values.map((a) => a[i]));
    this.events = h.events.slice(-2000);
  }
}

// Index range [lo, hi) of sorted `t` within [a, b].
export function timeRange(t, a, b) {
  let lo = 0, hi = t.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (t[m] < a) lo = m + 1; else hi = m; }
  let lo2 = lo, hi2 = t.length;
  while (lo2 < hi2) { const m = (lo2 + hi2) >> 1; if (t[m] <= b) lo2 = m + 1; else hi2 = m; }
  return [lo, lo2];
}

// Draws drift events (red) and twin updates (blue) as vertical lines on a uPlot chart.
export function markerPlugin(ctx, jointFilter) {
  return {
    hooks: {
      draw: [(u) => {
        const [x0, x1] = [u.scales.x.min, u.scales.x.max];
        const c = u.ctx;
        c.save();
        for (const e of ctx.store.events) {
          if (e.t == null || e.t < x0 || e.t > x1) continue;
          if (e.kind !== "drift" && e.kind !== "twin" && e.kind !== "reset") continue;
          if (e.kind === "drift" && jointFilter != null && e.joint !== jointFilter) {
            c.strokeStyle = "rgba(255,92,92,0.35)"; c.setLineDash([3, 3]);
          } else if (e.kind === "drift") { c.strokeStyle = "#ff5c5c"; c.setLineDash([]); }
          else if (e.kind === "twin") { c.strokeStyle = e.valid ? "rgba(102,217,232,0.6)" : "rgba(138,150,166,0.4)"; c.setLineDash([2, 4]); }
          else { c.strokeStyle = "rgba(255,212,59,0.7)"; c.setLineDash([6, 3]); }
          const x = Math.round(u.valToPos(e.t, "x", true)) + 0.5;
          c.lineWidth = e.kind === "drift" ? 2 * devicePixelRatio : devicePixelRatio;
          c.beginPath(); c.moveTo(x, u.bbox.top); c.lineTo(x, u.bbox.top + u.bbox.height); c.stroke();
        }
        c.restore();
      }],
    },
  };
}

export const axisStyle = { stroke: "#8a96a6", grid: { stroke: "#222c38", width: 1 }, ticks: { stroke: "#222c38" } };

async function getJSON(url) {
  const response = await fetch(url, { cache: "no-store" });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return response.json();
}

async function main() {
  const info = await getJSON("/api/info");
  const n = info.joint_names.length;
  const dashboard = info.settings.dashboard;
  const store = new Store(Math.ceil(dashboard.history_s * dashboard.trace_hz), n, info.parameter_names.length);
  const view = { live: true, tEnd: null, width: 10 };
  const ctx = {
    info, store, view, uPlot, latest: null, connection: "connecting", droppedFrames: 0,
    pan(dt) { const end = ctx.latestT(); if (end == null) return; pause(); view.tEnd = Math.min(end, Math.max(store.trace.t[0] ?? 0, view.tEnd + dt)); viewChanged = true; },
    zoom(f) { view.width = Math.max(1, Math.min(dashboard.history_s, view.width * f)); viewChanged = true; },
    jump(t) { pause(); view.tEnd = Math.min(ctx.latestT() ?? t, t + view.width / 2); viewChanged = true; },
    latestT() { const t = store.trace.t; return t.length ? t[t.length - 1] : null; },
    command,
  };
  $("robot").textContent = `${info.robot} · ${info.stream.source}${info.stream.host ? " " + info.stream.host : ""} · ${info.rate_hz} Hz · ${info.n_base} base parameters · from ${info.initial}`;

  // ---- panels from the registry
  const grid = $("grid");
  const panels = [];
  for (const spec of await getJSON("/api/panels")) {
    const el = document.createElement("section");
    el.className = "panel"; el.id = `panel-${spec.id}`;
    el.style.gridColumn = `span ${spec.span}`; el.style.gridRow = `span ${spec.rows}`;
    el.innerHTML = `<h2>${spec.title}</h2><div class="body"></div>`;
    grid.appendChild(el);
    const module = await import(`/static/panels/${spec.module}`);
    panels.push(module.create(el.querySelector(".body"), ctx));
  }

  // ---- view controls
  let dirty = true, viewChanged = true; // new data / a new view (pause, pan, zoom, resize)
  function pause() { if (view.live) { view.live = false; view.tEnd = ctx.latestT(); } showMode(); }
  function live() { view.live = true; view.tEnd = null; showMode(); viewChanged = true; }
  function showMode() {
    $("mode").textContent = view.live ? "LIVE" : "PAUSED";
    $("mode").className = `pill ${view.live ? "live" : "paused"}`;
    $("pause").textContent = view.live ? "Pause" : "Live";
  }
  $("pause").onclick = () => (view.live ? pause() : live());
  $("window").onchange = (e) => { view.width = +e.target.value; viewChanged = true; };
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "SELECT") return;
    if (e.code === "Space") { e.preventDefault(); view.live ? pause() : live(); }
    else if (e.key === "l" || e.key === "L" || e.key === "End") live();
    else if (e.key === "ArrowLeft") ctx.pan(-view.width / 4);
    else if (e.key === "ArrowRight") ctx.pan(view.width / 4);
  });
  async function command(name) {
    const headers = { "X-Requested-With": "ident-online" };
    if (info.protected) {
      let token = sessionStorage.getItem("ident-token") || new URLSearchParams(location.search).get("token");
      if (!token) token = prompt("Token printed by the service at start:") || "";
      sessionStorage.setItem("ident-token", token);
      headers["X-Token"] = token;
    }
    const response = await fetch(`/api/${name}`, { method: "POST", headers });
    if (!response.ok) banner(`${name}: ${(await response.json()).error}`);
  }
  $("reset").onclick = () => confirm("Reset the estimator to its starting parameters?") && command("reset");
  $("snapshot").onclick = () => command("snapshot");
  $("stop").onclick = () => confirm("Stop the service? The run directory is saved.") && command("stop");
  function banner(text) { const b = $("banner"); b.textContent = text; b.classList.toggle("hidden", !text); }

  // ---- data: history, then the event stream (reconnects by itself)
  let lastSeq = null, refetching = false;
  async function loadHistory() {
    if (refetching) return;
    refetching = true;
    try { store.setHistory(await getJSON("/api/history")); ctx.latest = await getJSON("/api/state"); dirty = true; }
    catch (e) { /* the service may be restarting: the stream retries */ }
    finally { refetching = false; }
  }
  function connect() {
    const source = new EventSource("/events");
    source.addEventListener("hello", () => {
      ctx.connection = "live"; lastSeq = null; banner("");
      loadHistory();
      setConnection();
    });
    source.onmessage = (message) => {
      const frame = JSON.parse(message.data);
      if (lastSeq != null && frame.seq !== lastSeq + 1 && frame.seq > lastSeq) {
        ctx.droppedFrames += frame.seq - lastSeq - 1;
        loadHistory(); // frames were dropped: fetch the gap
      }
      lastSeq = frame.seq;
      store.addTrace(frame.trace);
      store.addFit(frame);
      store.addTheta(frame.t, frame.theta);
      for (const e of frame.events) store.events.push(e);
      ctx.latest = frame;
      dirty = true;
    };
    source.onerror = () => { ctx.connection = "reconnecting"; setConnection(); dirty = true; };
  }
  function setConnection() {
    const el = $("connection");
    const ended = ctx.latest && ctx.latest.status && ctx.latest.status !== "running";
    el.textContent = ctx.connection === "live" ? "connected" : ended ? "service ended" : "reconnecting…";
    el.className = `pill ${ctx.connection === "live" ? "ok" : "bad"}`;
  }
  await loadHistory();
  connect();

  // ---- rendering: at most once per animation frame, only when something changed; a panel
  // may cap its own rate (`maxFps`: the whole-history charts need not redraw 25 times a
  // second: the browser's CPU is the robot computer's too). A change of the view (pause, pan,
  // zoom, window, resize) redraws every panel at once.
  let lastWidth = grid.clientWidth;
  const lastDrawn = new Map(), stale = new Set();
  window.addEventListener("resize", () => { viewChanged = true; });
  function tick(now) {
    if (grid.clientWidth !== lastWidth) { lastWidth = grid.clientWidth; panels.forEach((p) => p.resize && p.resize()); viewChanged = true; }
    if (dirty) { panels.forEach((p) => stale.add(p)); dirty = false; }
    if (stale.size || viewChanged) {
      const end = view.live ? ctx.latestT() : view.tEnd;
      const v = { ...view, tEnd: end, tStart: end == null ? null : end - view.width };
      for (const p of panels) {
        if (!viewChanged && (!stale.has(p) || now - (lastDrawn.get(p) ?? -Infinity) < 1000 / (p.maxFps || Infinity))) continue;
        lastDrawn.set(p, now); stale.delete(p);
        try { p.render(v); } catch (e) { console.error(e); }
      }
      viewChanged = false;
      const t = ctx.latest && ctx.latest.t;
      $("clock").textContent = t == null ? "t = –" : `t = ${t.toFixed(2)} s`;
    }
    requestAnimationFrame(tick);
  }
  requestAnimationFrame(tick);
  window.identDashboard = ctx; // for tests and the curious
}

main().catch((e) => { document.body.insertAdjacentHTML("afterbegin", `<div class="banner">dashboard failed: ${e}</div>`); });
