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
// select whose value is "256,512"; data-optional leaves an empty field out; data-skip never sent.

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

export async function callApi(method, path, body) {
  const headers = { Accept: "application/json", "X-CSRF-Token": csrfToken() };
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
      // A reference to a database is kept as it is (its value is resolved by the cloud).
      const database = row.dataset.database;
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
  const result = await callApi(method, path, body);
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
    const row = form.querySelector("template#env-row").content.firstElementChild.cloneNode(true);
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
  const logsOf = target?.closest("[data-logs-of]");
  if (logsOf) {
    const source = document.getElementById("logs-source");
    if (source) {
      // A preview made after the page loaded is not among the choices yet.
      if (![...source.options].some((option) => option.value === logsOf.dataset.logsOf)) {
        source.append(new Option(logsOf.dataset.logsLabel, logsOf.dataset.logsOf));
      }
      source.value = logsOf.dataset.logsOf;
      source.dispatchEvent(new Event("change", { bubbles: true }));
      document.getElementById("logs")?.scrollIntoView({ block: "nearest" });
    }
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
  source.addEventListener("change", start);
  follow.addEventListener("change", () => (follow.checked ? start() : stream?.close()));
  start();
}
followLogs();
