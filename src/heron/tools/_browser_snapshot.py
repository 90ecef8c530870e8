"""The page as text: the script run inside the page by ``browser-read``, and its helpers.

Interactive elements carry ref ids stored on the DOM node itself (a
non-enumerable property, so ``cloneNode`` never copies one): the same element
keeps its ref across reads, and a replaced or removed element's ref finds
nothing afterwards.
"""

from __future__ import annotations

__all__ = ["DESCRIBE_SCRIPT", "FIND_SCRIPT", "SNAPSHOT_SCRIPT"]

# Shared by both scripts: a walk over the document that enters open shadow roots.
_WALK = r"""
const KEY = '__heronRef';
function childrenOf(node) {
  if (node.shadowRoot) return Array.from(node.shadowRoot.childNodes);
  if (node.tagName === 'SLOT') {
    const assigned = node.assignedNodes({ flatten: true });
    return assigned.length ? assigned : Array.from(node.childNodes);
  }
  return Array.from(node.childNodes);
}
"""

# Given fresh ids, returns {need, clashing, taken} when fewer usable ones were passed
# than elements lack a ref (clashing: those the page already uses; taken: how many
# refs it holds); otherwise assigns them and returns {text, refs}.
SNAPSHOT_SCRIPT = (
    "(fresh) => {"
    + _WALK
    + r"""
const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'HEAD', 'META', 'LINK', 'svg']);
const BLOCK = new Set(['ADDRESS', 'ARTICLE', 'ASIDE', 'BLOCKQUOTE', 'BODY', 'DD', 'DETAILS',
  'DIALOG', 'DIV', 'DL', 'DT', 'FIELDSET', 'FIGCAPTION', 'FIGURE', 'FOOTER', 'FORM', 'H1', 'H2',
  'H3', 'H4', 'H5', 'H6', 'HEADER', 'HR', 'LEGEND', 'LI', 'MAIN', 'NAV', 'OL', 'P', 'PRE',
  'SECTION', 'TABLE', 'TR', 'UL', 'CAPTION']);
const ROLES = new Set(['button', 'link', 'checkbox', 'radio', 'tab', 'menuitem',
  'menuitemcheckbox', 'menuitemradio', 'option', 'switch', 'textbox', 'combobox', 'searchbox',
  'slider', 'spinbutton', 'treeitem']);
const collapse = (s) => (s || '').replace(/\s+/g, ' ').trim();
const clip = (s, n) => (s.length > n ? s.slice(0, n - 1) + '…' : s);

function interactive(el) {
  const tag = el.tagName;
  if (tag === 'A') return el.hasAttribute('href');
  if (tag === 'BUTTON' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'SUMMARY') return true;
  if (tag === 'INPUT') return el.type !== 'hidden';
  const role = el.getAttribute('role');
  if (role && ROLES.has(role)) return true;
  // Only the outermost editable element: its children are its content.
  if (el.isContentEditable) return !(el.parentElement && el.parentElement.isContentEditable);
  return clickable(el);
}

// A script-driven control (a div with a click handler) shows itself by its pointer
// cursor: take the outermost such element, unless real controls sit inside it.
function clickable(el) {
  if (getComputedStyle(el).cursor !== 'pointer') return false;
  const parent = el.parentElement;
  if (parent && getComputedStyle(parent).cursor === 'pointer') return false;
  return !el.querySelector(CONTROLS) && collapse(el.innerText) !== '';
}
const CONTROLS = 'a[href], button, input, select, textarea, summary, [role], [contenteditable]';

function role(el) {
  const explicit = el.getAttribute('role');
  if (explicit && ROLES.has(explicit)) return explicit;
  switch (el.tagName) {
    case 'A': return 'link';
    case 'BUTTON': case 'SUMMARY': return 'button';
    case 'SELECT': return 'select';
    case 'TEXTAREA': return 'textarea';
    case 'INPUT': {
      const t = el.type;
      if (t === 'checkbox' || t === 'radio') return t;
      if (['submit', 'button', 'reset', 'image'].includes(t)) return 'button';
      if (t === 'range') return 'slider';
      if (t === 'file') return 'file-input';
      if (t === 'text' || t === 'search' || t === 'password' || t === 'email' || t === 'url'
          || t === 'tel' || t === 'number') return t === 'text' ? 'textbox' : 'textbox:' + t;
      return 'input:' + t;
    }
  }
  return el.isContentEditable ? 'textbox' : 'clickable';
}

function name(el) {
  const aria = el.getAttribute('aria-label');
  if (aria && aria.trim()) return collapse(aria);
  const by = el.getAttribute('aria-labelledby');
  if (by) {
    const t = collapse(by.split(/\s+/).map((id) => {
      const target = document.getElementById(id);
      return target ? target.innerText : '';
    }).join(' '));
    if (t) return t;
  }
  if (el.labels && el.labels.length) {
    // A label wrapping its control holds the control's text too (a select's options): drop it.
    const t = collapse(Array.from(el.labels).map((l) => {
      const copy = l.cloneNode(true);
      copy.querySelectorAll('input, select, textarea, button').forEach((c) => c.remove());
      return copy.textContent;
    }).join(' '));
    if (t) return t;
  }
  const tag = el.tagName;
  if (tag === 'INPUT') {
    if (['submit', 'button', 'reset'].includes(el.type)) {
      return el.value || (el.type === 'reset' ? 'Reset' : el.type === 'submit' ? 'Submit' : '');
    }
    if (el.type === 'image') return el.alt || 'Submit';
  }
  if (tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT') {
    return collapse(el.getAttribute('placeholder') || el.title || el.name || '');
  }
  let text = collapse(el.innerText);
  if (!text) {
    const img = el.querySelector('img[alt]');
    text = collapse((img && img.alt) || el.title || '');
  }
  return text;
}

function details(el) {
  const parts = [];
  const tag = el.tagName;
  if (tag === 'A') parts.push('-> ' + clip(el.getAttribute('href') || '', 200));
  if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) {
    parts.push(el.checked ? 'checked' : 'unchecked');
  } else if (tag === 'INPUT' || tag === 'TEXTAREA') {
    if (el.value && !['submit', 'button', 'reset', 'image'].includes(el.type)) {
      const shown = el.type === 'password' ? '*'.repeat(Math.min(el.value.length, 12)) : el.value;
      parts.push('value=' + JSON.stringify(clip(shown, 200)));
    }
  } else if (tag === 'SELECT') {
    const chosen = Array.from(el.selectedOptions).map((o) => collapse(o.label));
    if (chosen.length) parts.push('selected=' + JSON.stringify(chosen.join(', ')));
    const options = Array.from(el.options).map((o) => collapse(o.label));
    const listed = options.slice(0, 25).join(' | ');
    parts.push('options=[' + listed + (options.length > 25 ? ' | …' : '') + ']');
  } else if (el.isContentEditable && el.innerText.trim()) {
    parts.push('value=' + JSON.stringify(clip(collapse(el.innerText), 200)));
  }
  const aria = (a) => el.getAttribute(a) === 'true';
  if (aria('aria-checked')) parts.push('checked');
  if (aria('aria-expanded')) parts.push('expanded');
  if (aria('aria-selected')) parts.push('selected');
  if (el.disabled || aria('aria-disabled')) parts.push('disabled');
  return parts.length ? ' ' + parts.join(' ') : '';
}

function describe(el) {
  const label = clip(name(el), 120);
  return role(el) + (label ? ' ' + JSON.stringify(label) : '') + details(el);
}

// First pass: the visible content as a flat list of text, breaks and elements.
const items = [];
const taken = new Set();
let missing = 0;
function walk(node, hiddenText) {
  if (node.nodeType === Node.TEXT_NODE) {
    if (!hiddenText) items.push(node.data);
    return;
  }
  if (node.nodeType !== Node.ELEMENT_NODE && node.nodeType !== Node.DOCUMENT_FRAGMENT_NODE) return;
  if (node.nodeType === Node.ELEMENT_NODE) {
    const el = node;
    if (SKIP.has(el.tagName) || el.hidden) return;
    const style = getComputedStyle(el);
    if (style.display === 'none') return;
    // visibility:hidden hides this element, yet a child may set visibility:visible again.
    hiddenText = style.visibility === 'hidden' || style.visibility === 'collapse';
    if (interactive(el)) {
      if (!hiddenText) {
        if (el[KEY] === undefined) missing += 1;
        else taken.add(el[KEY]);
        items.push(el);
      }
      return;
    }
    const tag = el.tagName;
    if (tag === 'BR') { items.push('\n'); return; }
    if (tag === 'IMG') {
      if (el.alt && !hiddenText) items.push(' [image: ' + collapse(el.alt) + '] ');
      return;
    }
    if (tag === 'IFRAME') {
      items.push('\n[frame: ' + (el.getAttribute('src') || 'inline') + ']\n');
      return;
    }
    const block = BLOCK.has(tag) || style.display === 'block' || style.display === 'flex'
      || style.display === 'grid' || style.display === 'table-row' || style.display === 'list-item';
    if (block) items.push('\n');
    if (/^H[1-6]$/.test(tag)) items.push('#'.repeat(Number(tag[1])) + ' ');
    else if (tag === 'LI') items.push('- ');
    else if (tag === 'TD' || tag === 'TH') items.push(' | ');
    for (const child of childrenOf(el)) walk(child, hiddenText);
    if (block) items.push('\n');
    return;
  }
  for (const child of childrenOf(node)) walk(child, hiddenText);
}
walk(document.body || document.documentElement, false);
// Tools of another environment sharing this browser may have numbered elements
// from their own sequence: never hand out an id the page already uses.
const usable = fresh.filter((id) => !taken.has(id));
if (missing > usable.length) {
  return { need: missing, clashing: fresh.filter((id) => taken.has(id)), taken: taken.size };
}

// Second pass: hand out the fresh ids in document order and render.
let next = 0;
const refs = [];
const out = items.map((item) => {
  if (typeof item === 'string') return item;
  if (item[KEY] === undefined) {
    Object.defineProperty(item, KEY, { value: usable[next++], configurable: true });
  }
  refs.push(item[KEY]);
  return ' ' + describe(item) + ' [ref=' + item[KEY] + '] ';
});
const text = out.join('').split('\n')
  .map((line) => line.replace(/[ \t\u00a0]+/g, ' ').trim())
  .filter((line, i, all) => line || (i > 0 && all[i - 1]))
  .join('\n').trim();
return { text, refs, used: next };
}"""
)

# The element holding ref ``ref``, or null.
FIND_SCRIPT = (
    "(ref) => {"
    + _WALK
    + r"""
const stack = [document.documentElement];
while (stack.length) {
  const node = stack.pop();
  if (node.nodeType === Node.ELEMENT_NODE && node[KEY] === ref) return node;
  for (const child of childrenOf(node)) {
    if (child.nodeType === Node.ELEMENT_NODE || child.nodeType === Node.DOCUMENT_FRAGMENT_NODE) {
      stack.push(child);
    }
  }
}
return null;
}"""
)


# One element as ``browser-read`` shows it (``el => string``): the describe() helpers of
# SNAPSHOT_SCRIPT, cut out rather than written twice.
DESCRIBE_SCRIPT = (
    "(el) => {"
    + SNAPSHOT_SCRIPT[SNAPSHOT_SCRIPT.index("const ROLES") : SNAPSHOT_SCRIPT.index("// First pass")]
    + "return describe(el);\n}"
)
