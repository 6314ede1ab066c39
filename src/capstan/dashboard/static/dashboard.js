// Capstan's dashboard: every change is a call to the JSON API, made by this module with the
// session cookie and the page's CSRF token (the API refuses a cookie change without it). The
// API's answer decides what happens; its error message and per-field details are shown next to
// the form and announced. No rule of the API is repeated here.
//
//   <form data-api="POST /api/projects" data-then="goto:/projects/{id}">   a form's fields as JSON
//   <button data-api="DELETE /api/…" data-then="refresh">                   a call without a body
//
// data-then: reload | refresh (polled parts reload at once) | goto:<path with {field}> |
//            return:<path, as it is> | open:<field of the answer to navigate to> | reveal-token
// goto: and return: only ever navigate within this site (`ownSite`).
// Fields: name="a.b" nests; data-type="int" | "list" (checkboxes); data-split="cpu,memory" on a
// select whose value is "256,512"; data-optional leaves an empty field out; data-nullable sends
// an empty field as null; data-skip never sent; data-type="lines" on a textarea sends its
// non-empty lines as a list.

const csrfToken = () => document.querySelector('meta[name="csrf-token"]')?.content ?? "";

function say(text, { alert = false } = {}) {
  const region = document.getElementById(alert ? "alert" : "announce");
  const other = document.getElementById(alert ? "announce" : "alert");
  if (other) other.textContent = "";
  if (!region) return;
  region.textContent = "";
  // A fresh text node so that screen readers announce a repeated message too.
  window.setTimeout(() => { region.textContent = text; }, 30);
}

export async function callApi(method, path, body, extraHeaders = {}) {
  const headers = { Accept: "application/json", "X-CSRF-Token": csrfToken(), ...extraHeaders };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch {
    return { ok: false, status: 0, data: { message: "Capstan could not be reached. Try again." } };
  }
  let data = null;
  if (response.status !== 204) {
    try { data = await response.json(); } catch { data = null; }
  }
  return { ok: response.ok, status: response.status, data };
}

function setPath(target, dotted, value) {
  const parts = dotted.split(".");
  let here = target;
  for (const part of parts.slice(0, -1)) here = here[part] ??= {};
  here[parts.at(-1)] = value;
}

function formBody(form) {
  if (form.dataset.body === "environment") return environmentBody(form);
  const body = {};
  for (const element of form.elements) {
    if (element.disabled || element.dataset.skip !== undefined) continue;
    if (element.dataset.split) {
      const names = element.dataset.split.split(",");
      element.value.split(",").forEach((part, i) => setPath(body, names[i], Number(part)));
      continue;
    }
    const name = element.name;
    if (!name) continue;
    if (element.type === "checkbox" && element.dataset.type === "list") {
      const list = body[name] ?? (body[name] = []);
      if (element.checked) list.push(element.value);
    } else if (element.type === "checkbox") {
      setPath(body, name, element.checked);
    } else if (element.value === "" && element.dataset.optional !== undefined) {
      continue;
    } else if (element.dataset.type === "lines") {
      setPath(body, name, element.value.split("\n").map((line) => line.trim()).filter(Boolean));
    } else if (element.value === "" && element.dataset.nullable !== undefined) {
      setPath(body, name, null);
    } else if (element.dataset.type === "int") {
      setPath(body, name, element.value === "" ? null : Number(element.value));
    } else {
      setPath(body, name, element.value);
    }
  }
  return body;
}

function environmentRows(form) {
  return [...form.querySelectorAll("[data-env-row]")]
    .filter((row) => !row.closest("template"))
    .map((row) => {
      const name = row.querySelector(".env-name").value.trim();
      // A reference to a database is kept as it is (its value is resolved by the cloud); a new
      // one names the database chosen in its row.
      const database = row.dataset.database || row.querySelector(".env-database")?.value;
      if (database) return { name, value_from: { database } };
      return { name, value: row.querySelector(".env-value").value };
    })
    .filter((variable) => variable.name !== "" || variable.value !== "");
}

function environmentBody(form) {
  return { environment: environmentRows(form) };
}

// Saving is a full replacement: names that were there and are not now are shown before they go.
function confirmRemovals(form) {
  if (form.dataset.body !== "environment") return true;
  const before = (form.dataset.original || "").split("\n").filter(Boolean);
  const now = new Set(environmentRows(form).map((variable) => variable.name));
  const removed = before.filter((name) => !now.has(name));
  const note = form.querySelector(".removed");
  const key = removed.join("\n");
  if (removed.length === 0 || form.dataset.removalsConfirmed === key) {
    if (note) note.textContent = "";
    return true;
  }
  form.dataset.removalsConfirmed = key;
  const text = `Saving removes ${removed.join(", ")}. Press Save again to remove them.`;
  if (note) note.textContent = text;
  say(text);
  return false;
}

function clearErrors(scope) {
  for (const element of scope.querySelectorAll("[data-error-for]")) element.textContent = "";
  for (const element of scope.querySelectorAll("[aria-invalid]")) element.removeAttribute("aria-invalid");
  const formError = scope.querySelector(".form-error");
  if (formError) formError.textContent = "";
}

function fieldErrorElement(scope, field) {
  const candidates = [...scope.querySelectorAll("[data-error-for]")];
  const top = field.split(".")[0];
  return (
    candidates.find((element) => element.dataset.errorFor.split(" ").includes(field)) ??
    candidates.find((element) => element.dataset.errorFor.split(" ").includes(top))
  );
}

function showError(scope, result) {
  const data = result.data ?? {};
  let message = data.message || `The request failed (${result.status}).`;
  // Only a page behind a session can have lost it: a 401 from signing in is a wrong credential.
  const signingIn = scope.closest?.("[data-signs-in]");
  const sessionEnded = result.status === 401 && !signingIn;
  if (sessionEnded) message = "Your session has ended. Sign in again.";
  else if (result.status === 401) message = data.message || "The email or password is wrong.";
  if (result.status === 412 && scope.dataset?.body === "environment") {
    message = "The environment changed since this editor was loaded (a rollback or another " +
      "save), so nothing was saved. The editor now shows the current variables.";
    reloadEditor({ announce: false });
  }
  for (const detail of data.details ?? []) {
    if (!detail.field) continue;
    const element = fieldErrorElement(scope, detail.field);
    if (!element) continue;
    element.textContent = detail.message;
    const input = element.id && scope.querySelector(`[aria-describedby~="${element.id}"]`);
    if (input) input.setAttribute("aria-invalid", "true");
  }
  const formError = scope.querySelector?.(".form-error");
  if (formError) formError.textContent = message;
  say(message, { alert: true });
  if (signingIn && result.status === 401) {
    const password = scope.querySelector('input[type="password"]');
    password?.setAttribute("aria-invalid", "true");
    password?.select();
    password?.focus();
  }
  if (sessionEnded) {
    const here = window.location.pathname + window.location.search;
    window.setTimeout(() => window.location.assign(`/sign-in?next=${encodeURIComponent(here)}`), 1500);
  }
}

function fill(template, data) {
  return template.replace(/\{(\w+)\}/g, (_, key) => encodeURIComponent(data?.[key] ?? ""));
}

// The target as a path of this site, or "/" when it would leave it. Checked on the URL as it was
// built, as the browser will read it: filling a template can turn a path into another origin's
// (`/{x}/evil.example` filled with nothing is `//evil.example`).
export function ownSite(target) {
  let url;
  try {
    url = new URL(target, window.location.href);
  } catch {
    return "/";
  }
  if (url.origin !== window.location.origin) return "/";
  return url.pathname + url.search + url.hash;
}

function afterSuccess(element, result) {
  const then = element.dataset.then || "reload";
  const data = result.data;
  if (element.dataset.success) say(element.dataset.success);
  if (then === "reload") {
    window.location.reload();
  } else if (then === "refresh") {
    if (element.tagName === "FORM" && element.dataset.body !== "environment") element.reset();
    if (element.dataset.body === "environment") {
      element.dataset.original = environmentRows(element).map((v) => v.name).join("\n");
      reloadEditor({ announce: false }); // its new version, for the next save's If-Match
    }
    document.body.dispatchEvent(new CustomEvent("capstan:changed"));
  } else if (then.startsWith("goto:")) {
    window.location.assign(ownSite(fill(then.slice(5), data)));
  } else if (then.startsWith("return:")) {
    window.location.assign(ownSite(then.slice(7)));
  } else if (then.startsWith("open:")) {
    window.location.assign(data[then.slice(5)]);
  } else if (then === "reveal-token") {
    const panel = document.getElementById("new-token");
    panel.querySelector("input").value = data.token;
    panel.hidden = false;
    panel.querySelector("input").focus();
    element.reset?.();
  }
}

async function run(element, method, path, body) {
  const scope = element.tagName === "FORM" ? element : element.closest("section") ?? document;
  clearErrors(element.tagName === "FORM" ? element : document.createElement("div"));
  const expected = element.dataset.confirmName;
  if (expected !== undefined) {
    const typed = element.querySelector('[name="confirm_name"]');
    if (!typed || typed.value !== expected) {
      showError(element, { status: 400, data: { message: `Type ${expected} to confirm.` } });
      return;
    }
  }
  if (element.dataset.confirm && !window.confirm(element.dataset.confirm)) return;
  element.setAttribute("aria-busy", "true");
  // The environment saves only over the version it shows (412 if it changed meanwhile).
  const ifMatch = element.dataset.ifMatch ? { "If-Match": element.dataset.ifMatch } : {};
  const result = await callApi(method, path, body, ifMatch);
  element.removeAttribute("aria-busy");
  if (result.ok) afterSuccess(element, result);
  else showError(element.tagName === "FORM" ? element : scope, result);
}

document.addEventListener("submit", (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.api) return;
  event.preventDefault();
  if (!confirmRemovals(form)) return;
  const [method, path] = form.dataset.api.split(" ");
  const body = method === "DELETE" ? undefined : formBody(form);
  run(form, method, path, body);
});

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target : null;
  const button = target?.closest("button[data-api]");
  if (button) {
    const [method, path] = button.dataset.api.split(" ");
    run(button, method, path, undefined);
    return;
  }
  const reveal = target?.closest("[data-reveal]");
  if (reveal) {
    const input = reveal.closest("[data-env-row]").querySelector(".env-value");
    const hidden = input.type === "password";
    input.type = hidden ? "text" : "password";
    reveal.textContent = hidden ? "Hide" : "Show";
    return;
  }
  const remove = target?.closest("[data-remove-row]");
  if (remove) {
    remove.closest("[data-env-row]").remove();
    return;
  }
  const add = target?.closest("[data-add-row]");
  if (add) {
    const form = add.closest("form");
    const template = form.querySelector(`template#${add.dataset.addRow || "env-row"}`);
    const row = template.content.firstElementChild.cloneNode(true);
    form.querySelector(".env-rows").append(row);
    row.querySelector(".env-name").focus();
    return;
  }
  const copy = target?.closest("[data-copy]");
  if (copy) {
    const input = document.querySelector(copy.dataset.copy);
    input.select();
    navigator.clipboard?.writeText(input.value).then(
      () => say("Copied."),
      () => say("Select the token and copy it."),
    );
    return;
  }
  const reload = target?.closest("[data-reload-editor]");
  if (reload) {
    reloadEditor({ announce: true });
    return;
  }
});

// A field whose change has consequences (data-warn-changed) says so, next to it and announced, as
// soon as its value differs from the saved one; `{value}` in the text is the new value.
document.addEventListener("input", (event) => {
  const input = event.target;
  if (!(input instanceof HTMLInputElement) || input.dataset.warnChanged === undefined) return;
  const note = document.querySelector(`[data-warning-for="${input.id}"]`);
  if (!note) return;
  const value = input.value.trim();
  note.textContent =
    value !== "" && value !== input.defaultValue ? input.dataset.warnChanged.replace("{value}", value) : "";
});

// A repository's default branch fills the branch field when it is picked.
document.addEventListener("change", (event) => {
  const select = event.target;
  if (!(select instanceof HTMLSelectElement) || select.name !== "repo") return;
  const branch = select.form?.querySelector('[name="branch"]');
  const chosen = select.selectedOptions[0];
  if (branch && chosen?.dataset.branch) branch.value = chosen.dataset.branch;
});

// A polled part marked data-poll-holds-while-focused is not replaced on its timer while the focus
// is inside it (what is being typed would be swapped away); a change made on the page
// (`capstan:changed`) still reloads it. Only a timed poll comes without a triggering event.
document.addEventListener("htmx:confirm", (event) => {
  const part = event.detail.elt;
  if (!(part instanceof HTMLElement) || part.dataset.pollHoldsWhileFocused === undefined) return;
  if (!event.detail.triggeringEvent && part.contains(document.activeElement)) event.preventDefault();
});

// Logs stream from the server (Server-Sent Events from `data-stream`): `reset` replaces what is
// shown with the newest lines, `lines` adds new ones (the server sends each line once), `end`
// says why the stream stopped. Unticking Follow closes the stream; choosing another source or
// ticking it again starts a new one. The lines are HTML the server rendered (escaped).
function followLogs() {
  const logs = document.getElementById("logs");
  const source = document.getElementById("logs-source");
  const follow = document.getElementById("follow");
  if (!logs?.dataset.stream || !source || !follow) return;
  let stream = null;
  const toNewest = () => { if (follow.checked) logs.scrollTop = logs.scrollHeight; };
  const start = () => {
    stream?.close();
    const url = new URL(logs.dataset.stream, window.location.href);
    if (source.value) url.searchParams.set("preview", source.value);
    const opened = new EventSource(url);
    stream = opened;
    opened.addEventListener("reset", (event) => {
      logs.innerHTML = event.data;
      toNewest();
      if (!follow.checked) opened.close(); // only the lines of the chosen source, once
    });
    opened.addEventListener("lines", (event) => {
      logs.querySelector(":scope > .muted")?.remove(); // "No log lines yet."
      logs.insertAdjacentHTML("beforeend", event.data);
      toNewest();
    });
    opened.addEventListener("end", (event) => {
      opened.close();
      say(event.data, { alert: true });
    });
  };
  const chosen = new URL(window.location.href).searchParams.get("preview");
  if (chosen && [...source.options].some((option) => option.value === chosen)) source.value = chosen;
  source.addEventListener("change", start);
  follow.addEventListener("change", () => (follow.checked ? start() : stream?.close()));
  start();
}
followLogs();

// The environment editor follows the environment's version: the polled part of the page carries
// the version now stored (data-env-etag); when it differs from the one the editor was loaded at
// (a rollback, another person's save), the editor is loaded again, or, when it holds unsaved
// edits, says so and offers to load it. Saving goes with If-Match either way.
async function reloadEditor({ announce }) {
  const editor = document.getElementById("environment-editor");
  if (!editor?.dataset.editorSrc) return;
  let response;
  try {
    response = await fetch(editor.dataset.editorSrc, { credentials: "same-origin" });
  } catch {
    return;
  }
  if (!response.ok) return;
  const holder = document.createElement("div");
  holder.innerHTML = await response.text();
  const fresh = holder.querySelector("#environment-editor");
  if (!fresh) return;
  editor.replaceWith(fresh);
  if (announce) say("The environment changed (a rollback or another save); the editor shows it now.");
}

document.addEventListener("input", (event) => {
  const form = event.target instanceof Element ? event.target.closest("form[data-body=environment]") : null;
  if (form) form.dataset.dirty = "true";
});

document.addEventListener("htmx:afterSwap", () => {
  const live = document.getElementById("service-live");
  const form = document.querySelector("#environment-editor form[data-body=environment]");
  const current = live?.dataset.envEtag;
  if (!form || !current || current === form.dataset.ifMatch) return;
  if (form.dataset.dirty !== "true") {
    reloadEditor({ announce: true });
    return;
  }
  const note = document.querySelector("[data-env-stale]");
  if (note && !note.querySelector("button")) {
    note.textContent = "The environment changed since you started editing (a rollback or another " +
      "save); saving these edits will be refused. ";
    const button = document.createElement("button");
    button.type = "button";
    button.className = "small secondary";
    button.dataset.reloadEditor = "";
    button.textContent = "Load the current environment";
    note.append(button);
  }
});

// Charts: each metric's series (`data-times`, seconds since 1970, and `data-values`) drawn by
// uPlot over the hour ending with its newest point, with a time axis in UTC and the figure's
// unit on the value axis. Without uPlot (or script) the server's line stays.
const UNITS = {
  percent: (value) => `${Number(value.toFixed(1))} %`,
  bytes: (value) => {
    const steps = ["B", "kB", "MB", "GB", "TB"];
    let step = 0;
    while (Math.abs(value) >= 1000 && step < steps.length - 1) { value /= 1000; step += 1; }
    return `${Number(value.toFixed(1))} ${steps[step]}`;
  },
  count: (value) => `${Number(value.toFixed(2))}`,
};

function drawChart(plot) {
  const times = plot.dataset.times ? plot.dataset.times.split(",").map(Number) : [];
  const values = plot.dataset.values ? plot.dataset.values.split(",").map(Number) : [];
  const unit = UNITS[plot.dataset.unit] ?? UNITS.count;
  const end = Number(plot.dataset.end) || Math.floor(Date.now() / 1000);
  const width = Math.max(plot.parentElement.clientWidth, 200);
  const options = {
    width,
    height: 150,
    tzDate: (seconds) => window.uPlot.tzDate(new Date(seconds * 1000), "Etc/UTC"),
    scales: {
      x: { time: true, range: () => [end - 3600 + 300, end] },
      y: { range: (_u, _min, max) => [0, plot.dataset.unit === "percent" ? 100 : Math.max(max, 1)] },
    },
    axes: [
      { label: "UTC", labelSize: 16, size: 36 },
      { values: (_u, ticks) => ticks.map(unit), size: 60 },
    ],
    series: [
      { label: "Time (UTC)", value: "{YYYY}-{MM}-{DD} {HH}:{mm}" },
      { label: plot.dataset.label, stroke: "#1d5fd1", width: 2, fill: "rgba(29,95,209,0.08)",
        value: (_u, value) => (value == null ? "–" : unit(value)) },
    ],
    legend: { live: true },
  };
  plot.textContent = "";
  const chart = new window.uPlot(options, [times, values], plot);
  plot.dataset.drawn = "uplot";
  new ResizeObserver(() => {
    chart.setSize({ width: Math.max(plot.parentElement.clientWidth, 200), height: 150 });
  }).observe(plot.parentElement);
}

if (window.uPlot) document.querySelectorAll(".chart-plot").forEach(drawChart);
