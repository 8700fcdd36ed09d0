// The messages of a conversation as DOM. An assistant message: its reasoning in a collapsible
// block, its Markdown, its tool calls, the figures of its generation, and actions (copy,
// regenerate, edit, branch). User messages are shown as plain text.
import { h, formatNumber } from './dom.js';
import { renderInto, copyText } from './markdown.js';

// `actions`: { regenerate(msg), edit(msg, text), branch(msg) }; `isLast(msg)` says whether msg
// is the conversation's last message (regenerate is offered there only).
export function messageView(msg, actions, isLast) {
  const el = h('article', { className: `message ${msg.role}`, 'data-id': msg.id,
                            'aria-label': msg.role === 'user' ? 'You' : 'Assistant' });
  updateMessageView(el, msg, actions, isLast);
  return el;
}

export function updateMessageView(el, msg, actions, isLast, streaming = false) {
  el.replaceChildren();
  el.append(h('div', { className: 'role' }, msg.role === 'user' ? 'You' : (msg.model || 'Assistant')));
  if (msg.reasoning) {
    const open = streaming && !msg.content;
    el.append(h('details', { className: 'reasoning', open },
                h('summary', {}, open ? 'Thinking…' : 'Reasoning'),
                h('div', { className: 'reasoning-text' }, msg.reasoning)));
  }
  if (msg.attachments?.length) {
    el.append(h('ul', { className: 'attached', 'aria-label': 'Attached files' },
                msg.attachments.map((a) => h('li', {}, a.image
                  ? h('img', { className: 'thumb', src: a.image, alt: a.name, title: a.name })
                  : `📎 ${a.name}`))));
  }
  const body = h('div', { className: msg.role === 'user' ? 'content plain' : 'content markdown' });
  if (msg.role === 'user') body.textContent = msg.content;
  else renderInto(body, msg.content);
  el.append(body);
  if (msg.tool_calls?.length) {
    el.append(h('div', { className: 'tool-calls' }, msg.tool_calls.map((t) =>
      h('div', { className: 'tool-call', role: 'group', 'aria-label': `Tool call ${t.name}` },
        h('div', { className: 'tool-name' }, `Tool call: ${t.name}`),
        h('pre', {}, h('code', {}, t.arguments))))));
  }
  if (msg.error) el.append(h('p', { className: 'error', role: 'alert' }, msg.error));
  if (msg.stopped) el.append(h('p', { className: 'note' }, 'Stopped.'));
  if (streaming) {
    el.classList.add('streaming');
    return;
  }
  el.classList.remove('streaming');
  if (msg.stats) el.append(h('div', { className: 'figures' }, statsText(msg.stats)));
  el.append(actionBar(el, msg, actions, isLast));
}

function actionBar(el, msg, actions, isLast) {
  const bar = h('div', { className: 'actions' },
    h('button', { type: 'button', onclick: (e) => copyText(msg.content, e.currentTarget),
                  'aria-label': 'Copy this message' }, 'Copy'),
    h('button', { type: 'button', onclick: () => startEdit(el, msg, actions), 'aria-label': 'Edit this message' },
      'Edit'),
    h('button', { type: 'button', onclick: () => actions.branch(msg),
                  'aria-label': 'Continue from this message in a new conversation' }, 'Branch'));
  if (msg.role === 'assistant' && isLast(msg)) {
    bar.append(h('button', { type: 'button', onclick: () => actions.regenerate(msg),
                             'aria-label': 'Generate this answer again' }, 'Regenerate'));
  }
  return bar;
}

function startEdit(el, msg, actions) {
  const area = h('textarea', { className: 'edit', value: msg.content, rows: Math.min(20, msg.content.split('\n').length + 1),
                               'aria-label': 'Edit the message' });
  const save = h('button', { type: 'button', onclick: () => actions.edit(msg, area.value) },
                 msg.role === 'user' ? 'Send' : 'Save');
  const cancel = h('button', { type: 'button', onclick: () => actions.rerender() }, 'Cancel');
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Escape') { e.stopPropagation(); actions.rerender(); }
  });
  el.querySelector('.content').replaceWith(h('div', { className: 'editing' }, area, h('div', { className: 'actions' }, cancel, save)));
  el.querySelector('.actions:not(.editing .actions)')?.remove();
  area.focus();
}

// "12.3 tokens/s · first token 210 ms · context 345 / 4096 · 120 cached"
export function statsText(s) {
  const parts = [];
  if (Number.isFinite(s.tokens_per_second)) parts.push(`${formatNumber(s.tokens_per_second)} tokens/s`);
  if (Number.isFinite(s.ttft_ms)) parts.push(`first token ${Math.round(s.ttft_ms)} ms`);
  if (Number.isFinite(s.completion_tokens)) parts.push(`${s.completion_tokens} tokens`);
  if (Number.isFinite(s.context_used)) {
    parts.push(`context ${s.context_used}${s.n_ctx ? ` / ${s.n_ctx}` : ''}`);
  }
  if (Number.isFinite(s.cached_tokens)) parts.push(`${s.cached_tokens} prompt tokens cached`);
  return parts.join(' · ');
}
