// A small element builder: h('button', {type: 'button', onclick}, 'Send'). Children are nodes
// or text (always text nodes: never parsed as HTML). Attributes starting with "on" are listeners;
// `className`, `hidden`, `value`, `title` and the like are set as properties.
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k in el && !k.includes('-')) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

export const $ = (id) => document.getElementById(id);

export function formatNumber(n, digits = 1) {
  return Number.isFinite(n) ? n.toFixed(digits) : '–';
}
