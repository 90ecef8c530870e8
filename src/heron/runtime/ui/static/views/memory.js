// The memory browser: a profile's entries as a folder tree, search, and an entry's
// body and history.

import { get, post, query } from "../api.js";
import { h, replace, when } from "../dom.js";
import { notify } from "../notify.js";

const PAGE = 200;

async function allEntries(profile) {
  const items = [];
  let cursor;
  for (;;) {
    const page = await get(`/v1/memory${query({ profile, limit: PAGE, cursor })}`);
    items.push(...page.items);
    cursor = page.next_cursor;
    if (!cursor) return items;
  }
}

/** Entries grouped into nested folders by their paths ("a/b/c"). */
function folderTree(entries) {
  const root = { folders: new Map(), entries: [] };
  for (const entry of entries) {
    const parts = entry.path.split("/");
    parts.pop();
    let at = root;
    for (const part of parts) {
      if (!at.folders.has(part)) at.folders.set(part, { folders: new Map(), entries: [] });
      at = at.folders.get(part);
    }
    at.entries.push(entry);
  }
  return root;
}

function renderFolder(folder, open) {
  return h(
    "ul",
    { class: "mem-tree" },
    [...folder.folders].map(([name, sub]) => h("li", {}, h("details", { open: true }, h("summary", {}, `${name}/`), renderFolder(sub, open)))),
    folder.entries.map((entry) =>
      h("li", {}, h("button", { type: "button", class: "linkish", dataset: { entryId: entry.entry_id }, on: { click: () => open(entry) } }, entry.title || entry.slug)),
    ),
  );
}

/** Mount the memory browser in `root`; returns its cleanup. */
export function mount(root) {
  const profile = h("select", { id: "memory-profile", "aria-label": "Profile" }, h("option", { value: "default" }, "default"));
  const search = h("input", { type: "search", id: "memory-search", placeholder: "Search memory", "aria-label": "Search memory" });
  const searchForm = h("form", { class: "inline" }, search, h("button", { type: "submit" }, "Search"));
  const tree = h("nav", { class: "mem-side", "aria-label": "Memory entries" });
  const detail = h("div", { class: "mem-detail", id: "memory-detail" }, h("p", { class: "muted" }, "Pick an entry."));

  const open = async (entry) => {
    try {
      const p = profile.value;
      const [full, history] = await Promise.all([
        get(`/v1/memory/${encodeURIComponent(entry.entry_id)}${query({ profile: p })}`),
        get(`/v1/memory/${encodeURIComponent(entry.entry_id)}/history${query({ profile: p, limit: 50 })}`),
      ]);
      replace(
        detail,
        h("h2", {}, full.title || full.slug),
        h("p", { class: "muted" }, h("code", {}, full.path), ` · version ${full.version} · `, full.tags.map((t) => h("span", { class: "badge" }, t))),
        h("div", { class: "msg-text" }, full.body),
        h("h3", {}, "History"),
        h(
          "ol",
          { class: "mem-history", reversed: true },
          history.map((v) =>
            h("li", {}, h("details", {}, h("summary", {}, `v${v.version} · ${v.op}${v.author ? ` by ${v.author}` : ""} · `, when(v.created_at)), h("div", { class: "msg-text" }, v.body))),
          ),
        ),
      );
    } catch (error) {
      notify(`Could not read the entry: ${error.message}`, "error");
    }
  };

  const load = async () => {
    try {
      const entries = await allEntries(profile.value);
      replace(tree, entries.length ? renderFolder(folderTree(entries), open) : h("p", { class: "empty" }, "This profile's memory is empty."));
    } catch (error) {
      if (error.status !== 401) notify(`Could not read memory: ${error.message}`, "error");
    }
  };

  searchForm.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = search.value.trim();
    if (!text) return load();
    try {
      const hits = await post("/v1/memory/search", { query: text, profile: profile.value, limit: 50 });
      replace(
        tree,
        h("p", { class: "muted" }, `${hits.length} hit${hits.length === 1 ? "" : "s"} for “${text}”`),
        h("ul", { class: "mem-tree" }, hits.map((hit) => h("li", {}, h("button", { type: "button", class: "linkish", on: { click: () => open(hit.entry) } }, hit.entry.path), h("p", { class: "hint" }, hit.snippet)))),
      );
    } catch (error) {
      notify(`Search failed: ${error.message}`, "error");
    }
  });
  profile.addEventListener("change", load);

  replace(
    root,
    h(
      "section",
      { class: "memory", "aria-labelledby": "memory-title" },
      h("div", { class: "toolbar" }, h("h1", { id: "memory-title" }, "Memory"), profile, searchForm),
      h("div", { class: "mem-body" }, tree, detail),
    ),
  );
  get("/v1/profiles")
    .then((profiles) => {
      replace(profile, profiles.map((p) => h("option", { value: p.name }, p.name)));
      profile.value = "default";
    })
    .catch(() => {});
  load();
  return () => {};
}
