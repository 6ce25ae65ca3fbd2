// linkcond's console: every condition live, a switch and a profile picker for each, profiles
// made in a form, the history; on a gateway, a device's own condition. Text from the daemon is
// only ever set as textContent: a profile named <script> is shown, not run.
"use strict";

const KEPT = 180; // samples per graph: three minutes at one a second
const QUIET_MS = 15000; // a device's condition on, and none of its packets through the gateway for this long
const quiet = { packets: null, since: 0 };
const state = { session: null, profiles: [], conditions: [], stats: {}, series: {}, cards: {}, editing: null };

const $ = (id) => document.getElementById(id);

function el(tag, attributes, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

async function api(method, path, body) {
  const headers = { "Accept": "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    headers["X-CSRF-Token"] = state.session ? state.session.csrf : "";
  }
  let response;
  try {
    response = await fetch(path, { method, headers, credentials: "same-origin", body: body === undefined ? undefined : JSON.stringify(body) });
  } catch (error) {
    return { ok: false, status: 0, error: { code: "unreachable", message: "the console does not answer" } };
  }
  let data = null;
  try { data = await response.json(); } catch (error) { data = null; }
  return { ok: response.ok, status: response.status, data, error: data && data.error };
}

function notice(text) {
  $("notice").textContent = text || "";
  $("notice").hidden = !text;
}

/// `850 bit/s`, `31.2 kbit/s`, `1.5 Mbit/s`: as `linkcond watch` writes rates.
function rate(bits) {
  if (bits === null || bits === undefined) return "-";
  const [scale, unit] = bits < 1e3 ? [1, "bit/s"] : bits < 1e6 ? [1e3, "kbit/s"] : bits < 1e9 ? [1e6, "Mbit/s"] : [1e9, "Gbit/s"];
  const tenths = Math.round(bits / scale * 10);
  return (scale === 1 || tenths % 10 === 0 ? String(Math.trunc(tenths / 10)) : (tenths / 10).toFixed(1)) + " " + unit;
}

function timeLeft(seconds) {
  if (seconds === null || seconds === undefined) return null;
  const s = Math.max(0, Math.round(seconds));
  return s >= 3600 ? `${Math.floor(s / 3600)}h ${Math.floor(s % 3600 / 60)}m` : s >= 60 ? `${Math.floor(s / 60)}m ${s % 60}s` : `${s}s`;
}

// ---------------------------------------------------------------- session

async function loadSession() {
  const answer = await api("GET", "/api/session");
  if (!answer.ok) { notice(answer.error ? answer.error.message : "the console did not answer"); return; }
  state.session = answer.data;
  document.body.classList.toggle("operator", state.session.operator);
  $("who").textContent = state.session.operator ? "Operator" : (state.session.device ? `Device ${state.session.device.address}` : "Viewer (read-only)");
  $("sign-in").hidden = state.session.operator;
  $("signed-in").hidden = !state.session.operator;
  renderDevice();
}

async function signIn(event) {
  event.preventDefault();
  $("e-token").textContent = "";
  const answer = await api("POST", "/api/sign-in", { token: $("token").value.trim() });
  $("token").value = "";
  if (!answer.ok) { $("e-token").textContent = answer.error ? answer.error.message : "sign-in failed"; return; }
  await loadSession();
  renderConditions();
  renderProfiles();
}

async function signOut() {
  await api("POST", "/api/sign-out", {});
  await loadSession();
  renderConditions();
  renderProfiles();
}

// ---------------------------------------------------------------- the device (gateway mode)

function renderDevice() {
  const session = state.session;
  $("device").hidden = !(session && session.gateway);
  if (!session || !session.gateway) return;
  const device = session.device;
  const problem = !device ? "The console cannot tell which device this is." : device.problem;
  $("device-problem").hidden = !problem;
  $("device-problem").textContent = problem || "";
  $("device-form").hidden = Boolean(problem);
  if (problem) return;
  $("device-address").textContent = device.address;
  fillPicker($("device-profile"), null);
  const mine = state.conditions.find((c) => c.id === device.condition);
  $("device-state").textContent = mine && mine.active
    ? `This device is on ${mine.profile ? mine.profile.name : "a condition"} (${mine.profile ? mine.profile.summary : ""}).`
    : "This device has no condition: its network is as it is.";
}

/// A device whose condition is on but whose packets do not pass through the gateway (the
/// console's own port is exempt from shaping, so the page's requests do not count): said
/// plainly, as its traffic may be bypassing the gateway (mobile data, another router).
function watchDeviceTraffic() {
  const note = $("device-bypass");
  const device = state.session && state.session.device;
  const mine = device && device.condition ? state.conditions.find((c) => c.id === device.condition) : null;
  const traffic = mine && mine.active ? state.stats[device.condition] : null;
  if (!traffic) { quiet.packets = null; note.hidden = true; return; }
  const packets = (traffic.uplink ? traffic.uplink.packets : 0) + (traffic.downlink ? traffic.downlink.packets : 0);
  const now = Date.now();
  if (packets !== quiet.packets) { quiet.packets = packets; quiet.since = now; note.hidden = true; return; }
  if (now - quiet.since < QUIET_MS) return;
  note.textContent = `None of this device's traffic has passed through this gateway for ${Math.round((now - quiet.since) / 1000)} s, ` +
    "so its condition has had nothing to act on. If it is using the network now, its traffic bypasses the gateway: " +
    "check that it is on this gateway's Wi-Fi, with mobile data off, and that its router is this machine.";
  note.hidden = false;
}

async function setDevice(event) {
  event.preventDefault();
  await change("PUT", state.session.device.condition, { profile: $("device-profile").value });
}

// ---------------------------------------------------------------- conditions

async function change(method, id, body) {
  const answer = await api(method, "/api/conditions/" + encodeURIComponent(id), body);
  if (!answer.ok) notice(answer.error ? `${id}: ${answer.error.message}` : `${id}: the change failed`);
  else notice("");
  await refreshConditions();
  return answer.ok;
}

function fillPicker(select, selected) {
  const names = state.profiles.map((p) => p.name);
  const current = Array.from(select.options).map((o) => o.value);
  if (current.join("\n") !== names.join("\n")) {
    select.replaceChildren(...names.map((name) => el("option", { value: name, text: name })));
  }
  if (selected && document.activeElement !== select) select.value = selected;
}

function describeTarget(condition) {
  const parts = [`interface ${condition.interface}`];
  if (condition.namespace) parts.push(`namespace ${condition.namespace}`);
  if (condition.peer) parts.push(condition.peer.startsWith("device=") ? `device ${condition.peer.slice(7)}` : `peer ${condition.peer}`);
  return parts.join(", ");
}

function card(condition) {
  let entry = state.cards[condition.id];
  if (entry) return entry;
  const title = el("h3", { text: condition.id });
  const facts = el("dl");
  const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  svg.setAttribute("class", "graph");
  svg.setAttribute("viewBox", `0 0 ${KEPT} 100`);
  svg.setAttribute("preserveAspectRatio", "none");
  svg.setAttribute("role", "img");
  const down = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  down.setAttribute("class", "down");
  const up = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
  up.setAttribute("class", "up");
  svg.append(down, up);
  const legend = el("p", { class: "legend", "aria-live": "off" });
  const toggle = el("button", { type: "button", class: "switch operator-only", role: "switch", "aria-checked": "false" });
  const picker = el("select", { "aria-label": `Profile for ${condition.id}` });
  const apply = el("button", { type: "button", class: "secondary", text: "Apply" });
  const controls = el("div", { class: "picker operator-only" }, toggle, picker, apply);
  const node = el("li", { class: "condition", "data-id": condition.id }, title, facts, controls, svg, legend);
  toggle.addEventListener("click", async () => {
    const on = toggle.getAttribute("aria-checked") === "true";
    await change(on ? "DELETE" : "PUT", condition.id, on ? undefined : { profile: picker.value });
  });
  apply.addEventListener("click", () => change("PUT", condition.id, { profile: picker.value }));
  entry = { node, facts, toggle, picker, svg, down, up, legend };
  state.cards[condition.id] = entry;
  $("conditions").append(node);
  return entry;
}

function renderConditions() {
  const seen = new Set();
  for (const condition of state.conditions) {
    seen.add(condition.id);
    const entry = card(condition);
    const facts = [["Target", describeTarget(condition)], ["Profile", condition.active && condition.profile ? `${condition.profile.name}: ${condition.profile.summary}` : "off"]];
    if (condition.profile && condition.profile.failure) facts.push(["Failure", condition.profile.failure]);
    if (condition.scenario) facts.push(["Scenario", `${condition.scenario.name}: step ${condition.scenario.step} of ${condition.scenario.steps}, ${condition.scenario.stepName}${condition.scenario.finished ? " (finished)" : ""}`]);
    if (condition.lease) {
      const holder = condition.lease.holder;
      facts.push(["Held by", `${holder.user || "uid " + holder.uid}${holder.command ? " (" + holder.command + ")" : ""}`]);
      const left = timeLeft(condition.lease.secondsLeft);
      facts.push(["Time left", left || "while the holder runs"]);
    }
    const traffic = state.stats[condition.id];
    if (traffic) {
      for (const [name, counters] of [["Down", traffic.downlink], ["Up", traffic.uplink]]) {
        if (!counters) continue;
        facts.push([name, `${rate(counters.bitsPerSecond)}; ${counters.droppedPackets} dropped (${counters.droppedByLoss} by loss, ${counters.droppedByQueue} by a full queue); ${counters.queuedPackets} queued`]);
      }
      if (traffic.failedPackets) facts.push(["Failed", `${traffic.failedPackets} packets refused or reset`]);
    }
    entry.facts.replaceChildren(...facts.flatMap(([term, value]) => [el("dt", { text: term }), el("dd", { text: value })]));
    entry.toggle.setAttribute("aria-checked", condition.active ? "true" : "false");
    entry.toggle.textContent = condition.active ? "On" : "Off";
    entry.toggle.setAttribute("aria-label", `${condition.id} ${condition.active ? "on: switch off" : "off: switch on"}`);
    fillPicker(entry.picker, condition.active && condition.profile ? condition.profile.name : null);
    drawGraph(condition.id, entry);
  }
  for (const id of Object.keys(state.cards)) {
    if (!seen.has(id)) { state.cards[id].node.remove(); delete state.cards[id]; }
  }
  $("no-conditions").hidden = state.conditions.some((c) => c.active);
  renderDevice();
}

function drawGraph(id, entry) {
  const series = state.series[id] || [];
  const top = Math.max(1000, ...series.map((s) => Math.max(s.down, s.up)));
  const points = (key) => series.map((s, i) => `${KEPT - series.length + i},${(100 - s[key] / top * 96).toFixed(1)}`).join(" ");
  entry.down.setAttribute("points", points("down"));
  entry.up.setAttribute("points", points("up"));
  const last = series[series.length - 1];
  entry.svg.setAttribute("aria-label", `Rates of ${id} over the last ${Math.round(series.length)} seconds, top ${rate(top)}`);
  entry.legend.replaceChildren(
    el("span", { class: "down", text: `— down ${last ? rate(last.down) : "-"}` }),
    el("span", { class: "up", text: `- - up ${last ? rate(last.up) : "-"}` }),
    el("span", { text: `scale ${rate(top)}` }));
}

async function refreshConditions() {
  const answer = await api("GET", "/api/conditions");
  if (!answer.ok) { notice(answer.error ? answer.error.message : "the console does not answer"); return; }
  state.conditions = answer.data.conditions;
  renderConditions();
}

async function refreshStats() {
  const answer = await api("GET", "/api/stats");
  if (!answer.ok) return;
  state.stats = {};
  for (const traffic of answer.data.conditions) {
    state.stats[traffic.id] = traffic;
    const series = state.series[traffic.id] || (state.series[traffic.id] = []);
    series.push({ down: (traffic.downlink && traffic.downlink.bitsPerSecond) || 0, up: (traffic.uplink && traffic.uplink.bitsPerSecond) || 0 });
    if (series.length > KEPT) series.shift();
  }
}

// ---------------------------------------------------------------- profiles

async function refreshProfiles() {
  const answer = await api("GET", "/api/profiles");
  if (!answer.ok) return;
  state.profiles = answer.data.profiles;
  renderProfiles();
  renderConditions();
}

function renderProfiles() {
  const rows = state.profiles.map((profile) => {
    const actions = el("td", { class: "actions" });
    const duplicate = el("button", { type: "button", class: "secondary operator-only", text: "Duplicate", "aria-label": `Duplicate ${profile.name}` });
    duplicate.addEventListener("click", () => editProfile(profile.name, true));
    actions.append(duplicate);
    if (profile.readOnly) {
      actions.append(" ", el("span", { class: "readonly", text: "built-in" }));
    } else {
      const edit = el("button", { type: "button", class: "secondary operator-only", text: "Edit", "aria-label": `Edit ${profile.name}` });
      edit.addEventListener("click", () => editProfile(profile.name, false));
      const remove = el("button", { type: "button", class: "secondary operator-only", text: "Delete", "aria-label": `Delete ${profile.name}` });
      remove.addEventListener("click", () => deleteProfile(profile.name));
      actions.append(" ", edit, " ", remove);
    }
    return el("tr", {}, el("th", { scope: "row", text: profile.name }), el("td", { text: profile.summary }), actions);
  });
  $("profiles").tBodies[0].replaceChildren(...rows);
}

const FIELDS = ["name", "description", "downlink-bandwidth", "downlink-delay", "downlink-jitter", "downlink-loss",
  "uplink-bandwidth", "uplink-delay", "uplink-jitter", "uplink-loss", "dns-delay", "failure"];

function clearErrors() {
  for (const field of FIELDS.concat(["form"])) {
    $("e-" + field).textContent = "";
    const input = $("p-" + field);
    if (input) input.removeAttribute("aria-invalid");
  }
}

function openForm(title, values, original) {
  clearErrors();
  state.editing = original;
  $("profile-form-title").textContent = title;
  for (const field of FIELDS) $("p-" + field).value = values[field] || "";
  $("profile-form").hidden = false;
  $("p-name").focus();
}

function closeForm() {
  $("profile-form").hidden = true;
  state.editing = null;
}

async function editProfile(name, duplicate) {
  const answer = await api("GET", "/api/profiles/" + encodeURIComponent(name));
  if (!answer.ok) { notice(answer.error ? answer.error.message : "cannot read the profile"); return; }
  const p = answer.data;
  const values = { name: duplicate ? `${p.name} copy` : p.name, description: p.description, "dns-delay": p.dnsDelay === "0ms" ? "" : p.dnsDelay, failure: p.failure || "" };
  for (const direction of ["downlink", "uplink"]) {
    const d = p[direction];
    values[`${direction}-bandwidth`] = d.bandwidth || "";
    values[`${direction}-delay`] = d.delay === "0ms" ? "" : d.delay;
    values[`${direction}-jitter`] = d.jitter === "0ms" ? "" : d.jitter;
    values[`${direction}-loss`] = d.loss === "0%" ? "" : d.loss;
  }
  openForm(duplicate ? `Duplicate of ${p.name}` : `Edit ${p.name}`, values, duplicate ? null : p.name);
  const extra = ["downlink", "uplink"].some((d) => Object.keys(p[d]).some((k) => !["bandwidth", "delay", "jitter", "loss"].includes(k))) || p.dnsFailure;
  if (extra) $("e-form").textContent = "This profile has settings the form does not show (impairments, DNS failures): saving from here leaves them out. Edit its file to keep them.";
}

/// The form as a profile file: each value a YAML double-quoted scalar (JSON's string syntax is
/// one), so nothing typed can change the file's structure.
function profileYAML() {
  const value = (field) => $("p-" + field).value.trim();
  const lines = [`name: ${JSON.stringify(value("name"))}`];
  if (value("description")) lines.push(`description: ${JSON.stringify(value("description"))}`);
  if (value("failure")) lines.push(`failure: ${JSON.stringify(value("failure"))}`);
  for (const direction of ["downlink", "uplink"]) {
    const entries = ["bandwidth", "delay", "jitter", "loss"].filter((k) => value(`${direction}-${k}`));
    if (entries.length) {
      lines.push(`${direction}:`);
      for (const k of entries) lines.push(`  ${k}: ${JSON.stringify(value(`${direction}-${k}`))}`);
    }
  }
  if (value("dns-delay")) lines.push("dns:", `  delay: ${JSON.stringify(value("dns-delay"))}`);
  return lines.join("\n") + "\n";
}

async function saveProfile(event) {
  event.preventDefault();
  clearErrors();
  const name = $("p-name").value.trim();
  const renamed = state.editing && state.editing !== name;
  const answer = await api("POST", "/api/profiles", { yaml: profileYAML(), replace: Boolean(state.editing) && !renamed });
  if (!answer.ok) {
    const error = answer.error || { message: "saving failed" };
    // The parser names a field as the file has it (`downlink.loss`, `dns.delay`): the form's input.
    const field = error.problem ? error.problem.field.split(".").slice(0, 2).join("-") : "";
    const target = FIELDS.includes(field) ? field : "form";
    // The file is the form's, not the user's: its name and line say nothing to them.
    $("e-" + target).textContent = error.message.replace(/^the console:\d+: /, "");
    const input = $("p-" + target);
    if (input) { input.setAttribute("aria-invalid", "true"); input.focus(); }
    return;
  }
  if (renamed) await api("DELETE", "/api/profiles/" + encodeURIComponent(state.editing));
  closeForm();
  notice(`Saved ${answer.data.name}.`);
  await refreshProfiles();
}

async function deleteProfile(name) {
  if (!window.confirm(`Delete the profile ${name}?`)) return;
  const answer = await api("DELETE", "/api/profiles/" + encodeURIComponent(name));
  notice(answer.ok ? `Deleted ${name}.` : (answer.error ? answer.error.message : "deleting failed"));
  await refreshProfiles();
}

// ---------------------------------------------------------------- history

async function refreshHistory() {
  const answer = await api("GET", "/api/history");
  if (!answer.ok) return;
  const entries = answer.data.entries.slice().reverse().slice(0, 50);
  $("history").replaceChildren(...entries.map((entry) => {
    const who = entry.requester ? ` by ${entry.requester.user || "uid " + entry.requester.uid}${entry.requester.command ? " (" + entry.requester.command + ")" : ""}` : "";
    const text = `${entry.time.replace("T", " ").replace("Z", " UTC")}: ${entry.condition || "default"} ${entry.from} → ${entry.to} (${entry.reason}${entry.detail ? ", " + entry.detail : ""})${who}`;
    return el("li", { text });
  }));
}

// ---------------------------------------------------------------- start

async function tick() {
  await refreshStats();
  await refreshConditions();
  watchDeviceTraffic();
}

document.addEventListener("DOMContentLoaded", async () => {
  $("sign-in").addEventListener("submit", signIn);
  $("sign-out").addEventListener("click", signOut);
  $("device-form").addEventListener("submit", setDevice);
  $("device-off").addEventListener("click", () => change("DELETE", state.session.device.condition));
  $("new-profile").addEventListener("click", () => openForm("New profile", {}, null));
  $("profile-cancel").addEventListener("click", closeForm);
  $("profile-form").addEventListener("submit", saveProfile);
  await loadSession();
  await refreshProfiles();
  await tick();
  await refreshHistory();
  setInterval(tick, 1000);
  setInterval(refreshHistory, 5000);
});
