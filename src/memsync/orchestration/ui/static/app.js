// memsync status page: vanilla JavaScript, no dependencies, nothing fetched from elsewhere.
// Every string from memsync's data goes into the page as text (never as HTML).
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const REFRESH_MS = 5000;
const PAGE = {
  "/": "overview", "/history": "history", "/conflicts": "conflicts",
  "/memory": "memory", "/cutover": "cutover",
}[location.pathname] || "overview";

// --- small helpers ------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = value;
    else el.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

const SVG_NS = "http://www.w3.org/2000/svg";
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs || {})) el.setAttribute(key, value);
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-CSRF-Token": CSRF },
    body: JSON.stringify(body),
  };
  let response;
  try {
    response = await fetch(path, { credentials: "same-origin", ...options });
  } catch (err) {
    throw new Error("memsync's status page is not answering (was `memsync ui` stopped?)");
  }
  let data = null;
  try { data = await response.json(); } catch (err) { /* a non-JSON answer: say so below */ }
  if (!response.ok) {
    throw new Error((data && data.error) || `the server answered ${response.status}`);
  }
  return data;
}

function when(instant) {
  if (!instant) return "never";
  const d = new Date(instant);
  if (isNaN(d)) return instant;
  const today = new Date().toISOString().slice(0, 10);
  const iso = d.toISOString();
  return iso.slice(0, 10) === today ? iso.slice(11, 19) + "Z" : iso.slice(0, 16).replace("T", " ") + "Z";
}

function ago(instant) {
  if (!instant) return "";
  const seconds = (Date.now() - new Date(instant).getTime()) / 1000;
  if (!isFinite(seconds)) return "";
  if (seconds < 90) return "just now";
  if (seconds < 5400) return `${Math.round(seconds / 60)} min ago`;
  if (seconds < 129600) return `${Math.round(seconds / 3600)} h ago`;
  return `${Math.round(seconds / 86400)} days ago`;
}

function took(seconds) {
  if (seconds === null || seconds === undefined) return "";
  if (seconds < 1) return `${Math.round(seconds * 1000)} ms`;
  return seconds < 120 ? `${seconds.toFixed(1)} s` : `${(seconds / 60).toFixed(1)} min`;
}

function bytes(n) {
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}

function banner(kind, text) {
  return h("div", { class: `banner ${kind}`, role: kind === "error" ? "alert" : "status" }, text);
}

function setBanners(list) {
  document.getElementById("banners").replaceChildren(...list);
}

function stat(label, value, tone, testid) {
  return h("div", { class: `card stat ${tone || ""}`, "data-testid": testid },
    h("div", { class: "value" }, value), h("div", { class: "label" }, label));
}

function stamp() {
  document.getElementById("updated").textContent = `updated ${new Date().toLocaleTimeString()}`;
}

function render(...nodes) {
  document.getElementById("app").replaceChildren(...nodes);
}

// --- overview -----------------------------------------------------------------------------

function statusBanners(report) {
  const list = [];
  if (!report.config.ok) {
    list.push(banner("error", `Config error: ${report.config.error}. ` +
      "The figures below come from the staging database; this page follows the file once it is fixed."));
  }
  if (report.database.error) list.push(banner("error", `Staging database: ${report.database.error}`));
  else if (!report.database.exists) {
    list.push(banner("warn", `No staging database yet (${report.database.path}): run \`memsync sync\` once.`));
  }
  for (const [, p] of Object.entries(report.providers)) {  // unsynced for an hour or more
    const lag = p.state && p.state.unsynced;
    if (lag && lag.level !== "behind") list.push(banner(lag.level === "alarm" ? "error" : "warn", lag.text));
  }
  for (const [, found] of Object.entries(report.discovery || {})) {  // part of the team unseen
    if (found.warning) {
      list.push(banner("warn", `${found.warning}. The ${found.noun || "scopes"} not found are not synced, ` +
        "backed up or verified: see docs/mem0-server.md (a team past 10,000 memories) for what to set up."));
    }
  }
  for (const [, p] of Object.entries(report.providers)) {  // a store's events stopped arriving
    if (p.webhooks && p.webhooks.state === "silent") list.push(banner("warn", p.webhooks.line));
  }
  for (const [name, count] of Object.entries(report.rollbacks || {})) {
    list.push(banner("warn", `Rolled back in ${name}: ${count} ${count === 1 ? "memory is an older version" : "memories are older versions"} ` +
      `than memsync saw there (restored from a backup? writes lost?). Nothing was copied; settle ${count === 1 ? "it" : "them"} on the Conflicts page ` +
      `or with \`memsync resolve --rolled-back ${name} --keep NAME\`.`));
  }
  for (const [, disk] of Object.entries(report.disk || {})) {  // a layout growing past its budget
    if (disk.warning) list.push(banner("warn", disk.warning));
  }
  const failing = ((report.verify || {}).pairs || []).filter(p => p.failing);
  if (failing.length) {
    list.push(banner("error", `Verify: ${failing.length} linked pair${failing.length === 1 ? " does" : "s do"} not hold the same memories: ` +
      failing.map(p => `${p.a} ↔ ${p.b} (${p.error ? `could not verify: ${p.error}` : `${p.differences} difference(s)`} at ${when(p.at)})`).join("; ") +
      ". Run `memsync verify A B` for the list."));
  }
  if (report.cycle && report.cycle.running) {
    list.push(banner("info", `A sync cycle is running now (pid ${report.cycle.pid ?? "?"}); the figures update when it finishes.`));
  }
  return list;
}

function stateBadge(state) {
  if (!state) return h("span", { class: "badge none" }, "no cycle yet");
  const labels = { ok: state.complete ? "ok, complete" : "ok", partial: "partial", busy: "busy", refused: "refused" };
  const lag = state.unsynced;  // how long it has gone unsynced: louder past an hour, a day
  const tone = lag && lag.level !== "behind" ? (lag.level === "alarm" ? "bad" : "warn") : state.kind;
  const label = (labels[state.kind] || state.kind) + (lag ? ` ${lag.for}` : "");
  const why = state.kind === "refused" ? state.gate : state.reason;
  return h("span", {},
    h("span", { class: `badge ${tone}`, "data-testid": "state" }, label),
    state.since ? h("span", { class: "reason" }, `busy since ${when(state.since)}`) : null,
    why ? h("span", { class: "reason" }, why) : null);
}

function diskText(disk) {  // what the provider's stores take on disk, and their growth a day
  const where = `${size(disk.bytes)} on disk in ${disk.stores} store${disk.stores === 1 ? "" : "s"}`;
  if (disk.per_day === null || disk.per_day === undefined) return `${where}, growth not measured yet`;
  return `${where}, +${size(Math.max(disk.per_day, 0))} a day`;
}

function size(n) {  // decimal units, as `status` and growth_budget say them
  for (const [unit, scale] of [["TB", 1e12], ["GB", 1e9], ["MB", 1e6], ["KB", 1e3]]) {
    if (Math.abs(n) >= scale) return `${(n / scale).toFixed(1)} ${unit}`;
  }
  return `${Math.round(n)} B`;
}

function outboxCell(outbox) {
  const parts = [];
  const pending = outbox.pending || 0, failed = outbox.failed || 0, dead = outbox.dead || 0;
  if (!pending && !failed && !dead) return h("span", { class: "muted" }, "empty");
  if (pending) parts.push(h("span", { class: "badge warn" }, `${pending} pending`));
  if (failed) parts.push(h("span", { class: "badge warn" }, `${failed} failing`));
  if (dead) parts.push(h("span", { class: "badge bad" }, `${dead} dead`));
  return h("span", {}, ...parts.flatMap((p, i) => i ? [" ", p] : [p]));
}

async function overview() {
  const report = await api("/api/status");
  setBanners(statusBanners(report));
  updateConflictBadge(report.conflicts.open);
  const active = report.config.active;
  const providers = Object.entries(report.providers)
    .sort(([a], [b]) => (b === active) - (a === active) || a.localeCompare(b));
  const mirrored = providers.reduce((n, [, p]) => n + (p.records || 0), 0);
  const outbox = report.outbox;
  const lastRun = report.last_run;
  const cards = h("div", { class: "cards" },
    stat(`mirrored in ${providers.length} provider${providers.length === 1 ? "" : "s"}`, mirrored, "", "total-mirrored"),
    stat("outbox pending", outbox.pending, outbox.pending ? "warn" : "good", "outbox-pending"),
    stat("outbox failing", outbox.failed, outbox.failed ? "warn" : "good", "outbox-failed"),
    stat("dead letters", outbox.dead, outbox.dead ? "bad" : "good", "outbox-dead"),
    stat("open conflicts", report.conflicts.open, report.conflicts.open ? "bad" : "good", "conflicts-open"),
    stat(lastRun ? `last cycle #${lastRun.id}: ${lastRun.status === "attention" ? "needs attention" : lastRun.status}` : "last cycle",
      lastRun ? when(lastRun.finished_at || lastRun.started_at) : "never",
      lastRun && lastRun.status !== "ok" ? "warn" : "", "last-cycle"));

  const rows = [];
  for (const [name, p] of providers) {
    const view = scopeViews[name];
    const paged = view && (view.offset || view.attention)
      ? await api(`/api/scopes?provider=${encodeURIComponent(name)}&offset=${view.offset}` +
          `&limit=${SCOPES_SHOWN}&attention=${view.attention ? 1 : 0}`)
      : null;
    const scopes = paged
      ? paged.scopes.map(r => [r.scope, r.records, r])
      : Object.entries(p.scopes || {}).map(([scope, count]) => [scope, count, null]);
    const scopeRows = scopes.length ? scopes : [[paged ? null : "", p.records || 0, null]];
    const cycle = p.last_cycle || {};
    const backup = (report.backups || {})[name];
    scopeRows.forEach(([scope, count, row], index) => {
      const first = index === 0;
      rows.push(h("tr", { class: first ? "group-start" : "", "data-provider": name, "data-scope": scope || "" },
        h("td", {}, first ? [h("strong", {}, name),
          name === report.config.active ? h("span", { class: "tag" }, "active") : null,
          report.config.ok && p.configured === false ? h("span", { class: "tag" }, "not in config") : null,
          h("div", { class: "muted small" }, [p.type, p.direction].filter(Boolean).join(" · ")),
          p.webhooks ? h("div", { class: "muted small", "data-testid": "webhooks" }, p.webhooks.line) : null,
          (report.disk || {})[name] ? h("div", { class: "muted small", "data-testid": "disk" },
            diskText((report.disk || {})[name])) : null] : ""),
        h("td", { class: "mono" }, scope === null ? h("span", { class: "muted" }, "none needs attention")
          : scope || h("span", { class: "muted" }, "(default)")),
        h("td", { class: "num", "data-testid": "mirrored" }, scope === null ? "" : count,
          (p.hidden_scopes || {})[scope] || (row && row.hidden) ? h("div", { class: "muted small", "data-testid": "hidden" },
            `+${row ? row.hidden : p.hidden_scopes[scope]} hidden (expired, or retired by Dream)`) : null),
        h("td", {}, first ? [when(cycle.finished_at),
          cycle.duration_s !== undefined && cycle.duration_s !== null ? h("div", { class: "muted small" }, `took ${took(cycle.duration_s)}`) : null] : ""),
        h("td", {}, first ? stateBadge(p.state) : row ? stateBadge(row.state) : ""),
        h("td", { class: "num" }, first && p.last_cycle ? `+${cycle.added || 0} ~${cycle.changed || 0} −${cycle.removed || 0}` : ""),
        h("td", {}, first ? outboxCell(p.outbox || {}) : row ? outboxCell(row.outbox || {}) : ""),
        h("td", {}, first ? (backup ? [when(backup.at), h("div", { class: "muted small" }, `${backup.count} kept`)] : h("span", { class: "muted" }, "none")) : "")));
    });
    if ((p.scope_count || 0) > SCOPES_SHOWN || paged) rows.push(scopePager(name, p, paged));
  }
  const table = providers.length
    ? h("div", { class: "table-wrap" }, h("table", { id: "providers" },
        h("thead", {}, h("tr", {}, ["provider", "scope", "mirrored", "last cycle", "state", "+ ~ −", "outbox", "last backup"]
          .map((t, i) => h("th", { class: i === 2 || i === 5 ? "num" : "" }, t)))),
        h("tbody", {}, rows)))
    : h("div", { class: "card empty" }, "No providers yet.");

  const dead = (outbox.dead_actions || []).length
    ? [h("h2", {}, "Dead letters"), h("div", { class: "table-wrap" }, h("table", { id: "dead-letters" },
        h("thead", {}, h("tr", {}, ["#", "provider", "action", "memory", "attempts", "last error"].map(t => h("th", {}, t)))),
        h("tbody", {}, outbox.dead_actions.map(a => h("tr", {},
          h("td", {}, a.id), h("td", {}, a.provider), h("td", {}, a.kind), h("td", { class: "mono" }, a.link_id),
          h("td", { class: "num" }, a.attempts), h("td", {}, a.last_error || ""))))))]
    : [];

  const daemon = report.daemon.running
    ? `daemon running (pid ${report.daemon.pid}, since ${when(report.daemon.since)})`
    : "daemon not running";
  const backupLine = report.last_backup
    ? `newest backup: ${report.last_backup.path.split("/").pop()} (${bytes(report.last_backup.bytes)})`
    : "no backup yet";
  render(h("h1", {}, "Overview"), cards, h("h2", {}, "Providers × scopes"), table, ...dead,
    h("p", { class: "muted small" }, `${daemon} · ${backupLine} · config ${report.config.path}`));
}

// A team of a thousand users is a thousand scopes: the overview draws SCOPES_SHOWN of them at
// a time (the server sends no more), and pages through the rest, or only those needing
// attention. The choice outlives the page's refreshes.
const SCOPES_SHOWN = 50;
const scopeViews = {};

function scopePager(name, p, paged) {
  const view = scopeViews[name] || { offset: 0, attention: false };
  const total = paged ? paged.total : p.scope_count;
  const states = (p.last_cycle || {}).states || {};
  const attention = Object.entries(states).filter(([s]) => s !== "ok").reduce((n, [, c]) => n + c, 0);
  const go = (change) => () => { scopeViews[name] = { ...view, ...change }; refresh(); };
  const shown = total ? `${view.offset + 1}–${Math.min(view.offset + SCOPES_SHOWN, total)} of ${total}` : "0";
  return h("tr", { class: "pager", "data-provider": name, "data-testid": `scopes-${name}` },
    h("td", {}, ""),
    h("td", { colspan: 7 },
      h("span", { "data-testid": "scopes-shown" }, `scopes ${shown}${view.attention ? " needing attention" : ""}`), " ",
      h("button", { type: "button", disabled: view.offset === 0, onclick: go({ offset: Math.max(0, view.offset - SCOPES_SHOWN) }) }, "‹ previous"), " ",
      h("button", { type: "button", disabled: view.offset + SCOPES_SHOWN >= total, onclick: go({ offset: view.offset + SCOPES_SHOWN }) }, "next ›"), " ",
      h("label", {}, h("input", { type: "checkbox", checked: view.attention, onchange: (e) => go({ offset: 0, attention: e.target.checked })() }),
        ` only those needing attention (${attention})`)));
}

function updateConflictBadge(open) {
  const badge = document.getElementById("conflict-badge");
  badge.hidden = !open;
  badge.textContent = open || "";
}

// --- cycle history ------------------------------------------------------------------------

const PAD = { left: 48, right: 10, top: 12, bottom: 26 };

function niceTick(value, integer) {
  // The step between four gridlines: a round multiple of a power of ten (whole for counts).
  const raw = integer ? Math.max(value / 4, 1) : value / 4 || 0.25;
  const power = Math.pow(10, Math.floor(Math.log10(raw)));
  const steps = integer && power < 10 ? [1, 2, 3, 4, 5, 6, 8, 10] : [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
  for (const step of steps) if (step * power >= raw) return step * power;
  return 10 * power;
}

function seconds(v) {
  if (v === 0) return "0";
  if (v < 1) return `${Math.round(v * 1000)} ms`;
  return v < 10 ? `${v.toFixed(1)} s` : `${v.toFixed(0)} s`;
}

function barChart(runs, series, format, size) {
  // series: [{key, cls, value(run)}], stacked per run; size: the chart's width and height in
  // CSS pixels, so its text stays the page's size however wide the window is.
  const [CHART_W, CHART_H] = size;
  const integer = size.integer;
  const innerW = CHART_W - PAD.left - PAD.right, innerH = CHART_H - PAD.top - PAD.bottom;
  const totals = runs.map(r => series.reduce((n, se) => n + (se.value(r) || 0), 0));
  const max = 4 * niceTick(Math.max(0, ...totals), integer);
  const slot = innerW / Math.max(runs.length, 1);
  const barW = Math.max(2, Math.min(28, slot * 0.7));
  const svg = s("svg", { viewBox: `0 0 ${CHART_W} ${CHART_H}`, role: "img" });
  for (let i = 0; i <= 4; i++) {
    const y = PAD.top + innerH - (innerH * i) / 4;
    svg.append(s("line", { class: i ? "grid" : "axis", x1: PAD.left, x2: CHART_W - PAD.right, y1: y, y2: y }));
    svg.append(s("text", { x: PAD.left - 6, y: y + 4, "text-anchor": "end" }, format((max * i) / 4)));
  }
  runs.forEach((run, i) => {
    const x = PAD.left + slot * i + (slot - barW) / 2;
    let y = PAD.top + innerH;
    for (const se of series) {
      const v = se.value(run) || 0;
      if (!v) continue;
      const barH = (innerH * v) / max;
      y -= barH;
      const rect = s("rect", { class: se.cls(run), x, y, width: barW, height: Math.max(barH, 1), rx: 2 });
      rect.append(s("title", {}, `run #${run.id} ${when(run.finished_at)}: ${se.key} ${format(v)}`));
      svg.append(rect);
    }
  });
  const step = Math.max(1, Math.ceil(runs.length / 8));
  runs.forEach((run, i) => {
    if (i % step && i !== runs.length - 1) return;
    svg.append(s("text", { x: PAD.left + slot * i + slot / 2, y: CHART_H - 8, "text-anchor": "middle" }, `#${run.id}`));
  });
  return svg;
}

async function history() {
  const runs = await api("/api/history");
  setBanners([]);
  if (!runs.length) {
    render(h("h1", {}, "Cycle history"), h("div", { class: "card empty" }, "No finished sync cycle yet: run `memsync sync`."));
    return;
  }
  const providers = [...new Set(runs.flatMap(r => Object.keys(r.providers)))].sort();
  const width = document.getElementById("app").clientWidth - 30;
  const small = Object.assign([Math.max(300, (width - 28) / Math.min(3, providers.length) - 30), 170], { integer: true });
  const duration = h("div", { class: "chart", "data-testid": "duration-chart" },
    h("h3", {}, "Cycle duration ", h("span", { class: "muted small" }, "(red: the cycle needed attention)")),
    barChart(runs, [{ key: "duration", cls: r => (r.status === "ok" ? "bar-duration" : "bar-bad"), value: r => r.duration_s }],
      seconds, [width, 200]));
  const legend = h("div", { class: "legend" },
    h("span", {}, h("i", { class: "added" }), "added"),
    h("span", {}, h("i", { class: "changed" }), "changed"),
    h("span", {}, h("i", { class: "removed" }), "deleted"),
    h("span", {}, h("i", { class: "written" }), "written into it by memsync"));
  const perProvider = providers.map(name => h("div", { class: "chart", "data-testid": `changes-${name}` },
    h("h3", {}, name),
    barChart(runs, ["added", "changed", "removed", "written"].map(kind => ({
      key: kind, cls: () => `bar-${kind}`, value: r => (r.providers[name] || {})[kind],
    })), v => String(Math.round(v)), small)));
  const table = h("div", { class: "table-wrap" }, h("table", {},
    h("thead", {}, h("tr", {}, ["run", "finished", "took", "status", ...providers.map(p => `${p} + ~ −`)].map(t => h("th", {}, t)))),
    h("tbody", {}, [...runs].reverse().slice(0, 20).map(r => h("tr", {},
      h("td", {}, `#${r.id}`), h("td", {}, when(r.finished_at)), h("td", { class: "num" }, took(r.duration_s)),
      h("td", {}, h("span", { class: `badge ${r.status === "ok" ? "ok" : "warn"}` }, r.status)),
      ...providers.map(p => {
        const c = r.providers[p];
        return h("td", { class: "mono" }, c ? `+${c.added} ~${c.changed} −${c.removed}` : "");
      }))))));
  const span = `${runs.length} cycle${runs.length === 1 ? "" : "s"}, #${runs[0].id} at ${when(runs[0].finished_at)} to #${runs[runs.length - 1].id} at ${when(runs[runs.length - 1].finished_at)}`;
  render(h("h1", {}, "Cycle history"), h("p", { class: "muted" }, span), duration, h("h2", {}, "Adds, changes and deletes per provider"), legend,
    h("div", { class: "charts-grid" }, perProvider), h("h2", {}, "Recent cycles"), table);
}

// --- conflicts ----------------------------------------------------------------------------

function diffText(diff, side) {
  // side 0 shows what only the first version has (-), side 1 what only the second has (+)
  return diff.map(([op, text]) => {
    if (op === "=") return text;
    if (op === "-" && side === 0) return h("mark", {}, text);
    if (op === "+" && side === 1) return h("mark", {}, text);
    return null;
  });
}

function metadataTable(metadata, differs) {
  const keys = Object.keys(metadata || {}).sort();
  if (!keys.length) return h("div", { class: "muted small" }, "no metadata");
  return h("table", { class: "meta" }, h("tbody", {}, keys.map(k => h("tr", { class: differs.includes(k) ? "differs" : "" },
    h("td", { class: "key mono" }, k), h("td", { class: "mono" }, JSON.stringify(metadata[k]))))));
}

async function resolve(conflict, keep, button) {
  const card = button.closest(".conflict");
  card.querySelectorAll("button").forEach(b => { b.disabled = true; });
  const out = card.querySelector(".result");
  out.replaceChildren(banner("info", `Keeping ${keep}'s version and running a sync cycle…`));
  try {
    const result = await api("/api/resolve", { id: conflict.id, keep });
    out.replaceChildren(banner(result.exit_code === 0 ? "ok" : "warn", result.busy ? result.message
      : `${result.message}; the sync cycle ${result.exit_code === 0 ? "finished cleanly" : "needs attention (see the overview)"}.`));
    setTimeout(refresh, 1500);
  } catch (err) {
    out.replaceChildren(banner("error", err.message));
    card.querySelectorAll("button").forEach(b => { b.disabled = false; });
  }
}

async function conflicts() {
  const list = await api("/api/conflicts");
  setBanners([]);
  updateConflictBadge(list.filter(c => c.state === "open").length);
  if (!list.length) {
    render(h("h1", {}, "Conflicts"), h("div", { class: "card empty", "data-testid": "no-conflicts" }, "No open conflicts."));
    return;
  }
  render(h("h1", {}, `Conflicts (${list.length})`), ...list.map(c => h("section", { class: "card conflict", "data-conflict": c.id },
    h("header", {},
      h("h3", {}, `#${c.id} `, h("span", { class: "mono" }, c.link_id)),
      h("span", { class: "muted small" }, `${c.state} · ${c.rolled_back ? `rolled back in ${c.rolled_back}` : `policy ${c.policy}`} · found ${when(c.created_at)}`,
        c.winner ? ` · keeping ${c.winner}` : "", " · ",
        h("a", { href: `/memory?id=${encodeURIComponent(c.link_id)}` }, "its history"))),
    c.rolled_back
      ? h("p", { class: "muted small", "data-testid": "rolled-back" }, `Rolled back in ${c.rolled_back}: that store went back to an older version than memsync saw there `,
          "(restored from a backup, or a write it lost). Nothing was copied. Keeping ", h("strong", {}, c.rolled_back),
          " takes its older version everywhere; keeping another side writes the newer one back into it.")
      : h("p", { class: "muted small" }, "Both sides changed this memory since the last sync. ",
          "Highlighted: where the texts differ. Keeping one side writes it everywhere; the other stays in the journal."),
    h("div", { class: "sides" }, c.sides.map((name, i) => {
      const v = c.versions[name];
      return h("div", { class: "side", "data-side": name },
        h("h3", {}, h("span", {}, name), h("span", { class: "muted small" }, v.gone ? `gone from ${name}` : `updated ${when(v.updated_at)}`)),
        h("div", { class: "text" }, v.gone ? h("span", { class: "muted" }, `(gone from ${name}: lost when it went back in time)`)
          : c.diff && i < 2 ? diffText(c.diff, i) : v.content),
        h("div", { class: "muted small" }, "metadata"),
        metadataTable(v.metadata, c.metadata_diff),
        h("div", { class: "muted small mono" }, `id ${v.provider_id}`),
        h("div", { class: "actions" }, c.state === "open"
          ? h("button", { onclick: ev => resolve(c, name, ev.currentTarget), "data-keep": name }, `Keep ${name}'s version`)
          : h("span", { class: "muted small" }, "being applied at the next cycle")));
    })),
    h("div", { class: "result" }))));
}

// --- one memory ---------------------------------------------------------------------------

async function memory() {
  const params = new URLSearchParams(location.search);
  const query = params.get("q") || "", id = params.get("id");
  setBanners([]);
  const input = h("input", { type: "search", name: "q", value: query, placeholder: "memory id, provider id or words in its text", "aria-label": "search" });
  const form = h("form", { class: "search", method: "get", action: "/memory" }, input, h("button", { type: "submit" }, "Search"));
  const parts = [h("h1", {}, "One memory"), form];
  if (id) {
    const entries = await api(`/api/memory/history?id=${encodeURIComponent(id)}`);
    parts.push(h("h2", {}, "History of ", h("span", { class: "mono" }, entries[0].link_id)),
      h("ul", { class: "timeline", "data-testid": "timeline" }, entries.map(e => h("li", { class: `kind-${e.kind}` },
        h("div", {}, h("strong", {}, e.provider), " ", h("span", { class: `badge ${e.kind === "removed" ? "bad" : e.kind === "written" ? "ok" : "none"}` }, e.kind),
          " ", h("span", { class: "muted" }, `by ${e.who}`)),
        h("div", { class: "when" }, `${when(e.at)} · run #${e.run_id ?? "?"} · id `, h("span", { class: "mono" }, e.provider_id)),
        e.content !== null ? h("div", { class: "text" }, e.content) : null))));
  } else if (query) {
    const found = await api(`/api/memory/search?q=${encodeURIComponent(query)}`);
    parts.push(h("p", { class: "muted" }, `${found.length} ${found.length === 1 ? "memory matches" : "memories match"} “${query}”`));
    parts.push(found.length
      ? h("ul", { class: "results" }, found.map(m => h("li", {},
          h("a", { href: `/memory?id=${encodeURIComponent(m.link_id)}` }, m.content || m.link_id),
          h("span", { class: "muted small" }, ` — ${m.providers.join(", ") || "in no provider now"} · ${when(m.at)}`))))
      : h("div", { class: "card empty" }, `Nothing matches “${query}”.`));
  }
  render(...parts);
  if (!id) input.focus();
}

// --- cutover readiness --------------------------------------------------------------------

async function runVerify(pair, button) {
  button.disabled = true;
  acting += 1;
  const out = button.closest(".pair").querySelector(".result");
  out.replaceChildren(banner("info", `Listing ${pair.a} and ${pair.b} and comparing…`));
  try {
    const r = await api("/api/verify", { a: pair.a, b: pair.b });
    out.replaceChildren(banner(r.reconciled ? "ok" : "warn", r.reconciled
      ? `Reconciled: ${r.count[pair.a]} memories on both.`
      : `${r.differences.length} difference(s) between ${pair.a} and ${pair.b}.`));
    acting -= 1;
    await refresh();
  } catch (err) {
    acting -= 1;
    out.replaceChildren(banner("error", err.message));
    button.disabled = false;
  }
}

async function cutover() {
  const report = await api("/api/status");
  setBanners(statusBanners(report));
  updateConflictBadge(report.conflicts.open);
  const pairs = report.cutover || [];
  if (!pairs.length) {
    render(h("h1", {}, "Cutover readiness"), h("div", { class: "card empty" },
      report.config.ok ? "Only one provider is configured: nothing to switch to." : "Fix the config first."));
    return;
  }
  render(h("h1", {}, "Cutover readiness"),
    h("p", { class: "muted" }, `The active backend is ${report.config.active}. For each other provider: may it take over?`),
    ...pairs.map(pair => h("section", { class: "card pair", "data-pair": `${pair.a}:${pair.b}` },
      h("header", {}, h("h3", {}, `${pair.a} ⇄ ${pair.b}`),
        h("span", { class: `verdict ${pair.safe ? "safe" : "unsafe"}`, "data-testid": "verdict" }, pair.safe ? "✓ safe to switch" : "not yet")),
      h("ul", { class: "checks" }, pair.checks.map(c => h("li", { class: c.ok ? "ok" : "no" },
        h("span", { class: "mark" }, c.ok ? "✓" : "✗"), h("span", { class: "name" }, c.name), h("span", {}, c.text)))),
      h("button", { class: "secondary", onclick: ev => runVerify(pair, ev.currentTarget) }, `Run verify ${pair.a} ${pair.b} now`),
      h("div", { class: "result" }),
      h("div", { class: "plan" }, h("strong", {}, "What "), h("code", {}, `memsync switch ${pair.b}`), h("strong", {}, " will do:"),
        h("ol", {}, pair.switch.map(step => h("li", {}, step)))))));
}

// --- refresh loop -------------------------------------------------------------------------

const PAGES = { overview, history, conflicts, memory, cutover };
let busy = false;
let acting = 0; // a button's request in flight: a refresh would wipe its progress message

async function refresh() {
  if (busy || acting) return;
  busy = true;
  try {
    await PAGES[PAGE]();
    stamp();
  } catch (err) {
    setBanners([banner("error", err.message)]);
    const title = document.querySelector("header.top nav a.current");
    render(h("h1", {}, title ? title.firstChild.textContent.trim() : "memsync"),
      h("div", { class: "card empty" }, "Nothing to show until the problem above is fixed."));
  } finally {
    busy = false;
  }
}

document.querySelectorAll("header.top nav a").forEach(a => {
  if (a.dataset.page === PAGE) a.classList.add("current");
});
refresh();
// The overview, history and cutover pages follow the sync by themselves; the conflict and
// memory pages hold buttons and a search box, so they refresh only after an action.
if (["overview", "history", "cutover"].includes(PAGE)) setInterval(refresh, REFRESH_MS);
