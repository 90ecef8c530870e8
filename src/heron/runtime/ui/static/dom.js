// Building DOM nodes from data without ever parsing it as HTML.
//
// Every string that reaches the page from the API goes through text nodes or
// attributes set with the DOM, never innerHTML: a node's name or output cannot
// become markup.

/**
 * Make an element: h("a", {href: "#/", class: "link"}, "text", child).
 * Attributes: `class`, `dataset` (an object), `on` (event → handler), properties for
 * the rest when the element has them (`value`, `disabled`, `checked`), else attributes.
 * Children: strings (as text), nodes, arrays of them; null/false are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key === "on") for (const [type, fn] of Object.entries(value)) el.addEventListener(type, fn);
    else if (key === "value" || (key in el && typeof value !== "string")) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

/** Append children (strings become text nodes; arrays are flattened). */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace every child of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** "1.2k" style token counts. */
export function tokens(n) {
  if (!n) return "0";
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1000).toFixed(n < 10000 ? 1 : 0)}k`;
  return `${(n / 1e6).toFixed(1)}M`;
}

/** A short local date-time for a wire timestamp (marked so screenshot tests can mask it). */
export function when(iso) {
  if (!iso) return h("span", { class: "muted" }, "—");
  const date = new Date(iso);
  return h("time", { class: "dyn", datetime: iso, title: iso }, date.toLocaleString());
}

/** A status pill. */
export function statusPill(status) {
  return h("span", { class: `pill status-${status}` }, status);
}

/** JSON shown as indented text. */
export function pretty(value) {
  return h("pre", { class: "json" }, JSON.stringify(value, null, 2));
}

/** A node's label: its name, else its id. */
export function label(node) {
  return node.name || node.node_id;
}
