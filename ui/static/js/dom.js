// h builds an element: h('a', {href: '#/x', onclick: fn}, 'text', child).
// Text is always set as text, never parsed as HTML.
// SVG elements are named as such, or with an svg: prefix ('svg:a').
export function h(tag, attrs = {}, ...children) {
  const svg = tag.startsWith('svg:') || ['svg', 'rect', 'circle', 'line', 'text', 'g', 'title'].includes(tag);
  const el = svg ? document.createElementNS('http://www.w3.org/2000/svg', tag.replace(/^svg:/, '')) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.setAttribute('class', v);
    else if (v === true) el.setAttribute(k, '');
    else el.setAttribute(k, String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// errorBox shows a daemon error with its help text.
export function errorBox(e) {
  return h('div', { class: 'error', role: 'alert' }, e.message || String(e), e.help ? h('span', { class: 'help' }, said(e.help)) : null);
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return d.toLocaleString();
}

export function ago(iso) {
  if (!iso) return '';
  const s = Math.max(0, (Date.now() - new Date(iso).getTime()) / 1000);
  if (s < 60) return Math.round(s) + ' s ago';
  if (s < 3600) return Math.round(s / 60) + ' min ago';
  if (s < 86400) return Math.round(s / 3600) + ' h ago';
  return Math.round(s / 86400) + ' d ago';
}

export function duration(secs) {
  const d = Math.floor(secs / 86400), hh = Math.floor(secs / 3600) % 24, m = Math.floor(secs / 60) % 60;
  return (d ? d + 'd ' : '') + (hh ? hh + 'h ' : '') + m + 'm';
}

// redraw asks the page to draw the named view again if it is still the one
// shown (a view's live update); the page keeps what was typed and focused.
export function redraw(name) {
  window.dispatchEvent(new CustomEvent('loci:redraw', { detail: name }));
}

// fill replaces el's children with the given ones, leaving out null,
// undefined and false (a part a view does not show) and flattening arrays.
export function fill(el, ...children) {
  el.replaceChildren(...children.flat(Infinity).filter((c) => c !== undefined && c !== null && c !== false));
}

// said turns a message with commands in backticks ('run `loci mine /path`')
// into text and <code> elements, the backticks dropped: the dashboard's
// help names the commands to type the way the CLI's help writes them.
export function said(text) {
  return String(text).split('`').map((part, i) => (i % 2 ? h('code', {}, part) : part)).filter((part) => part !== '');
}
