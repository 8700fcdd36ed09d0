// Model output -> safe HTML: Markdown (marked), math (KaTeX: $…$, $$…$$, \(…\), \[…\]), code
// highlighted (highlight.js), and everything through DOMPurify before it reaches the DOM. The
// page's Content-Security-Policy forbids inline scripts besides.
import { marked } from 'marked';
import DOMPurify from 'dompurify';
import hljs from 'highlight.js';
import katex from 'katex';

// KaTeX writes a console warning for each character its fonts lack (any script but Latin and
// Greek); the text is still shown, so those warnings are dropped rather than repeated per chunk.
function math(tex, displayMode) {
  const warn = console.warn;
  console.warn = () => {};
  try {
    return katex.renderToString(tex, { displayMode, throwOnError: false, strict: 'ignore', maxSize: 50,
                                       maxExpand: 1000, trust: false });
  } finally {
    console.warn = warn;
  }
}

// Marked extensions: tried before marked's own rules, so `\[` is math rather than an escape.
const mathExtensions = [
  {
    name: 'mathBlock', level: 'block',
    start: (src) => src.match(/\$\$|\\\[/)?.index,
    tokenizer(src) {
      const m = /^\$\$([\s\S]+?)\$\$|^\\\[([\s\S]+?)\\\]/.exec(src);
      if (m) return { type: 'mathBlock', raw: m[0], text: (m[1] ?? m[2]).trim() };
      return undefined;
    },
    renderer: (t) => `<div class="math-block">${math(t.text, true)}</div>`,
  },
  {
    name: 'mathInline', level: 'inline',
    start: (src) => src.match(/\$|\\\(/)?.index,
    tokenizer(src) {
      const m = /^\$\$([^$]+?)\$\$|^\$(?!\s)([^$\n]+?)(?<!\s)\$(?!\d)|^\\\(([\s\S]+?)\\\)/.exec(src);
      if (m) return { type: 'mathInline', raw: m[0], text: m[1] ?? m[2] ?? m[3], display: m[1] !== undefined };
      return undefined;
    },
    renderer: (t) => math(t.text, t.display),
  },
];

const escapeHtml = (s) => s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

// Raw HTML in model output is shown as the text it is, never interpreted: a model that writes
// <script> or <img onerror> shows exactly that. (DOMPurify below is the second line.)
marked.use({ extensions: mathExtensions, renderer: { html: (html) => escapeHtml(html) } });
marked.setOptions({
  gfm: true,
  breaks: false,
  langPrefix: 'hljs language-',
  highlight(code, lang) {
    const name = (lang || '').split(/\s/)[0];
    try {
      if (name && hljs.getLanguage(name)) return hljs.highlight(name, code, true).value;
    } catch {
      // highlighting is optional: marked escapes the plain code
    }
    return null;
  },
});

// Debian 12's node-dompurify (2.4.1+dfsg+~2.4.0-2+deb12u1, a security backport) reads an undeclared
// variable in sanitize() (`shadowNode.__depth`, a nesting check of the document's first node that
// the per-node check repeats), which throws a ReferenceError for every input holding a tag. A
// global of depth 0 makes that one check pass; the per-node depth checks still run. Harmless once
// the package is fixed.
globalThis.shadowNode ??= { __depth: 0 };

DOMPurify.addHook('afterSanitizeAttributes', (node) => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

const purifyOptions = { FORBID_TAGS: ['style', 'form', 'input', 'button', 'textarea', 'select', 'iframe'],
                        FORBID_ATTR: ['id', 'name'] };

// Sanitized HTML of `text` as Markdown.
export function renderMarkdown(text) {
  let html;
  try {
    html = marked.parse(text);
  } catch {
    html = escapeHtml(text);
  }
  return DOMPurify.sanitize(html, purifyOptions);
}

// Puts `text` rendered into `el`, and a copy button on each code block.
export function renderInto(el, text) {
  el.innerHTML = renderMarkdown(text);
  for (const pre of el.querySelectorAll('pre')) {
    const code = pre.querySelector('code');
    const button = document.createElement('button');
    button.type = 'button';
    button.className = 'copy-code';
    button.textContent = 'Copy';
    button.setAttribute('aria-label', 'Copy this code');
    button.addEventListener('click', () => copyText(code ? code.textContent : pre.textContent, button));
    pre.prepend(button);
  }
}

export async function copyText(text, button) {
  try {
    await navigator.clipboard.writeText(text);
    if (button) {
      const was = button.textContent;
      button.textContent = 'Copied';
      setTimeout(() => { button.textContent = was; }, 1200);
    }
  } catch {
    // no clipboard (an insecure origin): select nothing, say nothing
  }
}
