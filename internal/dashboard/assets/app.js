// apiary dashboard: one page, no dependencies. State comes from one
// EventSource (/api/stream); actions are POSTs with the X-Apiary-Dashboard
// header. Every control is a native button, link or input.
"use strict";

const S = { runs: null, run: null, task: null, board: null, escrow: null, gateway: null, sel: { run: "", task: "" }, es: null };
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
const usd = (n) => "$" + Number(n || 0).toFixed(4);
const secs = (n) => Number(n || 0).toFixed(1) + " s";
const short = (s) => (s ? String(s).slice(0, 10) : "–");
const badge = (st) => h("span", { class: "badge st-" + st }, st);
const busy = (st) => st === "running" || st === "pending";

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

function notConnected(el, what, v) {
  if (v && v.code === "unavailable") { replace(el, h("p", { class: "muted" }, what + " is not connected.")); return true; }
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
  if (r.run === S.sel.run && r.task === S.sel.task && S.es) return;
  if (r.run !== S.sel.run) S.run = null;
  S.sel = r;
  S.task = null;
  renderRuns();
  renderRun();
  renderTask();
  connect();
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
  es.onerror = () => { conn.textContent = "disconnected: showing the last state, reconnecting…"; conn.className = "conn down"; };
  const on = (topic, f) => es.addEventListener(topic, (e) => { if (S.es === es) f(JSON.parse(e.data)); });
  on("runs", (v) => {
    S.runs = v;
    renderRuns();
    if (!S.sel.run && Array.isArray(v) && v.length) onRoute();
  });
  on("run", (v) => { S.run = v; renderRun(); });
  on("task", (v) => { S.task = v; renderTask(); });
  on("board", (v) => { S.board = v; renderBoard(); renderHints(); });
  on("escrow", (v) => { S.escrow = v; renderEscrow(); });
  on("gateway", (v) => { S.gateway = v; renderGateway(); });
}

function renderRuns() {
  const ul = $("runs");
  const v = S.runs;
  if (v === null) return;
  if (notConnected(ul, "The run store", v)) return;
  if (!v.length) { replace(ul, h("li", { class: "muted" }, "No runs yet.")); return; }
  replace(ul, v.map((r) => h("li", {},
    h("button", { "data-key": "run:" + r.id, "aria-current": r.id === S.sel.run ? "true" : "false", onclick: () => go(r.id, ""),
      "aria-label": "Run " + r.id + ", " + r.status + ", " + r.succeeded + " of " + r.tasks + " tasks succeeded" },
      h("span", { class: "id" }, r.id), badge(r.status), " ", r.succeeded + "/" + r.tasks, " · ", usd(r.usd)))));
}

function renderRun() {
  const body = $("run-body");
  const r = S.run;
  if (!S.sel.run) { replace(body, h("p", { class: "muted" }, "Select a run.")); return; }
  if (!r) { replace(body, h("p", { class: "muted" }, "loading…")); return; }
  if (notConnected(body, "The run store", r)) return;
  $("run-h").textContent = "Run " + r.run_id;
  const t = r.totals;
  const summary = h("dl", { class: "summary" },
    h("div", {}, h("dt", {}, "Status"), h("dd", {}, badge(r.status))),
    h("div", {}, h("dt", {}, "Tasks"), h("dd", {}, t.succeeded + " succeeded / " + t.tasks + (t.failed ? ", " + t.failed + " failed" : "") + (t.cancelled ? ", " + t.cancelled + " cancelled" : "") + (t.skipped ? ", " + t.skipped + " skipped" : ""))),
    h("div", {}, h("dt", {}, "Tokens"), h("dd", {}, num(t.usage.input_tokens) + " in / " + num(t.usage.output_tokens) + " out")),
    h("div", {}, h("dt", {}, "Cost"), h("dd", {}, usd(t.usage.usd))),
    h("div", {}, h("dt", {}, "Wall"), h("dd", {}, secs(r.wall_s))),
    h("div", {}, h("dt", {}, "Branch"), h("dd", {}, r.integration_branch)),
    h("div", {}, h("dt", {}, "Critical path"), h("dd", {}, (r.predicted_critical_path.tasks || []).join(" → ") || "–")));
  const actions = r.status === "running" ? h("p", {}, h("button", { class: "btn danger", "data-key": "cancel-run", onclick: () => cancelRun(r.run_id) }, "Cancel run")) : null;
  const legend = h("p", { class: "legend", id: "dag-legend" }, h("span", { class: "crit" }, "▬ critical path"), h("span", {}, "— data dependency"), h("span", {}, "- - control"), h("span", {}, "··· spawned"));
  replace(body, summary, actions, legend, dag(r), taskTable(r));
}

function dag(r) {
  const g = r.graph || { width: 0, height: 0, nodes: [], edges: [] };
  const box = h("div", { class: "dag", role: "group", "aria-label": "Task graph of run " + r.run_id + "; each task is a button that opens its details", "aria-describedby": "dag-legend" });
  box.style.height = Math.min(g.height + 4, 460) + "px";
  const inner = h("div", {});
  Object.assign(inner.style, { position: "relative", width: g.width + "px", height: g.height + "px" });
  const s = svg("svg", { width: g.width, height: g.height, "aria-hidden": "true" });
  const defs = svg("defs");
  const m = svg("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 8, markerHeight: 8, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" });
  m.append(svg("path", { d: "M0 0L10 5L0 10z", fill: "#8c959f", stroke: "none" }));
  defs.append(m);
  s.append(defs);
  const at = {};
  for (const n of g.nodes) at[n.id] = n;
  for (const e of g.edges) {
    const a = at[e.from], b = at[e.to];
    if (!a || !b) continue;
    const x1 = a.x + a.w, y1 = a.y + a.h / 2, x2 = b.x - 2, y2 = b.y + b.h / 2, mx = (x1 + x2) / 2;
    s.append(svg("path", { d: `M${x1} ${y1}C${mx} ${y1} ${mx} ${y2} ${x2} ${y2}`, class: e.kind + (e.critical ? " crit" : ""), "marker-end": "url(#arrow)" }));
  }
  inner.append(s);
  for (const n of g.nodes) {
    const label = n.id + ": " + n.status + (n.critical ? ", on the critical path" : "");
    const b = h("button", { class: "node st-" + n.status + (n.critical ? " crit" : ""), "data-task": n.id, "data-status": n.status, "data-key": "node:" + n.id,
      "aria-label": label, "aria-pressed": n.id === S.sel.task ? "true" : "false", onclick: () => go(r.run_id, n.id) },
      h("span", { class: "name" }, n.id), h("span", { class: "state" }, n.status));
    Object.assign(b.style, { left: n.x + "px", top: n.y + "px", width: n.w + "px", height: n.h + "px" });
    inner.append(b);
  }
  box.append(inner);
  return box;
}

function taskTable(r) {
  const rows = r.tasks.map((t) => h("tr", { "data-task": t.id },
    h("th", { scope: "row" }, t.id),
    h("td", {}, badge(t.status)),
    h("td", { class: "num" }, t.attempts + (t.reconciliations ? "+" + t.reconciliations + "r" : "")),
    h("td", {}, t.integrated || "–"),
    h("td", { class: "num" }, num(t.usage.input_tokens) + " / " + num(t.usage.output_tokens)),
    h("td", { class: "num" }, usd(t.usage.usd)),
    h("td", { class: "num" }, secs(t.wall_s)),
    h("td", {}, t.gate ? t.gate.gate + (t.gate.pattern ? "/" + t.gate.pattern : "") + ": " + t.gate.detail : (t.reason || "")),
    h("td", {},
      h("button", { class: "btn", "data-key": "open:" + t.id, "aria-label": "Details of task " + t.id, onclick: () => go(r.run_id, t.id) }, "Details"),
      busy(t.status) && r.status === "running" ? h("button", { class: "btn danger", "data-key": "cancel:" + t.id, "aria-label": "Cancel task " + t.id, onclick: () => cancelTask(r.run_id, t.id) }, "Cancel") : null)));
  return h("table", { id: "tasks" }, h("caption", {}, "Tasks"),
    h("thead", {}, h("tr", {}, ["Task", "Status", "Attempts", "Integrated", "Tokens in / out", "USD", "Wall", "Gate or reason", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
    h("tbody", {}, rows));
}

function kv(pairs) {
  return h("dl", { class: "kv" }, pairs.filter((p) => p[1] !== undefined && p[1] !== null && p[1] !== "").map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]));
}

function table(caption, cols, rows) {
  return h("table", {}, h("caption", {}, caption),
    h("thead", {}, h("tr", {}, cols.map((c) => h("th", { scope: "col", class: c.endsWith("#") ? "num" : "" }, c.replace(/#$/, ""))))),
    h("tbody", {}, rows));
}

function renderTask() {
  const sec = $("task"), body = $("task-body");
  if (!S.sel.task) { sec.hidden = true; replace(body); return; }
  sec.hidden = false;
  $("task-h").textContent = "Task " + S.sel.task;
  const d = S.task;
  if (!d) { replace(body, h("p", { class: "muted" }, "loading…")); return; }
  if (notConnected(body, "The run store", d)) return;
  const t = d.task;
  const running = S.run && S.run.status === "running" && busy(t.status);
  const head = h("div", { class: "head" }, badge(t.status),
    running ? h("button", { class: "btn danger", "data-key": "task-cancel", onclick: () => cancelTask(d.run, t.id) }, "Cancel task " + t.id) : null,
    h("button", { class: "btn", "data-key": "task-close", onclick: () => go(d.run, "") }, "Close task details"));
  const facts = kv([
    ["Objective", d.objective], ["Agent", d.agent], ["Attempts", String(t.attempts)],
    ["Tokens", num(t.usage.input_tokens) + " in / " + num(t.usage.output_tokens) + " out"], ["Cost", usd(t.usage.usd)], ["Wall", secs(t.wall_s)],
    ["Lease", d.lease_s ? d.lease_s + " s" : "–"], ["Fencing token", d.fencing_token ? String(d.fencing_token) : "–"],
    ["Claim", d.claim ? d.claim.agent + " (token " + d.claim.token + ", lease " + d.claim.lease + ")" : undefined],
    ["Commit", t.commit ? h("code", {}, t.commit) : "–"], ["Integrated", t.integrated || "–"],
    ["Write scope", (d.write_scope || []).join(", ")], ["Trace", d.traceparent ? h("code", {}, d.traceparent) : undefined],
    ["Reason", t.reason], ["Summary", d.summary]]);
  const parts = [head, facts];
  const gates = [].concat(d.gate_failures && d.gate_failures.length ? d.gate_failures : (d.gate ? [d.gate] : []));
  parts.push(h("h3", {}, "Gate results"));
  parts.push(gates.length
    ? table("Gate rejections", ["Gate", "File", "Detail"], gates.map((g) => h("tr", {}, h("td", {}, g.gate + (g.pattern ? "/" + g.pattern : "")), h("td", {}, g.file ? g.file + (g.line ? ":" + g.line : "") : "–"), h("td", {}, g.detail))))
    : h("p", { class: "muted" }, t.status === "succeeded" ? "Every gate passed." : "No gate rejected this task."));
  if (d.checks && d.checks.length) {
    parts.push(table("Checks", ["Command", "Exit#", "Duration#"], d.checks.map((c) => h("tr", {}, h("td", {}, h("code", {}, c.command)), h("td", { class: "num " + (c.exit ? "st-failed" : "st-succeeded") }, String(c.exit) + (c.timed_out ? " (timed out)" : "")), h("td", { class: "num" }, secs(c.duration))))));
  }
  parts.push(h("h3", {}, "Diff stat"));
  parts.push(d.diff_stat && d.diff_stat.length
    ? table("Changed files", ["File", "Added#", "Deleted#"], d.diff_stat.map((f) => h("tr", {}, h("td", {}, h("code", {}, f.path)), h("td", { class: "num st-succeeded" }, f.binary ? "bin" : f.added ? "+" + f.added : "0"), h("td", { class: "num st-failed" }, f.binary ? "" : f.deleted ? "-" + f.deleted : "0"))))
    : h("p", { class: "muted" }, "No change recorded."));
  if (d.attempt_list && d.attempt_list.length) {
    parts.push(table("Attempts", ["#", "Role", "Started", "Exit#", "Fence#", "Base", "Candidate"], d.attempt_list.map((a) => h("tr", {},
      h("td", {}, String(a.n)), h("td", {}, a.role), h("td", {}, new Date(a.started).toLocaleTimeString()), h("td", { class: "num" }, a.exit === undefined || a.exit === null ? (a.finished ? "–" : "running") : String(a.exit)),
      h("td", { class: "num" }, String(a.fence || "–")), h("td", {}, h("code", {}, short(a.base))), h("td", {}, h("code", {}, short(a.commit)))))));
  }
  parts.push(h("h3", {}, "Log"));
  parts.push(d.log
    ? h("div", {}, h("p", { class: "muted" }, d.log.name + " (" + num(d.log.size) + " bytes" + (d.log.truncated ? ", last part" : "") + ")"), h("pre", { tabindex: "0", "aria-label": "Log " + d.log.name }, d.log.text || "(empty)"))
    : h("p", { class: "muted" }, "No log yet."));
  for (const [name, v] of [["Envelope", d.envelope], ["Receipt", d.receipt]]) {
    if (v) parts.push(h("details", {}, h("summary", {}, name + " (JSON)"), h("pre", {}, JSON.stringify(v, null, 2))));
  }
  replace(body, parts);
}

function renderBoard() {
  const body = $("board-body");
  const b = S.board;
  if (!b || notConnected(body, "The board", b)) return;
  const parts = [];
  parts.push(b.workers.length
    ? table("Workers", ["Worker", "Profile", "Skills", "Busy / slots#", "Last seen"], b.workers.map((w) => h("tr", {}, h("td", {}, w.id), h("td", {}, w.profile || "–"), h("td", {}, (w.skills || []).join(", ")), h("td", { class: "num" }, (w.busy || 0) + " / " + (w.slots || 0)), h("td", {}, w.last_seen ? new Date(w.last_seen).toLocaleTimeString() : "–"))))
    : h("p", { class: "muted" }, "No live workers."));
  parts.push(b.claims.length
    ? table("Claims", ["Task", "Worker", "Score#", "Fencing token#", "Lease#"], b.claims.map((c) => h("tr", {}, h("td", {}, c.task), h("td", {}, c.agent), h("td", { class: "num" }, Number(c.score).toFixed(2)), h("td", { class: "num" }, String(c.token)), h("td", { class: "num" }, String(c.lease)))))
    : h("p", { class: "muted" }, "No live claims."));
  if (b.tasks.length) {
    const by = {};
    for (const t of b.tasks) by[t.status] = (by[t.status] || 0) + 1;
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
  if (!b || notConnected(body, "The board", b)) return;
  const parts = [];
  parts.push(b.hints.length
    ? table("Resolution hints", ["Conflict type", "State", "Resolution", "Reviewer", "Note", "Actions"], b.hints.map((x, i) => h("tr", { "data-hint": x.type },
      h("td", {}, x.type), h("td", {}, badge(x.state)), h("td", {}, x.resolution), h("td", {}, x.reviewer || "–"),
      h("td", {}, x.state === "pending" ? [h("label", { class: "sr", for: "hint-note-" + i }, "Note for hint " + x.type), h("input", { type: "text", id: "hint-note-" + i, "data-hint": x.type, "data-key": "hint-note:" + x.type })] : (x.note || "")),
      h("td", {}, x.state === "pending" ? [
        h("button", { class: "btn go", "data-key": "approve:" + x.type, "aria-label": "Approve hint " + x.type, onclick: () => reviewHint(x.type, "approve") }, "Approve"),
        h("button", { class: "btn danger", "data-key": "reject:" + x.type, "aria-label": "Reject hint " + x.type, onclick: () => reviewHint(x.type, "reject") }, "Reject")] : "–"))))
    : h("p", { class: "muted" }, "No resolution hints."));
  parts.push(b.conflicts.length
    ? table("Conflicts", ["ID", "Type", "Tasks", "Files", "Resolution"], b.conflicts.map((c) => h("tr", {}, h("td", {}, h("code", {}, c.id)), h("td", {}, c.type), h("td", {}, c.tasks.join(", ")), h("td", {}, (c.files || []).join(", ")), h("td", {}, c.resolution || "–"))))
    : h("p", { class: "muted" }, "No conflicts recorded."));
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
  if (!v || notConnected(body, "The escrow queue", v)) return;
  if (!v.length) { replace(body, h("p", { class: "muted" }, "No escrow requests.")); return; }
  replace(body, table("Escrow requests", ["ID", "Operation", "Run / task", "State", "Reviewer", "Actions"], v.map((e) => h("tr", { "data-escrow": e.id },
    h("td", {}, h("code", {}, e.id)), h("td", {}, h("code", {}, e.operation), e.detail ? h("div", { class: "muted" }, e.detail) : null),
    h("td", {}, (e.run || "–") + " / " + (e.task || "–")), h("td", {}, badge(e.state)), h("td", {}, e.reviewer || "–"),
    h("td", {}, e.state === "pending" ? [
      h("button", { class: "btn go", "data-key": "escrow-approve:" + e.id, "aria-label": "Approve " + e.operation + " for " + (e.task || e.id), onclick: () => decide(e, "approve") }, "Approve"),
      h("button", { class: "btn danger", "data-key": "escrow-deny:" + e.id, "aria-label": "Deny " + e.operation + " for " + (e.task || e.id), onclick: () => decide(e, "deny") }, "Deny")] : "–")))));
}

function renderGateway() {
  const body = $("gateway-body");
  const g = S.gateway;
  if (!g) return;
  if (!g.connected) { replace(body, h("p", { class: "muted" }, "The gateway is not connected.")); return; }
  const parts = [];
  if (g.error) parts.push(h("p", { class: "st-failed" }, "Last read failed: " + g.error));
  const snap = g.snapshot;
  if (!snap) { parts.push(h("p", { class: "muted" }, "Waiting for the first sample…")); replace(body, parts); return; }
  parts.push(h("div", { class: "cards" }, snap.upstreams.map((u) => {
    const n = (g.history && g.history[u.name] || []).length;
    return h("div", { class: "card" }, h("h3", {}, "Upstream " + u.name),
      kv([["In flight", u.in_flight + " of " + u.concurrency_limit + " (limit)"], ["Queued", String(u.queued)], ["Breaker", h("span", { class: u.breaker === "open" ? "st-failed" : "" }, u.breaker)],
        ["Requests", num(u.requests)], ["429", num(u.status_429)], ["5xx", num(u.status_5xx)], ["Retries", num(u.retries)]]),
      n ? h("img", { src: "/api/gateway/chart.svg?upstream=" + encodeURIComponent(u.name) + "&n=" + n + "&t=" + Date.parse(snap.time), width: 640, height: 300,
        alt: "Concurrency limit, requests in flight and queued over the last " + n + " samples of upstream " + u.name }) : null);
  })));
  parts.push(snap.agents.length
    ? table("Tokens and dollars per agent", ["Agent", "In flight#", "Tokens in#", "Tokens out#", "USD#"], snap.agents.map((a) => h("tr", {}, h("td", {}, a.agent), h("td", { class: "num" }, String(a.in_flight)), h("td", { class: "num" }, num(a.input_tokens)), h("td", { class: "num" }, num(a.output_tokens)), h("td", { class: "num" }, usd(a.usd)))))
    : h("p", { class: "muted" }, "No agent has spent anything yet."));
  replace(body, parts);
}

async function loadPlots() {
  const body = $("plots-body");
  try {
    const r = await fetch("/api/plots");
    const ps = await r.json();
    if (!Array.isArray(ps) || !ps.length) { replace(body, h("p", { class: "muted" }, "No plots found.")); return; }
    replace(body, h("div", { class: "plots" }, ps.map((p) => h("figure", {},
      h("img", { src: "/api/plots/" + p.name.split("/").map(encodeURIComponent).join("/"), alt: "Plot " + p.title, loading: "lazy" }),
      h("figcaption", {}, p.title)))));
  } catch (e) {
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
