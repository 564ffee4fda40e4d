// fluvial dashboard: plain JavaScript over the REST API (Flink's routes), no build step, no library.
// Pages: #/ (cluster overview and jobs), #/job/<jobid> (actions, job graph, subtasks of every vertex,
// checkpoints, exceptions, configuration), #/taskmanagers and #/taskmanager/<id>[/log|/stdout].
// Live: the current page is fetched again every refresh interval (GET /config). Reading needs nothing; the
// actions (cancel, savepoint, stop) send the cluster's access token, which the page takes from `?token=` in its
// address (`fluvial run --web` and `fluvial cluster start` print such an address) or from the token field, and
// keeps for the browser tab (sessionStorage).
// Colours mean one thing each: blue running / busy, green finished, red failed, amber and orange low and high
// back pressure, purple a job or task on its way to another state, grey cancelled or not started.
"use strict";

const state = { refreshMs: 1000, timer: null, selected: {}, generation: 0, openTraces: new Set(), actions: {},
  savepointDir: "" };
const TOKEN_KEY = "fluvial-token";
const HISTORY_ROWS = 10;

// -- helpers -------------------------------------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function s(tag, attrs, ...children) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

async function get(path) {
  const response = await fetch(path, { headers: { Accept: "application/json" } });
  if (!response.ok) {
    let message = response.status + " " + response.statusText;
    try { message = (await response.json()).errors.join("; "); } catch (ignored) { /* not JSON */ }
    throw new Error(message);
  }
  return response.json();
}

const fmt = {
  count(n) { return n === null || n === undefined ? "—" : Math.round(n).toLocaleString("en-US"); },
  rate(n) {
    if (!n) return "0/s";
    if (n >= 1e6) return (n / 1e6).toFixed(1) + "M/s";
    if (n >= 1e3) return (n / 1e3).toFixed(1) + "k/s";
    return n.toFixed(n < 10 ? 1 : 0) + "/s";
  },
  bytes(n) {
    if (!n) return "0 B";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return (i ? n.toFixed(1) : n) + " " + units[i];
  },
  duration(ms) {
    if (ms === null || ms === undefined || ms < 0) return "—";
    if (ms < 1000) return ms + " ms";
    const total = Math.floor(ms / 1000), d = Math.floor(total / 86400), hrs = Math.floor(total / 3600) % 24;
    const min = Math.floor(total / 60) % 60, sec = total % 60;
    if (d) return d + "d " + hrs + "h";
    if (hrs) return hrs + "h " + String(min).padStart(2, "0") + "m";
    if (min) return min + "m " + String(sec).padStart(2, "0") + "s";
    return (ms / 1000).toFixed(1) + " s";
  },
  time(ms) { return ms && ms > 0 ? new Date(ms).toLocaleString() : "—"; },
  watermark(wm) {
    if (wm === null || wm === undefined) return "—";
    return wm > 1e11 && wm < 1e14 ? new Date(wm).toISOString().replace("T", " ").replace("Z", "") : fmt.count(wm);
  },
  ratio(r) { return Math.round(r * 100) + "%"; },
};

function badge(text) { return h("span", { class: "badge " + text }, text); }

// -- the access token and the actions ------------------------------------------------------------------------------

function token() { return sessionStorage.getItem(TOKEN_KEY) || ""; }

function takeTokenFromAddress() {
  const match = location.hash.match(/[?&]token=([^&]+)/);
  if (!match) return;
  sessionStorage.setItem(TOKEN_KEY, decodeURIComponent(match[1]));
  history.replaceState(null, "", location.pathname + location.hash.replace(/[?&]token=[^&]+/, ""));
}

async function send(method, path, body) {
  const headers = { Accept: "application/json", Authorization: "Bearer " + token() };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  let data = {};
  try { data = await response.json(); } catch (ignored) { /* no body */ }
  if (response.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    throw new Error("the cluster refused the access token: paste the one `fluvial cluster start` or `fluvial run " +
      "--web` printed (in ~/.fluvial/cluster.json for a session cluster) into the token field");
  }
  if (!response.ok) throw new Error((data.errors || [response.status + " " + response.statusText]).join("; "));
  return data;
}

function say(jobId, text, kind) {
  state.actions[jobId] = { text, kind };
  refresh();
}

async function cancelJob(jobId) {
  try {
    await send("PATCH", "jobs/" + jobId + "?mode=cancel");
    say(jobId, "Cancel requested.", "info");
  } catch (error) { say(jobId, "Cancel failed: " + error.message, "error"); }
}

async function savepointJob(jobId, stop) {
  const what = stop ? "Stop with a savepoint" : "Savepoint";
  const directory = state.savepointDir.trim() || null;
  try {
    const started = stop
      ? await send("POST", "jobs/" + jobId + "/stop", { targetDirectory: directory, drain: false })
      : await send("POST", "jobs/" + jobId + "/savepoints", { "target-directory": directory, "cancel-job": false });
    say(jobId, what + " in progress…", "info");
    for (;;) {
      await new Promise((resolve) => setTimeout(resolve, 250));
      const status = await get("jobs/" + jobId + "/savepoints/" + started["request-id"]);
      if (status.status.id !== "COMPLETED") continue;
      const failure = status.operation["failure-cause"];
      if (failure) say(jobId, what + " failed: " + failure.message, "error");
      else say(jobId, what + " completed: " + status.operation.location, "done");
      return;
    }
  } catch (error) { say(jobId, what + " failed: " + error.message, "error"); }
}

function actionsPanel(job) {
  const jobId = job.jid;
  const live = ["RUNNING", "RESTARTING", "CREATED", "INITIALIZING"].includes(job.state);
  const result = state.actions[jobId];
  const tokenField = token() ? null : h("input", { id: "token-input", type: "password", size: 24,
    placeholder: "access token", oninput: (e) => sessionStorage.setItem(TOKEN_KEY, e.target.value.trim()) });
  const directory = h("input", { id: "savepoint-dir", size: 34, placeholder: "savepoint directory (state.savepoints.dir)",
    value: state.savepointDir, oninput: (e) => { state.savepointDir = e.target.value; } });
  return h("section", { class: "panel actions", id: "actions" },
    live ? [
      h("button", { id: "cancel-job", class: "action danger", onclick: () => cancelJob(jobId) }, "Cancel job"),
      h("button", { id: "trigger-savepoint", class: "action", onclick: () => savepointJob(jobId, false) },
        "Trigger savepoint"),
      h("button", { id: "stop-job", class: "action", onclick: () => savepointJob(jobId, true) },
        "Stop with savepoint"),
      directory, tokenField]
      : h("span", { class: "muted" }, "The job has ended: nothing to cancel, savepoint or stop."),
    result ? h("div", { id: "action-result", class: "action-result " + result.kind }, result.text) : null);
}

function clip(text, width) { return text.length > width ? text.slice(0, width - 1) + "…" : text; }

function card(label, value) {
  return h("div", { class: "card" }, h("div", { class: "label" }, label), h("div", { class: "value" }, value));
}

function table(headers, rows, rowClass) {
  return h("div", { class: "scroll" }, h("table", {},
    h("thead", {}, h("tr", {}, headers.map(([text, cls]) => h("th", { class: cls || null }, text)))),
    h("tbody", { class: rowClass ? rowClass + "s" : null }, rows)));
}

function setRefreshState(ok, message) {
  const indicator = document.getElementById("refresh-state");
  indicator.textContent = ok ? "live · " + new Date().toLocaleTimeString() : "disconnected";
  indicator.classList.toggle("stale", !ok);
  const banner = document.getElementById("banner");
  banner.textContent = message || "";
  banner.classList.toggle("hidden", ok);
}

// -- routing -------------------------------------------------------------------------------------------------------

function route() {
  const job = location.hash.match(/^#\/job\/([0-9a-fA-F]+)/);
  if (job) return { page: "job", jobId: job[1] };
  const manager = location.hash.match(/^#\/taskmanager\/([^/?&]+)(?:\/(log|stdout))?/);
  if (manager) return { page: "taskmanager", id: decodeURIComponent(manager[1]), tab: manager[2] || "metrics" };
  if (/^#\/taskmanagers/.test(location.hash)) return { page: "taskmanagers" };
  return { page: "overview" };
}

function pageOf(current) {
  if (current.page === "job") return jobPage(current.jobId);
  if (current.page === "taskmanagers") return taskManagersPage();
  if (current.page === "taskmanager") return taskManagerPage(current.id, current.tab);
  return overviewPage();
}

async function refresh() {
  const generation = ++state.generation;
  const current = route();
  try {
    const content = await pageOf(current);
    if (generation !== state.generation) return;  // a newer refresh (or navigation) owns the page
    const app = document.getElementById("app");
    const scroll = window.scrollY;
    const focused = document.activeElement && document.activeElement.id;
    app.replaceChildren(content);
    if (focused && document.getElementById(focused)) document.getElementById(focused).focus();
    window.scrollTo(0, scroll);
    setRefreshState(true);
  } catch (error) {
    if (generation !== state.generation) return;
    setRefreshState(false, "Cannot reach the cluster: " + error.message +
      ". An embedded job's dashboard stops when the job ends (with `fluvial run --web`, when you press Ctrl-C).");
  }
}

function schedule() {
  clearTimeout(state.timer);
  state.timer = setTimeout(async () => { await refresh(); schedule(); }, state.refreshMs);
}

// -- overview page -------------------------------------------------------------------------------------------------

async function overviewPage() {
  const [overview, jobs] = await Promise.all([get("overview"), get("jobs/overview")]);
  const rows = jobs.jobs.slice().sort((a, b) => b["start-time"] - a["start-time"]).map((job) =>
    h("tr", { class: "job-row" },
      h("td", {}, h("a", { href: "#/job/" + job.jid, class: "job-link" }, job.name)),
      h("td", {}, badge(job.state)),
      h("td", {}, fmt.time(job["start-time"])),
      h("td", { class: "num" }, fmt.duration(job.duration)),
      h("td", { class: "num" }, job.tasks.total),
      h("td", { class: "mono muted" }, job.jid)));
  return h("div", {},
    h("div", { class: "cards", id: "overview" },
      card("Task managers", overview.taskmanagers),
      card("Slots available", overview["slots-available"] + " / " + overview["slots-total"]),
      card("Running jobs", overview["jobs-running"]),
      card("Finished", overview["jobs-finished"]),
      card("Cancelled", overview["jobs-cancelled"]),
      card("Failed", overview["jobs-failed"])),
    h("section", { class: "panel" }, h("h2", {}, "Jobs"),
      rows.length ? table([["Name"], ["State"], ["Started"], ["Duration", "num"], ["Tasks", "num"], ["Job id"]], rows)
        : h("p", { class: "empty" }, "No jobs yet.")));
}

// -- job page ------------------------------------------------------------------------------------------------------

async function jobPage(jobId) {
  const base = "jobs/" + jobId;
  const [job, checkpoints, exceptions] = await Promise.all([
    get(base), get(base + "/checkpoints"), get(base + "/exceptions")]);
  const pressures = await Promise.all(job.vertices.map((v) =>
    get(base + "/vertices/" + v.id + "/backpressure").catch(() => null)));
  const levels = {};
  job.vertices.forEach((v, i) => {
    const pressure = pressures[i];
    levels[v.id] = {
      level: pressure ? pressure["backpressure-level"] : "ok",
      busy: pressure ? Math.max(0, ...pressure.subtasks.map((t) => t.busyRatio)) : 0,
    };
  });
  const selected = state.selected[jobId];
  const [vertices, config] = await Promise.all([
    Promise.all(job.vertices.map((v) => get(base + "/vertices/" + v.id))),
    get(base + "/config").catch(() => null)]);
  // the vertex clicked in the graph comes first; every vertex has its subtasks panel
  const order = vertices.map((v, i) => i).sort((a, b) =>
    (vertices[b].id === selected) - (vertices[a].id === selected) || a - b);
  const waiting = job["waiting-for-slots"];
  return h("div", {},
    jobHeader(job),
    waiting ? h("section", { class: "panel waiting", id: "waiting-for-slots" },
      "This job is " + waiting.description + ".") : null,
    actionsPanel(job),
    h("section", { class: "panel" }, h("h2", {}, "Job graph"),
      h("div", { class: "graph-wrap" }, jobGraph(job, levels, selected, jobId)),
      h("div", { class: "legend" }, h("span", { class: "busy" }, "busy"),
        h("span", { class: "ok" }, "no back pressure"), h("span", { class: "low" }, "low back pressure"),
        h("span", { class: "high" }, "high back pressure"))),
    order.map((i) => subtasksPanel(vertices[i], pressures[i])),
    h("div", { class: "two-col" }, checkpointsPanel(checkpoints), exceptionsPanel(exceptions)),
    config ? configPanel(config) : null);
}

function jobHeader(job) {
  const records = job.vertices.reduce((sum, v) => sum + v.metrics["write-records"], 0);
  return h("div", {},
    h("div", { class: "job-header" }, h("h1", { id: "job-name" }, job.name), badge(job.state)),
    h("div", { class: "job-meta" },
      h("span", {}, "Job id ", h("b", { class: "mono" }, job.jid)),
      h("span", {}, "Started ", h("b", {}, fmt.time(job["start-time"]))),
      h("span", {}, "Duration ", h("b", {}, fmt.duration(job.duration))),
      h("span", {}, "Vertices ", h("b", {}, job.vertices.length)),
      h("span", {}, "Records sent ", h("b", {}, fmt.count(records)))));
}

// Layered layout: a vertex's column is its longest path from a source; within a column, vertices are ordered
// by the mean row of their inputs, so edges cross as little as a simple rule allows.
function layout(job) {
  const inputs = {};
  for (const node of job.plan.nodes) inputs[node.id] = (node.inputs || []).map((i) => i.id);
  const column = {};
  const depth = (id, seen) => {
    if (column[id] !== undefined) return column[id];
    if (seen.has(id)) return 0;
    seen.add(id);
    const preds = inputs[id] || [];
    column[id] = preds.length ? Math.max(...preds.map((p) => depth(p, seen) + 1)) : 0;
    return column[id];
  };
  job.vertices.forEach((v) => depth(v.id, new Set()));
  const columns = [];
  job.vertices.forEach((v) => (columns[column[v.id]] = columns[column[v.id]] || []).push(v));
  const row = {};
  columns.forEach((members) => {
    members.sort((a, b) => meanRow(a) - meanRow(b));
    members.forEach((v, i) => (row[v.id] = i));
  });
  function meanRow(v) {
    const preds = inputs[v.id] || [];
    return preds.length ? preds.reduce((sum, p) => sum + (row[p] || 0), 0) / preds.length : 0;
  }
  return { columns, inputs };
}

const BOX = { width: 250, head: 26, line: 17, pad: 10, gapX: 110, gapY: 34 };

function boxHeight(v) { return BOX.head + BOX.pad + v.operators.length * BOX.line + 46; }

function jobGraph(job, levels, selected, jobId) {
  const { columns, inputs } = layout(job);
  const heights = columns.map((members) => members.reduce((sum, v) => sum + boxHeight(v), 0)
    + BOX.gapY * (members.length - 1));
  const height = Math.max(...heights, 60) + 40;
  const width = columns.length * BOX.width + (columns.length - 1) * BOX.gapX + 40;
  const position = {};
  columns.forEach((members, c) => {
    let y = 20 + (height - 40 - heights[c]) / 2;
    for (const v of members) {
      position[v.id] = { x: 20 + c * (BOX.width + BOX.gapX), y, h: boxHeight(v) };
      y += boxHeight(v) + BOX.gapY;
    }
  });
  const svg = s("svg", { class: "job-graph", width, height, viewBox: `0 0 ${width} ${height}` },
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 7,
      markerHeight: 7, orient: "auto-start-reverse" }, s("path", { d: "M0,0 L10,5 L0,10 z", fill: "#98a2b8" }))));
  for (const node of job.plan.nodes) {
    for (const input of node.inputs || []) svg.append(edge(position[input.id], position[node.id], input));
  }
  for (const v of job.vertices) {
    svg.append(vertexBox(v, position[v.id], levels[v.id] || { level: "ok", busy: 0 }, v.id === selected, jobId));
  }
  return svg;
}

function edge(from, to, input) {
  if (!from || !to) return s("g", {});
  const x1 = from.x + BOX.width, y1 = from.y + from.h / 2, x2 = to.x - 2, y2 = to.y + to.h / 2;
  const mid = (x1 + x2) / 2;
  const label = input.ship_strategy + (input.side_output ? " · side " + input.side_output : "");
  const labelWidth = label.length * 6.6 + 12;
  const ly = (y1 + y2) / 2;
  return s("g", { class: "edge", "data-ship-strategy": input.ship_strategy },
    s("path", { d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}`, "marker-end": "url(#arrow)" }),
    s("rect", { x: mid - labelWidth / 2, y: ly - 9, width: labelWidth, height: 18 }),
    s("text", { x: mid, y: ly + 4, "text-anchor": "middle" }, label));
}

function vertexBox(v, at, load, selected, jobId) {
  const group = s("g", { class: `vertex ${load.level} state-${v.status}${selected ? " selected" : ""}`,
    "data-name": v.name,
    "data-vertex-id": v.id, transform: `translate(${at.x},${at.y})`,
    onclick: () => { state.selected[jobId] = v.id; refresh(); } },
  s("title", {}, v.name),
  s("rect", { class: "box", width: BOX.width, height: at.h }),
  s("rect", { class: "head", width: BOX.width, height: BOX.head }),
  s("rect", { class: "head", y: BOX.head - 8, width: BOX.width, height: 8 }),
  s("text", { class: "title", x: 10, y: 17 },
    clip(`${v.status} · parallelism ${v.parallelism} · busy ${fmt.ratio(load.busy)}`, 44)));
  v.operators.forEach((name, i) => group.append(
    s("text", { class: "op", x: 12, y: BOX.head + BOX.pad + 12 + i * BOX.line }, (i ? "→ " : "") + clip(name, 32))));
  const foot = at.h - 34;
  group.append(
    s("text", { class: "foot", x: 12, y: foot }, "slot sharing group: " + clip(v.slotSharingGroup || "default", 18)),
    s("text", { class: "foot", x: 12, y: foot + 15 },
      `in ${fmt.count(v.metrics["read-records"])} · out ${fmt.count(v.metrics["write-records"])}`),
    // how busy its busiest subtask is: blue, the colour of busy alone (red is failure, orange back pressure)
    s("rect", { class: "busy-track", x: 12, y: at.h - 12, width: BOX.width - 24, height: 5, rx: 2.5 }),
    s("rect", { class: "busy-fill", x: 12, y: at.h - 12, width: Math.max(0, (BOX.width - 24) * load.busy),
      height: 5, rx: 2.5 }));
  return group;
}

function subtasksPanel(vertex, pressure) {
  const levelOf = {};
  if (pressure) for (const sub of pressure.subtasks) levelOf[sub.subtask] = sub["backpressure-level"];
  const rows = vertex.subtasks.map((t) => {
    const busy = t.busyTimeMsPerSecond / 10, bp = t.backPressuredTimeMsPerSecond / 10;
    return h("tr", { class: "subtask-row" },
      h("td", { class: "num" }, t.subtask),
      h("td", {}, badge(t.status)),
      h("td", { class: "num" }, t.attempt),
      h("td", { class: "mono" }, h("a", { href: "#/taskmanager/" + encodeURIComponent(t["taskmanager-id"]) },
        t["taskmanager-id"])),
      h("td", { class: "num" }, fmt.count(t.metrics["read-records"])),
      h("td", { class: "num" }, fmt.count(t.metrics["write-records"])),
      h("td", { class: "num" }, fmt.rate(t.numRecordsOutPerSecond)),
      h("td", { class: "num" }, fmt.bytes(t.metrics["read-bytes"])),
      h("td", { class: "num" }, fmt.bytes(t.metrics["write-bytes"])),
      h("td", { class: "mono" }, fmt.watermark(t.currentInputWatermark)),
      h("td", { class: "mono" }, fmt.watermark(t.currentOutputWatermark)),
      h("td", {}, h("span", { class: "bar", title: `busy ${Math.round(busy)}%, back-pressured ${Math.round(bp)}%` },
        h("i", { class: "busy", style: `width:${busy}%` }), h("i", { class: "bp", style: `width:${bp}%` })),
      " ", fmt.ratio(t.busyTimeMsPerSecond / 1000)),
      h("td", {}, badge(levelOf[t.subtask] || "ok")));
  });
  return h("section", { class: "panel subtasks", id: "subtasks-" + vertex.id, "data-vertex-name": vertex.name },
    h("h2", {}, "Subtasks of ", h("span", { class: "vertex-name" }, vertex.name)),
    table([["#", "num"], ["State"], ["Attempt", "num"], ["Task manager"], ["Records in", "num"],
      ["Records out", "num"], ["Out rate", "num"], ["Bytes in", "num"], ["Bytes out", "num"], ["Input watermark"],
      ["Output watermark"], ["Busy / back-pressured"], ["Back pressure"]], rows));
}

function checkpointsPanel(data) {
  const c = data.counts;
  const counts = h("div", { class: "counts", id: "checkpoint-counts" },
    h("div", {}, "Triggered", h("b", {}, c.triggered)), h("div", {}, "In progress", h("b", {}, c.in_progress)),
    h("div", {}, "Completed", h("b", { id: "checkpoints-completed" }, c.completed)),
    h("div", {}, "Failed", h("b", {}, c.failed)), h("div", {}, "Restored", h("b", {}, c.restored)));
  const rows = data.history.slice(0, HISTORY_ROWS).map((cp) => h("tr", { class: "checkpoint-row", "data-checkpoint-id": cp.id },
    h("td", { class: "num" }, cp.id),
    h("td", {}, badge(cp.status)),
    h("td", {}, cp.is_savepoint ? "savepoint" : cp.checkpoint_type === "UNALIGNED_CHECKPOINT" ? "unaligned" : "checkpoint"),
    h("td", {}, fmt.time(cp.trigger_timestamp)),
    h("td", { class: "num" }, fmt.duration(cp.end_to_end_duration)),
    h("td", { class: "num" }, fmt.duration(cp.alignment_duration || 0)),
    h("td", { class: "num" }, fmt.bytes(cp.state_size)),
    h("td", { class: "num" }, fmt.bytes(cp.persisted_data || 0)),
    h("td", { class: "num" }, `${cp.num_acknowledged_subtasks}/${cp.num_subtasks}`)));
  return h("section", { class: "panel", id: "checkpoints" }, h("h2", {}, "Checkpoints"), counts,
    rows.length ? table([["Id", "num"], ["Status"], ["Type"], ["Triggered"], ["Duration", "num"], ["Alignment", "num"],
      ["Size", "num"], ["In-flight", "num"], ["Acks", "num"]], rows) : h("p", { class: "empty" }, "No checkpoints yet."));
}

function exceptionsPanel(data) {
  const entries = data.exceptionHistory.entries;
  const items = entries.map((e) => h("div", { class: "exception" },
    h("div", { class: "what" }, e.exceptionName + ": " + clip(e.message || "", 160)),
    h("div", { class: "muted" }, fmt.time(e.timestamp),
      e.taskName ? " · " + e.taskName : " · the job", e.operatorName ? " · operator " + e.operatorName : "",
      e.concurrentExceptions.length ? ` · ${e.concurrentExceptions.length} concurrent` : ""),
    trace(e)));
  return h("section", { class: "panel", id: "exceptions" }, h("h2", {}, "Exceptions"),
    items.length ? items : h("p", { class: "empty" }, "No exceptions."));
}

function trace(entry) {
  const key = entry.timestamp + ":" + entry.exceptionName;
  const details = h("details", { open: state.openTraces.has(key) ? "" : null },
    h("summary", {}, "stack trace"), h("pre", { class: "trace" }, entry.stacktrace));
  details.addEventListener("toggle", () => {
    if (details.open) state.openTraces.add(key); else state.openTraces.delete(key);
  });
  return details;
}

function configPanel(config) {
  const execution = config["execution-config"] || {};
  const rows = [["Execution mode", execution["execution-mode"]], ["Restart strategy", execution["restart-strategy"]],
    ["Job parallelism", execution["job-parallelism"]], ["Object reuse", String(execution["object-reuse-mode"])]]
    .map(([key, value]) => h("tr", {}, h("td", {}, key), h("td", { class: "mono" }, value)));
  const keyRows = (entries) => Object.entries(entries || {}).map(([key, value]) =>
    h("tr", { class: "config-row" }, h("td", { class: "mono" }, key), h("td", { class: "mono" }, value)));
  const configured = keyRows(execution.configuration), user = keyRows(execution["user-config"]);
  return h("section", { class: "panel", id: "job-config" }, h("h2", {}, "Configuration"),
    table([["Setting"], ["Value"]], rows),
    h("h2", { class: "sub" }, "Configuration keys the job set"),
    configured.length ? table([["Key"], ["Value"]], configured) : h("p", { class: "empty" }, "None: every default."),
    user.length ? [h("h2", { class: "sub" }, "Global job parameters"), table([["Key"], ["Value"]], user)] : null);
}

// -- task managers -------------------------------------------------------------------------------------------------

async function taskManagersPage() {
  const data = await get("taskmanagers");
  const rows = data.taskmanagers.map((m) => h("tr", { class: "taskmanager-row" },
    h("td", {}, h("a", { href: "#/taskmanager/" + encodeURIComponent(m.id), class: "taskmanager-link" }, m.id)),
    h("td", { class: "mono" }, m.path),
    h("td", { class: "num" }, m.slotsNumber), h("td", { class: "num" }, m.freeSlots),
    h("td", { class: "num" }, m.hardware.cpuCores), h("td", { class: "num" }, fmt.bytes(m.hardware.physicalMemory))));
  return h("section", { class: "panel", id: "taskmanagers" }, h("h2", {}, "Task managers"),
    rows.length ? table([["Id"], ["Where"], ["Slots", "num"], ["Free slots", "num"], ["CPU cores", "num"],
      ["Memory", "num"]], rows) : h("p", { class: "empty" }, "No task managers (no job is running)."));
}

async function taskManagerPage(id, tab) {
  const base = "taskmanagers/" + encodeURIComponent(id);
  const manager = await get(base);
  const metric = (name) => manager.metrics[name];
  const tabs = h("div", { class: "tabs" }, ["metrics", "log", "stdout"].map((name) =>
    h("a", { href: "#/taskmanager/" + encodeURIComponent(id) + (name === "metrics" ? "" : "/" + name),
      class: "tab" + (name === tab ? " active" : ""), id: "tab-" + name }, name === "metrics" ? "Metrics" :
      name === "log" ? "Log" : "Stdout")));
  let body;
  if (tab === "log" || tab === "stdout") {
    const response = await fetch(base + "/" + tab);
    body = h("pre", { class: "log", id: "taskmanager-" + tab }, await response.text());
  } else {
    const gcs = Object.keys(manager.metrics).filter((k) => k.includes("GarbageCollector"))
      .map((k) => k.split(".")[3] + " " + manager.metrics[k]).join(", ");
    body = h("div", { class: "cards", id: "taskmanager-metrics" },
      card("Slots", manager.freeSlots + " free / " + manager.slotsNumber),
      card("CPU load", metric("Status.Python.CPU.Load") === undefined ? "—" : fmt.ratio(metric("Status.Python.CPU.Load"))),
      card("CPU time", fmt.duration(metric("Status.Python.CPU.Time"))),
      card("Memory (RSS)", fmt.bytes(metric("Status.Python.Memory.RSS"))),
      card("Threads", fmt.count(metric("Status.Python.Threads.Count"))),
      card("GC collections", gcs || "—"));
  }
  return h("div", {},
    h("div", { class: "job-header" }, h("h1", { id: "taskmanager-id" }, "Task manager " + manager.id)),
    h("div", { class: "job-meta" }, h("span", {}, "Process ", h("b", {}, manager.pid || "—")),
      h("span", {}, "Where ", h("b", { class: "mono" }, manager.path)),
      h("span", {}, "Log ", h("b", { class: "mono" }, manager.logFile || "—"))),
    tabs, h("section", { class: "panel" }, body));
}

// -- start ---------------------------------------------------------------------------------------------------------

async function start() {
  try {
    const config = await get("config");
    state.refreshMs = Math.max(250, config["refresh-interval"] || 1000);
    document.getElementById("version").textContent = config["flink-version"] || "";
  } catch (ignored) { /* defaults */ }
  window.addEventListener("hashchange", () => { takeTokenFromAddress(); refresh(); schedule(); });
  takeTokenFromAddress();
  await refresh();
  schedule();
}

start();
