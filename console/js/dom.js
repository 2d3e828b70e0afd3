// DOM helpers. Text always goes in as text nodes (the same as textContent): nothing the admin API
// returns is ever parsed as HTML.

/**
 * Creates an element: `props` are set as properties (or attributes for `for`, `aria-*`, `role`,
 * `data-*`), `on*` functions become listeners, children are nodes or text.
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  append(el, children);
  for (const [k, v] of Object.entries(props)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style' || k === 'innerHTML' || k === 'outerHTML')
      throw new Error(`h(): ${k} is not allowed`);
    else if (k in el && !k.includes('-') && k !== 'role') el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  return el;
}

/** Appends children: nodes as they are, anything else as a text node. */
export function append(el, children) {
  for (const c of children.flat(Infinity)) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

let ids = 0;
/** A unique element id, for label/for pairs. */
export function uid(prefix = 'f') {
  ids += 1;
  return `${prefix}-${ids}`;
}

/** A labelled control: `<div class=field><label for=id>text</label>control</div>`. */
export function field(labelText, control, cls = 'field') {
  if (!control.id) control.id = uid();
  const label = h('label', { for: control.id }, labelText);
  return cls === 'field check'
    ? h('div', { class: cls }, control, label)
    : h('div', { class: cls }, label, control);
}

/** A `<select>` with `[value, text]` options and `value` selected. */
export function select(props, options, value) {
  const el = h(
    'select',
    props,
    options.map(([v, t]) => h('option', { value: v }, t)),
  );
  if (value !== undefined) el.value = value;
  return el;
}

/** A UTC timestamp as `<time>`, or a dash. */
export function when(ts) {
  if (!ts) return h('span', { class: 'muted' }, '—');
  return h('time', { dateTime: ts }, ts.replace('T', ' ').replace(/Z$/, ' UTC'));
}

/** A small status badge. */
export function badge(text, kind = 'info') {
  return h('span', { class: `badge ${kind}` }, text);
}

/** A table: header texts, then rows of cells (nodes or text). `caption` is for screen readers too. */
export function table(caption, headers, rows, emptyText = 'Nothing here yet.') {
  if (rows.length === 0) return h('p', { class: 'empty' }, emptyText);
  return h(
    'table',
    {},
    h('caption', { class: 'muted' }, caption),
    h(
      'thead',
      {},
      h(
        'tr',
        {},
        headers.map((t) => h('th', { scope: 'col' }, t)),
      ),
    ),
    h(
      'tbody',
      {},
      rows.map((cells) =>
        h(
          'tr',
          {},
          cells.map((c) => h('td', {}, c)),
        ),
      ),
    ),
  );
}

/** Replaces an element's children, skipping null/false ones (`replaceChildren` would write "null"). */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}
