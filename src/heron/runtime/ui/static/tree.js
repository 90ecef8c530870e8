// The canvas's tree flattened into rows: parents over their children, oldest first.
//
// A pure function of the cards, so the canvas can rebuild it on every change and
// render only the rows in view (a virtualised list, not a layout engine).

const byCreated = (a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : a.node_id < b.node_id ? -1 : 1);

/**
 * The visible rows: `{card, depth, hasChildren, expanded, match}`.
 *
 * `matches(card)` says which nodes the filter keeps (null: every node); a kept node's
 * ancestors are shown too, as context, so it is never seen out of its tree. While
 * filtering, every branch is open.
 */
export function flatten(cards, collapsed, matches = null) {
  const children = new Map();
  const roots = [];
  for (const card of cards.values()) {
    const parent = card.parent && cards.has(card.parent) ? card.parent : null;
    if (parent === null) roots.push(card);
    else {
      if (!children.has(parent)) children.set(parent, []);
      children.get(parent).push(card);
    }
  }
  let shown = null;
  if (matches) {
    shown = new Set();
    for (const card of cards.values()) {
      if (!matches(card)) continue;
      let id = card.node_id;
      while (id && !shown.has(id)) {
        shown.add(id);
        const up = cards.get(id);
        id = up && up.parent && cards.has(up.parent) ? up.parent : null;
      }
    }
  }
  const rows = [];
  const visit = (card, depth) => {
    if (shown && !shown.has(card.node_id)) return;
    const kids = children.get(card.node_id) || [];
    const expanded = shown ? true : !collapsed.has(card.node_id);
    rows.push({ card, depth, hasChildren: kids.length > 0, expanded, match: !matches || matches(card) });
    if (expanded) for (const kid of kids.sort(byCreated)) visit(kid, depth + 1);
  };
  for (const root of roots.sort(byCreated)) visit(root, 0);
  // (a cycle cannot happen: a parent exists before its child)
  return rows;
}
