// apiary dashboard: one page, no dependencies. State comes from one
// EventSource (/api/stream); actions are POSTs with the X-Apiary-Dashboard
// header. Every control is a native button, link or input.
"use strict";

const S = { runs: null, run: null, task: null, board: null, escrow: null, gateway: null, reviews: null, plots: null,
  sel: { run: "", task: "" }, es: null, ended: false };
const $ = (id) => document.getElementById(id);

// h builds an element: h("button", {class: "btn", onclick: f, "aria-label": "x"}, "text", child...).
function h(tag, props, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") el.className = v;
    else if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "style") Object.assign(el.style, v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const k of kids.flat(Infinity)) if (k !== undefined && k !== null && k !== false) el.append(k instanceof Node ? k : String(k));
  return el;
}
const svg = (tag, attrs) => {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) el.setAttribute(k, String(v));
  return el;
};

const num = (n) => Number(n || 0).toLocaleString("en-US");
// Money is written one way everywhere: four decimals, or n/a when nothing
// measured it.
const dollars = (n) => "$" + Number(n || 0).toFixed(4);
const usd = (u) => (u && u.known === false ? "n/a" : dollars(u ? u.usd : 0));
const tokens = (u) => (u && u.known === false ? "n/a" : num(u.input_tokens) + " in / " + num(u.output_tokens) + " out");
const secs = (n) => {
  n = Number(n || 0);
  if (n < 60) return n.toFixed(1) + " s";
  const m = Math.floor(n / 60), s = Math.floor(n % 60);
  if (m < 60) return m + " min " + String(s).padStart(2, "0") + " s";
  return Math.floor(m / 60) + " h " + String(m % 60).padStart(2, "0") + " min";
};
const short = (s) => (s ? String(s).slice(0, 10) : "–");
const badge = (st, label) => h("span", { class: "badge st-" + st }, label || st);
const busy = (st) => st === "running" || st === "pending";
const dead = (st) => st === "cancelled" || st === "skipped" || st === "failed";
const zero = (t) => !t || t.startsWith("0001-");

// live is a wall time that counts on while its task or run runs: the
// ticker rewrites every [data-since] element each second.
function live(since, until, fallback) {
  if (zero(since) || !zero(until)) return h("span", {}, secs(fallback));
  return h("span", { "data-since": since }, secs((Date.now() - Date.parse(since)) / 1000));
}
setInterval(() => {
  for (const el of document.querySelectorAll("[data-since]")) el.textContent = secs((Date.now() - Date.parse(el.dataset.since)) / 1000);
}, 1000);

// replace swaps a container's children, keeping keyboard focus on the
// element with the same data-key, so live updates never lose the user's place.
function replace(container, ...kids) {
  const a = document.activeElement;
  const key = a && container.contains(a) ? a.dataset.key : undefined;
  container.replaceChildren(...kids.flat(Infinity).filter((k) => k !== null && k !== undefined && k !== false));
  if (key) {
    const again = container.querySelector('[data-key="' + CSS.escape(key) + '"]');
    if (again) again.focus();
  }
}

// show shows or collapses a panel: one without data takes no room.
function show(id, on) { $(id).hidden = !on; noteAbsent(); }

// noteAbsent says, in one line at the end, which parts are not connected.
const absent = {};
function noteAbsent() {
  const names = Object.entries(absent).filter(([, v]) => v).map(([k]) => k);
  $("absent").textContent = names.length ? "Not connected: " + names.join(", ") + "." : "";
}

function unavailable(v) { return v && v.code === "unavailable"; }

function failed(el, v) {
  if (v && v.error) { replace(el, h("p", { class: "st-failed" }, v.error)); return true; }
  return false;
}

function alertMsg(msg) {
  const a = $("alert");
  a.textContent = msg || "";
  a.hidden = !msg;
}

async function post(url, body) {
  const r = await fetch(url, { method: "POST", headers: { "Content-Type": "application/json", "X-Apiary-Dashboard": "1" }, body: JSON.stringify(body || {}) });
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { msg = (await r.json()).error || msg; } catch (e) { /* not JSON */ }
    alertMsg(msg);
    return false;
  }
  alertMsg("");
  return true;
}

// confirmBox asks in a modal dialog; it resolves to {ok, note}.
function confirmBox(title, text, okLabel) {
  const d = $("confirm");
  $("confirm-h").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = okLabel;
  $("confirm-note").value = "";
  const back = document.activeElement;
  return new Promise((resolve) => {
    const done = (ok) => {
      $("confirm-ok").onclick = $("confirm-no").onclick = d.oncancel = null;
      d.close();
      if (back && back.isConnected) back.focus();
      resolve({ ok, note: $("confirm-note").value });
    };
    $("confirm-ok").onclick = () => done(true);
    $("confirm-no").onclick = () => done(false);
    d.oncancel = (e) => { e.preventDefault(); done(false); };
    d.showModal();
    $("confirm-no").focus();
  });
}

async function cancelTask(run, task) {
  const c = await confirmBox("Cancel task " + task, "Cancel task " + task + " and every task it spawned? Running agents are stopped.", "Cancel task");
  if (c.ok) await post("/api/runs/" + encodeURIComponent(run) + "/tasks/" + encodeURIComponent(task) + "/cancel", { reason: c.note });
}

async function cancelRun(run) {
  const c = await confirmBox("Cancel run " + run, "Cancel run " + run + "? Every running agent is stopped and nothing more is integrated.", "Cancel run");
  if (c.ok) await post("/api/runs/" + encodeURIComponent(run) + "/cancel", { reason: c.note });
}

// Routing: #run=ID&task=NAME.
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  return { run: p.get("run") || "", task: p.get("task") || "" };
}
function go(run, task) {
  const p = new URLSearchParams();
  if (run) p.set("run", run);
  if (task) p.set("task", task);
  location.hash = p.toString();
}
function onRoute() {
  const r = readHash();
  if (!r.run && S.runs && S.runs.length) r.run = S.runs[0].id;
  if (r.run === S.sel.run && r.task === S.sel.task && (S.es || S.ended)) return;
  if (r.run !== S.sel.run) S.run = null;
  S.sel = r;
  S.task = null;
  renderRuns();
  renderRun();
  renderTask();
  if (!S.ended) connect();
}

function connect() {
  if (S.es) S.es.close();
  const p = new URLSearchParams();
  if (S.sel.run) p.set("run", S.sel.run);
  if (S.sel.task) p.set("task", S.sel.task);
  const es = new EventSource("/api/stream?" + p.toString());
  S.es = es;
  const conn = $("conn");
  es.onopen = () => { conn.textContent = "live"; conn.className = "conn live"; };
  es.onerror = () => {
    if (S.ended) return;
    conn.textContent = "disconnected: showing the last state, reconnecting…"; conn.className = "conn down";
  };
  const on = (topic, f) => es.addEventListener(topic, (e) => { if (S.es === es) f(JSON.parse(e.data)); });
  on("runs", (v) => {
    S.runs = v;
    renderRuns();
    if (!S.sel.run && Array.isArray(v) && v.length) onRoute();
  });
  on("run", (v) => { S.run = v; renderRun(); renderBoard(); renderNeeds(); });
  on("task", (v) => { S.task = v; renderTask(); });
  on("board", (v) => { S.board = v; renderBoard(); renderHints(); renderNeeds(); });
  on("escrow", (v) => { S.escrow = v; renderEscrow(); renderNeeds(); });
  on("reviews", (v) => { S.reviews = v; renderReviews(); renderNeeds(); });
  on("gateway", (v) => { S.gateway = v; renderGateway(); });
  // The dashboard stopped (the run that served it ended): keep the final
  // state on the page rather than reconnect to nothing.
  on("end", () => {
    S.ended = true;
    es.close();
    S.es = null;
    conn.textContent = "ended: this dashboard stopped with its run; the page shows the final state";
    conn.className = "conn ended";
    for (const el of document.querySelectorAll("[data-since]")) el.removeAttribute("data-since");
  });
}

function renderRuns() {
  const ul = $("runs");
  const v = S.runs;
  if (v === null) return;
  absent["the run store"] = unavailable(v);
  noteAbsent();
  if (unavailable(v)) { replace(ul, h("li", { class: "muted" }, "No run store.")); return; }
  if (failed(ul, v)) return;
  if (!v.length) { replace(ul, h("li", { class: "muted" }, "No runs yet.")); return; }
  replace(ul, v.map((r) => h("li", {},
    h("button", { "data-key": "run:" + r.id, "aria-current": r.id === S.sel.run ? "true" : "false", onclick: () => go(r.id, ""),
      "aria-label": "Run " + r.id + (r.mode === "swarm" ? " (swarm)" : "") + ", " + r.status + ", " + r.succeeded + " of " + r.tasks + " tasks succeeded" },
      h("span", { class: "id" }, r.id), badge(r.status), r.mode === "swarm" ? [" ", badge("swarm", "swarm")] : null,
      " ", r.succeeded + "/" + r.tasks, " · ", r.usd_known === false ? "n/a" : dollars(r.usd)))));
}

// critical says whether the DAG highlights a node: the predicted path
// while the run goes on (less the tasks that can no longer be on it), the
// achieved path once it ended.
function critical(r, n) {
  return (r.status === "running" ? n.critical : n.achieved) && !dead(n.status);
}

function renderRun() {
  const body = $("run-body");
  const r = S.run;
  if (!S.sel.run) { replace(body, h("p", { class: "muted" }, S.runs && S.runs.length === 0 ? "No runs yet: start one with apiary run PLAN --dash ADDR." : "Select a run.")); return; }
  if (!r) { replace(body, h("p", { class: "muted" }, "loading…")); return; }
  if (unavailable(r)) { replace(body, h("p", { class: "muted" }, "The run store is not connected.")); return; }
  if (failed(body, r)) return;
  $("run-h").textContent = "Run " + r.run_id + (r.mode === "swarm" ? " (swarm)" : "");
  const t = r.totals;
  const running = r.status === "running";
  const path = running ? (r.predicted_critical_path.tasks || []) : (r.achieved_critical_path.tasks || []);
  const summary = h("dl", { class: "summary" },
    h("div", {}, h("dt", {}, "Status"), h("dd", {}, badge(r.status))),
    h("div", {}, h("dt", {}, "Tasks"), h("dd", {}, t.succeeded + " succeeded / " + t.tasks + (t.failed ? ", " + t.failed + " failed" : "") + (t.cancelled ? ", " + t.cancelled + " cancelled" : "") + (t.skipped ? ", " + t.skipped + " skipped" : ""))),
    h("div", {}, h("dt", {}, "Tokens"), h("dd", {}, tokens(t.usage))),
    h("div", {}, h("dt", {}, "Cost"), h("dd", { id: "run-cost" }, usd(t.usage))),
    h("div", {}, h("dt", {}, "Wall"), h("dd", {}, live(running ? r.started : "", "", r.wall_s))),
    h("div", {}, h("dt", {}, "Branch"), h("dd", {}, r.integration_branch || "–")),
    h("div", {}, h("dt", {}, running ? "Critical path" : "Critical path (achieved)"), h("dd", {}, path.join(" → ") || "–")));
  const actions = running && r.mode !== "swarm" ? h("p", {}, h("button", { class: "btn danger", "data-key": "cancel-run", onclick: () => cancelRun(r.run_id) }, "Cancel run")) : null;
  const legend = h("p", { class: "legend", id: "dag-legend" }, h("span", { class: "crit" }, "▬ critical path"), h("span", {}, "— data dependency"), h("span", {}, "- - control"), h("span", {}, "··· spawned"), h("span", { class: "needs-key" }, "▮ waits for you"));
  replace(body, summary, actions, legend, dag(r), taskTable(r));
}

function dag(r) {
  const g = r.graph || { width: 0, height: 0, nodes: [], edges: [] };
  const box = h("div", { class: "dag", role: "group", "aria-label": "Task graph of run " + r.run_id + "; each task is a button that opens its details", "aria-describedby": "dag-legend" });
  const inner = h("div", { class: "dag-inner" });
  Object.assign(inner.style, { width: g.width + "px", height: g.height + "px" });
  const s = svg("svg", { width: g.width, height: g.height, "aria-hidden": "true" });
  const defs = svg("defs");
  const m = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
  m.append(svg("path", { d: "M0 0L10 5L0 10z", fill: "#8c959f", stroke: "none" }));
  defs.append(m);
  s.append(defs);
  const at = {};
  for (const n of g.nodes) at[n.id] = n;
  const running = r.status === "running";
  for (const e of g.edges) {
    const a = at[e.from], b = at[e.to];
    if (!a || !b) continue;
    const crit = (running ? e.critical : e.achieved) && !dead(a.status) && !dead(b.status);
    const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x - 2, y2 = b.y + b.h / 2, mx = (x1 + x2) / 2;
    s.append(svg("path", { d: `M${x1} ${y1}C${mx} ${y1} ${mx} ${y2} ${x2} ${y2}`, class: e.kind + (crit ? " crit" : ""), "marker-end": "url(#arrow)" }));
  }
  inner.append(s);
  const byID = {};
  for (const t of r.tasks) byID[t.id] = t;
  for (const n of g.nodes) {
    const t = byID[n.id] || {};
    const crit = critical(r, n);
    const state = t.waiting ? "waits for you" : n.status;
    const label = n.id + ": " + state + (crit ? ", on the critical path" : "");
    const b = h("button", { class: "node st-" + n.status + (crit ? " crit" : "") + (t.waiting ? " needs" : ""), "data-task": n.id, "data-status": n.status, "data-key": "node:" + n.id,
      "aria-label": label, "aria-pressed": n.id === S.sel.task ? "true" : "false", onclick: () => go(r.run_id, n.id) },
      h("span", { class: "name" }, n.id), h("span", { class: "state" }, state));
    Object.assign(b.style, { left: n.x + "px", top: n.y + "px", width: n.w + "px", height: n.h + "px" });
    inner.append(b);
  }
  box.append(inner);
  return box;
}

// why is a task's reason as a person reads it: why it failed (one line,
// then the failing check's last lines), what it waits for, or the reason
// it ended; null when there is nothing to say.
function why(t) {
  const f = t.failure;
  if (f) {
    return h("div", { class: "why", "data-task": t.id }, h("span", { class: "st-failed" }, f.summary || t.reason || "failed"),
      f.command ? h("code", { class: "why-cmd" }, f.command) : null,
      f.lines && f.lines.length ? h("pre", { class: "why-lines", tabindex: "0", "aria-label": "Why task " + t.id + " failed" }, f.lines.join("\n")) : null);
  }
  if (t.waiting) return h("div", { class: "why st-needs", "data-task": t.id }, "Waits for you: " + t.waiting);
  if (t.gate) return h("div", { class: "why", "data-task": t.id }, t.gate.gate + (t.gate.pattern ? "/" + t.gate.pattern : "") + ": " + t.gate.detail);
  if (t.reason) return h("div", { class: "why muted", "data-task": t.id }, t.reason);
  return null;
}

function taskTable(r) {
  const swarm = r.mode === "swarm";
  const running = r.status === "running";
  const cols = ["Task", "Status", "Attempts#", swarm ? "Worker" : null, "Integrated", "Tokens in / out#", "USD#", "Wall#", "Actions"].filter(Boolean);
  // A task's reason goes in a row of its own under it, the table's width:
  // readable on a phone too.
  const rows = r.tasks.flatMap((t) => {
    const w = why(t);
    return [h("tr", { "data-task": t.id, class: w ? "has-why" : "" },
      h("th", { scope: "row" }, t.id),
      h("td", { class: "nowrap" }, badge(t.status), t.waiting ? [" ", badge("needs", "waits for you")] : null),
      h("td", { class: "num" }, t.attempts + (t.reconciliations ? "+" + t.reconciliations + "r" : "")),
      swarm ? h("td", {}, t.worker || "–") : null,
      h("td", { class: "nowrap" }, t.integrated || "–"),
      h("td", { class: "num" }, t.usage.known === false ? "n/a" : num(t.usage.input_tokens) + " / " + num(t.usage.output_tokens)),
      h("td", { class: "num", "data-usd": t.id }, usd(t.usage)),
      h("td", { class: "num" }, t.status === "running" && running ? live(t.started, t.finished, t.wall_s) : secs(t.wall_s)),
      h("td", { class: "nowrap" },
        h("button", { class: "btn", "data-key": "open:" + t.id, "aria-label": "Details of task " + t.id, onclick: () => go(r.run_id, t.id) }, "Details"),
        busy(t.status) && running && !swarm ? h("button", { class: "btn danger", "data-key": "cancel:" + t.id, "aria-label": "Cancel task " + t.id, onclick: () => cancelTask(r.run_id, t.id) }, "Cancel") : null)),
    w ? h("tr", { class: "why-row" }, h("td", { colspan: cols.length }, w)) : null];
  });
  return h("div", { class: "scroll" }, h("table", { id: "tasks" }, h("caption", {}, "Tasks"),
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c.endsWith("#") ? "num" : "" }, c.replace(/#$/, ""))))),
    h("tbody", {}, rows)));
}

function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function table(caption, cols, rows, attrs) {
  return h("div", { class: "scroll" }, h("table", attrs || {}, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c.endsWith("#") ? "num" : "" }, c.replace(/#$/, ""))))),
    h("tbody", {}, rows)));
}

function renderTask() {
  const sec = $("task"), body = $("task-body");
  if (!S.sel.task) { sec.hidden = true; replace(body); return; }
  sec.hidden = false;
  $("task-h").textContent = "Task " + S.sel.task;
  const d = S.task;
  if (!d) { replace(body, h("p", { class: "muted" }, "loading…")); return; }
  if (failed(body, d)) return;
  const t = d.task;
  const running = S.run && S.run.status === "running" && busy(t.status) && S.run.mode !== "swarm";
  const head = h("div", { class: "head" }, badge(t.status), t.waiting ? badge("needs", "waits for you") : null,
    running ? h("button", { class: "btn danger", "data-key": "task-cancel", onclick: () => cancelTask(d.run, t.id) }, "Cancel task " + t.id) : null,
    h("button", { class: "btn", "data-key": "task-close", onclick: () => go(d.run, "") }, "Close task details"));
  const parts = [head];
  if (t.failure) parts.push(h("div", { class: "failure" }, h("h3", {}, "Why it failed"), why(t)));
  else if (t.waiting) parts.push(why(t));
  parts.push(kv([
    ["Objective", d.objective], ["Agent", d.agent], ["Worker", t.worker], ["Attempts", String(t.attempts)],
    ["Tokens", tokens(t.usage)], ["Cost", usd(t.usage)], ["Wall", t.status === "running" ? live(t.started, t.finished, t.wall_s) : secs(t.wall_s)],
    ["Waits for", t.waiting],
    ["Lease", d.lease_s ? d.lease_s + " s" : "–"], ["Fencing token", d.fencing_token ? String(d.fencing_token) : "–"],
    ["Claim", d.claim ? d.claim.agent + " (token " + d.claim.token + ", lease " + d.claim.lease + ")" : undefined],
    ["Commit", t.commit ? h("code", {}, t.commit) : "–"], ["Integrated", t.integrated || "–"],
    ["Write scope", (d.write_scope || []).join(", ")], ["Trace", d.traceparent ? h("code", {}, d.traceparent) : undefined],
    ["Reason", t.reason], ["Summary", d.summary]]));
  const gates = [].concat(d.gate_failures && d.gate_failures.length ? d.gate_failures : (d.gate ? [d.gate] : []));
  parts.push(h("h3", {}, "Gate results"));
  parts.push(gates.length
    ? table("Gate rejections", ["Gate", "File", "Detail"], gates.map((g) => h("tr", {}, h("td", {}, g.gate + (g.pattern ? "/" + g.pattern : "")), h("td", {}, g.file ? g.file + (g.line ? ":" + g.line : "") : "–"), h("td", {}, g.detail))))
    : h("p", { class: "muted" }, t.status === "succeeded" ? "Every gate passed." : "No gate rejected this task."));
  if (d.checks && d.checks.length) {
    parts.push(table("Checks", ["Command", "Exit#", "Duration#"], d.checks.map((c) => h("tr", {}, h("td", {}, h("code", {}, c.command)), h("td", { class: "num " + (c.exit ? "st-failed" : "st-succeeded") }, String(c.exit) + (c.timed_out ? " (timed out)" : "")), h("td", { class: "num" }, secs(c.duration))))));
  }
  if (d.diff_stat && d.diff_stat.length) {
    parts.push(h("h3", {}, "Diff stat"));
    parts.push(table("Changed files", ["File", "Added#", "Deleted#"], d.diff_stat.map((f) => h("tr", {}, h("td", {}, h("code", {}, f.path)), h("td", { class: "num st-succeeded" }, f.binary ? "bin" : f.added ? "+" + f.added : "0"), h("td", { class: "num st-failed" }, f.binary ? "" : f.deleted ? "-" + f.deleted : "0")))));
  }
  if (d.attempt_list && d.attempt_list.length) {
    parts.push(table("Attempts", ["#", "Role", "Started", "Exit#", "USD#", "Fence#", "Base", "Candidate"], d.attempt_list.map((a) => h("tr", {},
      h("td", {}, String(a.n)), h("td", {}, a.role), h("td", {}, new Date(a.started).toLocaleTimeString()), h("td", { class: "num" }, a.exit === undefined || a.exit === null ? (a.finished ? "–" : "running") : String(a.exit)),
      h("td", { class: "num" }, a.finished ? usd(a.usage) : "running"),
      h("td", { class: "num" }, String(a.fence || "–")), h("td", {}, h("code", {}, short(a.base))), h("td", {}, h("code", {}, short(a.commit)))))));
  }
  if (d.log) {
    parts.push(h("h3", {}, "Log"));
    parts.push(h("div", {}, h("p", { class: "muted" }, d.log.name + " (" + num(d.log.size) + " bytes" + (d.log.truncated ? ", last part" : "") + ")"), h("pre", { tabindex: "0", "aria-label": "Log " + d.log.name }, d.log.text || "(empty)")));
  }
  for (const [name, v] of [["Envelope", d.envelope], ["Receipt", d.receipt]]) {
    if (v) parts.push(h("details", {}, h("summary", {}, name + " (JSON)"), h("pre", {}, JSON.stringify(v, null, 2))));
  }
  replace(body, parts);
}

function renderBoard() {
  const body = $("board-body");
  const b = S.board;
  const r = S.run && !S.run.error ? S.run : null;
  const swarmWorkers = r && r.mode === "swarm" ? (r.workers || []) : [];
  if (!b) return;
  absent["the board"] = unavailable(b);
  if (unavailable(b) && !swarmWorkers.length) { show("board", false); return; }
  if (b.error) { show("board", true); failed(body, b); return; }
  const workers = unavailable(b) ? swarmWorkers : b.workers;
  const claims = unavailable(b) ? [] : b.claims;
  const tasks = unavailable(b) ? [] : b.tasks;
  if (!workers.length && !claims.length && !tasks.length) { show("board", false); return; }
  show("board", true);
  const parts = [];
  parts.push(workers.length
    ? table("Workers", ["Worker", "Profile", "Skills", "Busy / slots#", "Last seen"], workers.map((w) => h("tr", {}, h("td", {}, w.id), h("td", {}, w.profile || "–"), h("td", {}, (w.skills || []).join(", ")), h("td", { class: "num" }, (w.busy || 0) + " / " + (w.slots || 0)), h("td", {}, w.last_seen ? new Date(w.last_seen).toLocaleTimeString() : "–"))))
    : h("p", { class: "muted" }, "No live workers."));
  if (claims.length) {
    parts.push(table("Claims", ["Task", "Worker", "Score#", "Fencing token#", "Lease#"], claims.map((c) => h("tr", {}, h("td", {}, c.task), h("td", {}, c.agent), h("td", { class: "num" }, Number(c.score).toFixed(2)), h("td", { class: "num" }, String(c.token)), h("td", { class: "num" }, String(c.lease))))));
  }
  if (tasks.length) {
    const by = {};
    for (const t of tasks) by[t.status] = (by[t.status] || 0) + 1;
    parts.push(h("p", {}, "Board tasks: " + Object.entries(by).map(([k, n]) => n + " " + k).join(", ")));
  }
  replace(body, parts);
}

async function reviewHint(typ, verdict) {
  const note = document.querySelector('input[data-hint="' + CSS.escape(typ) + '"]');
  await post("/api/hints/" + encodeURIComponent(typ) + "/" + verdict, { note: note ? note.value : "" });
}

function renderHints() {
  const body = $("hints-body");
  const b = S.board;
  if (!b) return;
  if (unavailable(b)) { show("hints", false); return; }
  if (b.error) { show("hints", true); failed(body, b); return; }
  if (!b.hints.length && !b.conflicts.length) { show("hints", false); return; }
  show("hints", true);
  const parts = [];
  if (b.hints.length) {
    parts.push(table("Resolution hints", ["Conflict type", "State", "Resolution", "Reviewer", "Note", "Actions"], b.hints.map((x, i) => h("tr", { "data-hint": x.type },
      h("td", {}, x.type), h("td", {}, badge(x.state)), h("td", {}, x.resolution), h("td", {}, x.reviewer || "–"),
      h("td", {}, x.state === "pending" ? [h("label", { class: "sr", for: "hint-note-" + i }, "Note for hint " + x.type), h("input", { type: "text", id: "hint-note-" + i, "data-hint": x.type, "data-key": "hint-note:" + x.type })] : (x.note || "")),
      h("td", { class: "nowrap" }, x.state === "pending" ? [
        h("button", { class: "btn go", "data-key": "approve:" + x.type, "aria-label": "Approve hint " + x.type, onclick: () => reviewHint(x.type, "approve") }, "Approve"),
        h("button", { class: "btn danger", "data-key": "reject:" + x.type, "aria-label": "Reject hint " + x.type, onclick: () => reviewHint(x.type, "reject") }, "Reject")] : "–")))));
  }
  if (b.conflicts.length) {
    parts.push(table("Conflicts", ["ID", "Type", "Tasks", "Files", "Resolution"], b.conflicts.map((c) => h("tr", {}, h("td", {}, h("code", {}, c.id)), h("td", {}, c.type), h("td", {}, c.tasks.join(", ")), h("td", {}, (c.files || []).join(", ")), h("td", {}, c.resolution || "–")))));
  }
  replace(body, parts);
}

async function decide(e, verdict) {
  if (verdict === "approve") {
    const c = await confirmBox("Approve " + e.operation, "Let " + (e.task || "the agent") + " run “" + e.operation + "”?", "Approve");
    if (!c.ok) return;
    await post("/api/escrow/" + encodeURIComponent(e.id) + "/approve", { note: c.note });
    return;
  }
  await post("/api/escrow/" + encodeURIComponent(e.id) + "/deny", {});
}

function renderEscrow() {
  const body = $("escrow-body");
  const v = S.escrow;
  if (!v) return;
  absent["the escrow queue"] = unavailable(v);
  if (unavailable(v) || (Array.isArray(v) && !v.length)) { show("escrow", false); return; }
  show("escrow", true);
  if (failed(body, v)) return;
  replace(body, table("Escrow requests", ["ID", "Operation", "Run / task", "State", "Reviewer", "Actions"], v.map((e) => h("tr", { "data-escrow": e.id },
    h("td", {}, h("code", {}, e.id)), h("td", {}, h("code", {}, e.operation), e.detail ? h("div", { class: "muted" }, e.detail) : null),
    h("td", {}, (e.run || "–") + " / " + (e.task || "–")), h("td", {}, badge(e.state)), h("td", {}, e.reviewer || "–"),
    h("td", { class: "nowrap" }, e.state === "pending" ? [
      h("button", { class: "btn go", "data-key": "escrow-approve:" + e.id, "aria-label": "Approve " + e.operation + " for " + (e.task || e.id), onclick: () => decide(e, "approve") }, "Approve"),
      h("button", { class: "btn danger", "data-key": "escrow-deny:" + e.id, "aria-label": "Deny " + e.operation + " for " + (e.task || e.id), onclick: () => decide(e, "deny") }, "Deny")] : "–")))));
}

function renderReviews() {
  const v = S.reviews;
  if (!v) return;
  if (unavailable(v) || !Array.isArray(v) || !v.length) { show("reviews", false); return; }
  show("reviews", true);
  replace($("reviews-body"), table("Escalated reviews", ["Review", "Why", "Settle with"], v.map((x) => h("tr", { "data-review": x.id },
    h("td", {}, h("code", {}, x.id)), h("td", {}, x.reason), h("td", {}, h("code", {}, x.command))))));
}

// renderNeeds is the banner of what waits for a person, with a button to
// each.
function renderNeeds() {
  const items = [];
  const jump = (id, key, text) => h("li", {}, text, " ", h("button", { class: "btn", "data-key": "needs:" + key, "aria-label": "Go to: " + text, onclick: () => {
    const sec = $(id);
    sec.scrollIntoView({ block: "start" });
    const first = sec.querySelector('button.go, input, button');
    if (first) first.focus();
  } }, "Go to it"));
  for (const e of Array.isArray(S.escrow) ? S.escrow : []) {
    if (e.state === "pending") items.push(jump("escrow", "escrow:" + e.id, "Escrow " + e.id + ": " + (e.task ? "task " + e.task + " asks to run " : "") + "“" + e.operation + "”."));
  }
  const b = S.board && Array.isArray(S.board.hints) ? S.board : null;
  for (const x of b ? b.hints : []) {
    if (x.state === "pending") items.push(jump("hints", "hint:" + x.type, "Resolution hint " + x.type + " waits for a review."));
  }
  for (const x of Array.isArray(S.reviews) ? S.reviews : []) items.push(jump("reviews", "review:" + x.id, "Review " + x.id + " was escalated to you: " + x.reason));
  const n = items.length;
  $("needs").hidden = n === 0;
  $("needs-h").textContent = n === 1 ? "1 thing needs you" : n + " things need you";
  replace($("needs-list"), items);
  document.title = (n ? "(" + n + ") " : "") + "apiary dashboard";
}

// chart returns the upstream's chart image, the same element every time:
// a new picture replaces the old one only once it has loaded, so the
// chart never flickers, and the last one stays when the dashboard stops.
const charts = {};
function chart(name, src, alt) {
  let img = charts[name];
  if (!img) {
    img = charts[name] = h("img", { class: "chart", width: 640, height: 300, alt, src });
    return img;
  }
  img.alt = alt;
  if (img.dataset.want !== src && !S.ended) {
    img.dataset.want = src;
    const next = new Image();
    next.onload = () => { if (img.dataset.want === src) img.src = src; };
    next.src = src;
  }
  return img;
}

// Gateway panel.
const refusalNames = { budget: "budget (402)", key: "unknown key (401)", capability: "capability (403)", malformed: "malformed (400/413)", route: "no route (404)", config: "no upstream key (500)" };
const period = (s) => (!s ? "not reported" : s % 86400 === 0 ? "per " + s / 86400 + " d" : s % 3600 === 0 ? "per " + s / 3600 + " h" : s % 60 === 0 ? "per " + s / 60 + " min" : "per " + s + " s");
const budgetAmount = (b, v) => (b.unit === "usd" ? dollars(v / 1e6) : num(v) + " tokens");

function renderGateway() {
  const body = $("gateway-body");
  const g = S.gateway;
  if (!g) return;
  absent["the gateway"] = !g.connected;
  if (!g.connected) { show("gateway", false); return; }
  show("gateway", true);
  const parts = [];
  if (g.error) parts.push(h("p", { class: "st-failed" }, "Last read failed: " + g.error));
  const snap = g.snapshot;
  if (!snap) { parts.push(h("p", { class: "muted" }, "Waiting for the first sample…")); replace(body, parts); return; }
  const queued = snap.upstreams.reduce((n, u) => n + u.queued, 0);
  const depth = queued + (snap.waiting || 0);
  parts.push(h("p", { class: "gw-queue", id: "gw-queue" },
    h("strong", {}, "Queue depth ", h("span", { "data-count": "queue" }, String(depth))), ": ",
    h("span", { "data-count": "queued" }, String(queued)), " waiting for a slot, ",
    h("span", { "data-count": "waiting" }, String(snap.waiting || 0)), " waiting on a rate window or a retry · ",
    String(snap.client_in_flight || 0), snap.client_in_flight === 1 ? " client request in flight" : " client requests in flight"));
  parts.push(h("div", { class: "cards" }, snap.upstreams.map((u) => {
    const n = (g.history && g.history[u.name] || []).length;
    const ref = Object.entries(u.refusals || {});
    return h("div", { class: "card", "data-upstream": u.name }, h("h3", {}, "Upstream " + u.name),
      kv([["In flight", u.in_flight + " of " + u.concurrency_limit + " (the concurrency limit)"], ["Queued for a slot", String(u.queued)],
        ["Breaker", h("span", { class: u.breaker === "open" ? "st-failed" : "" }, u.breaker)],
        ["Sent upstream", num(u.requests) + " requests · " + num(u.status_429) + " answered 429 · " + num(u.status_5xx) + " answered 5xx · " + num(u.retries) + " retries"],
        ["Refused", ref.length ? ref.map(([k, v]) => num(v) + " " + (refusalNames[k] || k)).join(" · ") : "none"]]),
      u.rate_limits && u.rate_limits.length
        ? table("Rate limits", ["Dimension", "Limit#", "Period", "Available#", "Paused until"], u.rate_limits.map((l) => h("tr", {},
          h("td", {}, l.dim + (l.source ? " (" + l.source + ")" : "")), h("td", { class: "num" }, num(l.limit)), h("td", {}, period(l.period_s)),
          h("td", { class: "num" }, l.available < 0 ? "0 (" + num(Math.ceil(-l.available)) + " reserved ahead)" : num(Math.floor(l.available))),
          h("td", {}, l.paused_until ? new Date(l.paused_until).toLocaleTimeString() : "–"))))
        : h("p", { class: "muted" }, "No rate limit known yet (learned from the provider's headers)."),
      n ? chart(u.name, "/api/gateway/chart.svg?upstream=" + encodeURIComponent(u.name) + "&n=" + n + "&t=" + Date.parse(snap.time),
        "Concurrency limit, requests in flight, queued and waiting on a rate window over the last " + n + " samples of upstream " + u.name) : null);
  })));
  if (snap.budgets && snap.budgets.length) {
    parts.push(table("Budgets", ["Agent or key", "Limit#", "Spent#", "Reserved#", "Remaining#"], snap.budgets.map((b) => h("tr", { "data-budget": b.key || b.agent },
      h("td", {}, b.agent ? b.agent + (b.key ? " (" + b.key + ")" : "") : b.scope), h("td", { class: "num" }, budgetAmount(b, b.limit)), h("td", { class: "num" }, budgetAmount(b, b.spent)),
      h("td", { class: "num" }, budgetAmount(b, b.reserved)), h("td", { class: "num" }, budgetAmount(b, b.remaining))))));
  }
  parts.push(snap.agents.length
    ? table("Tokens and dollars per agent", ["Agent", "In flight#", "Tokens in#", "Tokens out#", "USD#"], snap.agents.map((a) => h("tr", {}, h("td", {}, a.agent), h("td", { class: "num" }, String(a.in_flight)), h("td", { class: "num" }, num(a.input_tokens)), h("td", { class: "num" }, num(a.output_tokens)), h("td", { class: "num" }, dollars(a.usd)))))
    : h("p", { class: "muted" }, "No agent has spent anything yet."));
  replace(body, parts);
}

async function loadPlots() {
  const body = $("plots-body");
  try {
    const r = await fetch("/api/plots");
    const ps = await r.json();
    if (!Array.isArray(ps) || !ps.length) { show("plots", false); return; }
    show("plots", true);
    replace(body, h("div", { class: "plots" }, ps.map((p) => {
      const src = "/api/plots/" + p.name.split("/").map(encodeURIComponent).join("/");
      return h("figure", {}, h("a", { href: src, target: "_blank", rel: "noopener", "aria-label": "Open plot " + p.title + " full size" },
        h("img", { src, alt: "Plot " + p.title, loading: "lazy" })), h("figcaption", {}, p.title));
    })));
  } catch (e) {
    show("plots", true);
    replace(body, h("p", { class: "st-failed" }, "Plots could not be listed: " + e));
  }
}

window.addEventListener("hashchange", onRoute);
document.addEventListener("DOMContentLoaded", () => {
  // The skip link moves focus without touching the hash, which routes.
  document.querySelector(".skip").addEventListener("click", (e) => { e.preventDefault(); $("main").focus(); });
  S.sel = readHash();
  connect();
  loadPlots();
});
