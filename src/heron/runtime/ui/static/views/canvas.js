// The canvas: every node in its tree, live, as a virtualised list of rows.

import { h, label, replace, statusPill, tokens } from "../dom.js";
import { store } from "../store.js";
import { flatten } from "../tree.js";

const ROW_HEIGHT = 44;
const OVERSCAN = 8;
const STATUSES = ["running", "dormant", "interrupted", "completed", "failed", "cancelled"];
const BADGE_TEXT = {
  asking: "waiting for you",
  interrupted: "interrupted",
  failed: "failed",
  deadline_exceeded: "deadline passed",
  deadline_near: "deadline near",
  waiting: "waiting",
};

// Kept across visits, so coming back from a node finds the canvas as it was left.
const state = { search: "", status: "", collapsed: new Set(), scrollTop: 0, selected: null };

/** The badges a row shows. */
function badges(id) {
  return store.badges(id).map((reason) => h("span", { class: `badge badge-${reason}` }, BADGE_TEXT[reason] || reason));
}

function matcher() {
  const needle = state.search.trim().toLowerCase();
  const status = state.status;
  if (!needle && !status) return null;
  return (card) => {
    if (status === "attention") {
      if (store.badges(card.node_id).length === 0) return false;
    } else if (status && card.status !== status) return false;
    if (!needle) return true;
    return (card.name || "").toLowerCase().includes(needle) || card.node_id.toLowerCase().includes(needle);
  };
}

/** Mount the canvas in `root`; returns its cleanup. */
export function mount(root) {
  const search = h("input", {
    id: "canvas-search",
    type: "search",
    placeholder: "Search by name or id  (/)",
    "aria-label": "Search nodes by name or id",
    value: state.search,
    autocomplete: "off",
  });
  const status = h(
    "select",
    { id: "canvas-status", "aria-label": "Filter by status" },
    h("option", { value: "" }, "All statuses"),
    h("option", { value: "attention" }, "Needs attention"),
    STATUSES.map((s) => h("option", { value: s }, s)),
  );
  status.value = state.status;
  const totals = h("p", { class: "totals", id: "canvas-totals", "aria-live": "polite" });
  const viewport = h("div", { class: "vlist", id: "canvas-list", tabindex: "-1", role: "list", "aria-label": "Nodes" });
  const inner = h("div", { class: "vlist-inner" });
  const empty = h("p", { class: "empty", hidden: true });
  viewport.append(inner);

  replace(
    root,
    h(
      "section",
      { class: "canvas", "aria-labelledby": "canvas-title" },
      h(
        "div",
        { class: "toolbar" },
        h("h1", { id: "canvas-title" }, "Canvas"),
        search,
        status,
        h("a", { class: "button primary", href: "#/new" }, "New node"),
      ),
      totals,
      empty,
      viewport,
    ),
  );

  let rows = [];
  const rendered = new Map(); // node id → row element

  const rebuild = () => {
    rows = flatten(store.cards, state.collapsed, matcher());
    inner.style.height = `${rows.length * ROW_HEIGHT}px`;
    const t = store.totals();
    const running = t.counts.running || 0;
    totals.textContent = `${t.nodes} nodes · ${running} running · ${store.attentionItems.length} need attention · tokens ${tokens(t.input)} in / ${tokens(t.output)} out`;
    empty.hidden = rows.length > 0 || !store.loaded;
    empty.textContent = store.cards.size ? "No node matches the filter." : "No nodes yet. Create one, or start one with `heron nodes create`.";
    paint();
  };

  const paint = () => {
    const top = viewport.scrollTop;
    const height = viewport.clientHeight || 600;
    const first = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const last = Math.min(rows.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    const keep = new Set();
    for (let i = first; i < last; i++) {
      const row = rows[i];
      const id = row.card.node_id;
      keep.add(id);
      let el = rendered.get(id);
      if (!el) {
        el = makeRow(id);
        rendered.set(id, el);
        inner.append(el);
      }
      fillRow(el, row, i);
    }
    for (const [id, el] of rendered) {
      if (keep.has(id)) continue;
      if (el.contains(document.activeElement)) continue; // never pull focus away
      el.remove();
      rendered.delete(id);
    }
  };

  const makeRow = (id) => {
    const toggle = h("button", { class: "toggle", type: "button", "aria-label": "Collapse" });
    toggle.addEventListener("click", () => {
      if (state.collapsed.has(id)) state.collapsed.delete(id);
      else state.collapsed.add(id);
      rebuild();
    });
    const link = h("a", { class: "row-name", href: `#/nodes/${encodeURIComponent(id)}` });
    link.addEventListener("focus", () => {
      state.selected = id;
    });
    return h("div", { class: "row", role: "listitem", dataset: { nodeId: id } }, toggle, link, h("span", { class: "row-meta" }));
  };

  const fillRow = (el, row, index) => {
    const { card } = row;
    el.style.transform = `translateY(${index * ROW_HEIGHT}px)`;
    el.setAttribute("aria-posinset", String(index + 1));
    el.setAttribute("aria-setsize", String(rows.length));
    el.classList.toggle("context", !row.match);
    el.classList.toggle("selected", state.selected === card.node_id);
    const [toggle, link, meta] = el.children;
    toggle.style.marginLeft = `${row.depth * 18}px`;
    toggle.hidden = false;
    toggle.classList.toggle("leaf", !row.hasChildren);
    toggle.disabled = !row.hasChildren;
    toggle.textContent = row.hasChildren ? (row.expanded ? "▾" : "▸") : "·";
    toggle.setAttribute("aria-label", row.expanded ? `Collapse ${label(card)}` : `Expand ${label(card)}`);
    toggle.setAttribute("aria-expanded", String(row.expanded));
    if (!row.hasChildren) toggle.removeAttribute("aria-expanded");
    const name = label(card);
    if (link.textContent !== name) link.textContent = name;
    const creator = card.creator && card.creator !== card.parent ? store.cards.get(card.creator) : null;
    replace(
      meta,
      statusPill(card.status),
      badges(card.node_id),
      h("span", { class: "tok", title: `${card.input_tokens} input, ${card.output_tokens} output tokens` }, `${tokens(card.input_tokens + card.output_tokens)} tok`),
      card.kind ? h("span", { class: "kind" }, card.kind) : null,
      creator ? h("span", { class: "creator" }, `made by ${label(creator)}`) : null,
    );
  };

  const onScroll = () => {
    state.scrollTop = viewport.scrollTop;
    paint();
  };
  viewport.addEventListener("scroll", onScroll, { passive: true });
  search.addEventListener("input", () => {
    state.search = search.value;
    viewport.scrollTop = 0;
    rebuild();
  });
  status.addEventListener("change", () => {
    state.status = status.value;
    viewport.scrollTop = 0;
    rebuild();
  });

  /** j / k (or arrows on a row): move the selection and focus its link. */
  const move = (step) => {
    if (!rows.length) return;
    let index = rows.findIndex((row) => row.card.node_id === state.selected);
    index = index < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, index + step));
    state.selected = rows[index].card.node_id;
    const top = index * ROW_HEIGHT;
    if (top < viewport.scrollTop) viewport.scrollTop = top;
    else if (top + ROW_HEIGHT > viewport.scrollTop + viewport.clientHeight) viewport.scrollTop = top + ROW_HEIGHT - viewport.clientHeight;
    paint();
    const el = rendered.get(state.selected);
    if (el) el.querySelector(".row-name").focus();
  };
  const onKey = (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    const typing = event.target.closest && event.target.closest("input, textarea, select");
    if (typing) return;
    if (event.key === "j" || (event.key === "ArrowDown" && event.target.closest(".row"))) {
      event.preventDefault();
      move(1);
    } else if (event.key === "k" || (event.key === "ArrowUp" && event.target.closest(".row"))) {
      event.preventDefault();
      move(-1);
    }
  };
  document.addEventListener("keydown", onKey);

  store.addEventListener("change", rebuild);
  store.addEventListener("attention", rebuild);
  const onResize = () => paint();
  window.addEventListener("resize", onResize);
  rebuild();
  viewport.scrollTop = state.scrollTop;
  paint();

  return () => {
    store.removeEventListener("change", rebuild);
    store.removeEventListener("attention", rebuild);
    document.removeEventListener("keydown", onKey);
    window.removeEventListener("resize", onResize);
  };
}
