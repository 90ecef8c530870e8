// The page's entry point: sign-in check, the header, hash routing, keyboard shortcuts
// and the light/dark theme. Each view is a module with mount(root, params) → cleanup.

import { ApiError, onSessionEnded, startSession } from "./api.js";
import { h, replace } from "./dom.js";
import { openTickets, store } from "./store.js";
import * as canvas from "./views/canvas.js";
import * as create from "./views/create.js";
import * as crons from "./views/crons.js";
import * as inbox from "./views/inbox.js";
import * as memory from "./views/memory.js";
import * as models from "./views/models.js";
import * as node from "./views/node.js";

const ROUTES = [
  [/^#?\/?$/, canvas, "canvas"],
  [/^#\/new$/, create, "new"],
  [/^#\/nodes\/([^/]+)$/, node, "canvas", (m) => ({ id: decodeURIComponent(m[1]) })],
  [/^#\/inbox$/, inbox, "inbox"],
  [/^#\/memory$/, memory, "memory"],
  [/^#\/crons$/, crons, "crons"],
  [/^#\/models$/, models, "models"],
];

const main = document.getElementById("main");
let cleanup = null;
let ended = false;

function route() {
  if (ended) return;
  if (cleanup) cleanup();
  cleanup = null;
  const hash = location.hash || "#/";
  for (const [pattern, view, tab, params] of ROUTES) {
    const match = pattern.exec(hash);
    if (!match) continue;
    for (const link of document.querySelectorAll("#nav a")) {
      if (link.dataset.tab === tab) link.setAttribute("aria-current", "page");
      else link.removeAttribute("aria-current");
    }
    cleanup = view.mount(main, params ? params(match) : {});
    main.focus({ preventScroll: true });
    return;
  }
  replace(main, h("section", {}, h("h1", {}, "Not found"), h("p", {}, h("a", { href: "#/" }, "Back to the canvas"))));
}

// -- theme ------------------------------------------------------------------

const THEME_KEY = "heron.theme";

function applyTheme(theme) {
  const root = document.documentElement;
  if (theme === "light" || theme === "dark") root.dataset.theme = theme;
  else delete root.dataset.theme;
  const dark = theme ? theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
  const toggle = document.getElementById("theme-toggle");
  toggle.setAttribute("aria-pressed", String(dark));
  toggle.textContent = dark ? "Light" : "Dark";
  toggle.title = dark ? "Switch to the light theme (t)" : "Switch to the dark theme (t)";
}

function toggleTheme() {
  const root = document.documentElement;
  const dark = root.dataset.theme ? root.dataset.theme === "dark" : matchMedia("(prefers-color-scheme: dark)").matches;
  const next = dark ? "light" : "dark";
  try {
    localStorage.setItem(THEME_KEY, next);
  } catch {
    // storage may be off: the toggle still works for this page
  }
  applyTheme(next);
}

function savedTheme() {
  try {
    return localStorage.getItem(THEME_KEY);
  } catch {
    return null;
  }
}

// -- keyboard ----------------------------------------------------------------

const GO = { c: "#/", i: "#/inbox", m: "#/memory", r: "#/crons", o: "#/models" };
let pendingG = 0;

function onKey(event) {
  if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target.closest && target.closest("input, textarea, select, [contenteditable]")) {
    if (event.key === "Escape") target.blur();
    return;
  }
  const help = document.getElementById("help");
  if (pendingG && GO[event.key]) {
    event.preventDefault();
    pendingG = 0;
    location.hash = GO[event.key];
    return;
  }
  pendingG = 0;
  switch (event.key) {
    case "g":
      pendingG = setTimeout(() => (pendingG = 0), 1500);
      break;
    case "/": {
      const search = document.getElementById("canvas-search");
      event.preventDefault();
      if (search) search.focus();
      else {
        location.hash = "#/";
        requestAnimationFrame(() => document.getElementById("canvas-search")?.focus());
      }
      break;
    }
    case "n":
      event.preventDefault();
      location.hash = "#/new";
      break;
    case "t":
      toggleTheme();
      break;
    case "?":
      if (!help.open) help.showModal();
      break;
    default:
  }
}

// -- header badges -------------------------------------------------------------

async function updateInboxBadge() {
  const badge = document.getElementById("inbox-count");
  try {
    const tickets = await openTickets();
    badge.textContent = tickets.length ? String(tickets.length) : "";
    badge.hidden = tickets.length === 0;
    badge.setAttribute("aria-label", `${tickets.length} waiting`);
  } catch {
    // kept
  }
}

function updateConnection() {
  const dot = document.getElementById("connection");
  dot.classList.toggle("live", store.connected);
  dot.textContent = store.connected ? "live" : "reconnecting…";
}

// -- the session ---------------------------------------------------------------

function showSessionEnded() {
  ended = true;
  if (cleanup) cleanup();
  cleanup = null;
  document.body.classList.add("signed-out");
  replace(
    main,
    h(
      "section",
      { class: "session-ended", id: "session-ended", role: "alert" },
      h("h1", {}, "Session ended"),
      h("p", {}, "This page is no longer signed in to the daemon (it restarted, or the session expired)."),
      h("p", {}, "Run ", h("code", {}, "heron ui"), " again on the daemon's machine: it opens the page with a new sign-in link."),
    ),
  );
}

async function start() {
  applyTheme(savedTheme());
  matchMedia("(prefers-color-scheme: dark)").addEventListener("change", () => applyTheme(savedTheme()));
  document.getElementById("theme-toggle").addEventListener("click", toggleTheme);
  document.getElementById("help-open").addEventListener("click", () => document.getElementById("help").showModal());
  document.getElementById("help-close").addEventListener("click", () => document.getElementById("help").close());
  document.addEventListener("keydown", onKey);
  onSessionEnded(showSessionEnded);
  try {
    const session = await startSession();
    document.getElementById("version").textContent = `Heron ${session.version}`;
  } catch (error) {
    if (!(error instanceof ApiError && error.status === 401)) {
      replace(main, h("section", { role: "alert" }, h("h1", {}, "The daemon cannot be reached"), h("p", {}, error.message)));
    }
    return;
  }
  store.addEventListener("connection", updateConnection);
  store.addEventListener("inbox", updateInboxBadge);
  store.addEventListener("attention", updateInboxBadge);
  store.start();
  updateInboxBadge();
  window.addEventListener("hashchange", route);
  route();
}

start();
