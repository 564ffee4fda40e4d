// fluvial dashboard: plain JavaScript over the REST API (Flink's routes), no build step, no library.
// Pages: #/ (cluster overview and jobs) and #/job/<jobid> (job graph, subtasks, checkpoints, exceptions).
// Live: the current page is fetched again every refresh interval (GET /config), only with GET requests.
"use strict";

const state = { refreshMs: 1000, timer: null, selected: {}, generation: 0, openTraces: new Set() };
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
  const match = location.hash.match(/^#\/job\/([0-9a-fA-F]+)/);
  return match ? { page: "job", jobId: match[1] } : { page: "overview" };
}

async function refresh() {
  const generation = ++state.generation;
  const current = route();
  try {
    const content = current.page === "job" ? await jobPage(current.jobId) : await overviewPage();
    if (generation !== state.generation) return;  // a newer refresh (or navigation) owns the page
    const app = document.getElementById("app");
    const scroll = window.scrollY;
    app.replaceChildren(content);
    window.scrollTo(0, scroll);
    setRefreshState(true);
  } catch (error) {
    if (generation !== state.generation) return;
    setRefreshState(false, "Cannot reach the cluster: " + error.message +
      ". An embedded job's dashboard stops when the job ends.");
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
  const known = job.vertices.some((v) => v.id === state.selected[jobId]);
  if (!known && job.vertices.length) state.selected[jobId] = job.vertices[0].id;
  const selected = state.selected[jobId];
  const vertex = selected ? await get(base + "/vertices/" + selected) : null;
  const selectedPressure = pressures[job.vertices.findIndex((v) => v.id === selected)];
  const waiting = job["waiting-for-slots"];
  return h("div", {},
    jobHeader(job),
    waiting ? h("section", { class: "panel waiting", id: "waiting-for-slots" },
      "This job is " + waiting.description + ".") : null,
    h("section", { class: "panel" }, h("h2", {}, "Job graph"),
      h("div", { class: "graph-wrap" }, jobGraph(job, levels, selected, jobId)),
      h("div", { class: "legend" }, h("span", { class: "ok" }, "no back pressure"),
        h("span", { class: "low" }, "low"), h("span", { class: "high" }, "high"))),
    vertex ? subtasksPanel(vertex, selectedPressure) : null,
    h("div", { class: "two-col" }, checkpointsPanel(checkpoints), exceptionsPanel(exceptions)));
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
  const group = s("g", { class: `vertex ${load.level}${selected ? " selected" : ""}`, "data-name": v.name,
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
    // how busy its busiest subtask is, as Flink's graph shows it: cool when idle, hot when busy
    s("rect", { class: "busy-track", x: 12, y: at.h - 12, width: BOX.width - 24, height: 5, rx: 2.5 }),
    s("rect", { class: "busy-fill", x: 12, y: at.h - 12, width: Math.max(0, (BOX.width - 24) * load.busy),
      height: 5, rx: 2.5, fill: `hsl(${Math.round(210 - 210 * load.busy)}, 70%, 50%)` }));
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
      h("td", { class: "mono" }, t["taskmanager-id"]),
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
  return h("section", { class: "panel", id: "subtasks" },
    h("h2", {}, "Subtasks of ", h("span", { id: "selected-vertex" }, vertex.name)),
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
    h("td", {}, cp.is_savepoint ? "savepoint" : "checkpoint"),
    h("td", {}, fmt.time(cp.trigger_timestamp)),
    h("td", { class: "num" }, fmt.duration(cp.end_to_end_duration)),
    h("td", { class: "num" }, fmt.bytes(cp.state_size)),
    h("td", { class: "num" }, `${cp.num_acknowledged_subtasks}/${cp.num_subtasks}`)));
  return h("section", { class: "panel", id: "checkpoints" }, h("h2", {}, "Checkpoints"), counts,
    rows.length ? table([["Id", "num"], ["Status"], ["Type"], ["Triggered"], ["Duration", "num"], ["Size", "num"],
      ["Acks", "num"]], rows) : h("p", { class: "empty" }, "No checkpoints yet."));
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

// -- start ---------------------------------------------------------------------------------------------------------

async function start() {
  try {
    const config = await get("config");
    state.refreshMs = Math.max(250, config["refresh-interval"] || 1000);
    document.getElementById("version").textContent = config["flink-version"] || "";
  } catch (ignored) { /* defaults */ }
  window.addEventListener("hashchange", () => { refresh(); schedule(); });
  await refresh();
  schedule();
}

start();
