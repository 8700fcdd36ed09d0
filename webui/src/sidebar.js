// The conversation list: search, open, rename, delete; export and import as JSON.
import { $, h } from './dom.js';
import * as store from './store.js';

// `app`: { newChat, persist, refreshList, open, showStatus }.
export function initSidebar(state, app) {
  $('new-chat').addEventListener('click', app.newChat);
  $('search').addEventListener('input', () => renderSidebar(state, lastHandlers));
  $('open-sidebar').addEventListener('click', () => document.body.classList.add('sidebar-open'));
  $('close-sidebar').addEventListener('click', () => document.body.classList.remove('sidebar-open'));
  $('export').addEventListener('click', () => {
    const blob = new Blob([store.exportText(store.listConversations())], { type: 'application/json' });
    const a = h('a', { href: URL.createObjectURL(blob), download: `ggufd-conversations-${new Date().toISOString().slice(0, 10)}.json` });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 1000);
  });
  $('import').addEventListener('click', () => $('import-file').click());
  $('import-file').addEventListener('change', async (e) => {
    const file = e.target.files[0];
    e.target.value = '';
    if (!file) return;
    try {
      const list = store.parseImport(await file.text());
      for (const c of list) store.saveConversation(c);
      app.refreshList();
      app.showStatus(`Imported ${list.length} conversation${list.length === 1 ? '' : 's'}.`);
    } catch (err) {
      app.showStatus(`Import failed: ${err.message}`, true);
    }
  });
}

let lastHandlers = null;

function matches(c, query) {
  if (!query) return true;
  const q = query.toLowerCase();
  return store.titleOf(c).toLowerCase().includes(q) || c.messages.some((m) => m.content.toLowerCase().includes(q));
}

// `handlers`: { open(id), rename(conv, title), remove(conv) }.
export function renderSidebar(state, handlers) {
  lastHandlers = handlers;
  const query = $('search').value.trim();
  const items = state.conversations.filter((c) => matches(c, query)).map((c) => {
    const title = store.titleOf(c);
    const current = c.id === state.current?.id;
    const open = h('button', { type: 'button', className: 'open', onclick: () => handlers.open(c.id),
                               'aria-current': current ? 'true' : undefined }, title);
    const renameButton = h('button', { type: 'button', className: 'icon', title: 'Rename', 'aria-label': `Rename ${title}`,
                                       onclick: () => startRename(li, c, state, handlers) }, '✎');
    const del = h('button', { type: 'button', className: 'icon', title: 'Delete', 'aria-label': `Delete ${title}`,
                              onclick: () => { if (confirm(`Delete "${title}"?`)) handlers.remove(c); } }, '✕');
    const li = h('li', { className: current ? 'current' : '' }, open, renameButton, del);
    return li;
  });
  $('conversations').replaceChildren(...items);
}

function startRename(li, conv, state, handlers) {
  const input = h('input', { type: 'text', value: store.titleOf(conv), 'aria-label': 'New title' });
  let finished = false;
  const done = (save) => {
    if (finished) return;
    finished = true;
    if (save && input.value.trim()) handlers.rename(conv, input.value);
    else renderSidebar(state, handlers);
  };
  input.addEventListener('keydown', (e) => {
    if (e.key === 'Enter') { e.preventDefault(); done(true); }
    if (e.key === 'Escape') { e.stopPropagation(); done(false); }
  });
  input.addEventListener('blur', () => done(true));
  li.replaceChildren(input);
  input.focus();
  input.select();
}
