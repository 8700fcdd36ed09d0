// The chat page: conversations (store.js) on the left, the chosen one in the middle, a model
// picker above. State lives here; the views are rebuilt from it.
import { $, h } from './dom.js';
import { ApiError, listModels, loadModel, onUnauthorized, setApiKey } from './api.js';
import { streamAnswer } from './chat.js';
import { messageView, updateMessageView } from './messages.js';
import * as store from './store.js';
import { initSidebar, renderSidebar } from './sidebar.js';
import { initSettings } from './settings.js';

const state = {
  conversations: [],
  current: null,    // the conversation shown
  models: [],       // GET v1/models
  model: '',        // the picker's choice
  running: null,    // { controller, conv, msg, el } while an answer streams
  attachments: [],  // files for the next message: [{name, text}] or [{name, image: data URL}]
};
window.ggufd = state;  // for the browser's console (and the tests)

// ---- conversations ----

function persist(conv) {
  conv.updated = Date.now();
  try {
    store.saveConversation(conv);
  } catch (e) {
    showStatus(`Not saved: this browser's storage is full (${e.message}). Delete or export old conversations.`, true);
  }
  refreshList();
}

function refreshList() {
  state.conversations = store.listConversations();
  renderSidebar(state, { open: openConversation, rename, remove });
}

function openConversation(id) {
  const conv = state.conversations.find((c) => c.id === id) ?? store.newConversation(state.model);
  state.current = conv;
  if (conv.model && state.models.some((m) => m.id === conv.model)) selectModel(conv.model, false);
  renderMessages();
  renderSidebar(state, { open: openConversation, rename, remove });
  document.body.classList.remove('sidebar-open');
}

function newChat() {
  const c = store.newConversation(state.model, state.current ?? {});
  c.messages = [];
  state.current = c;
  renderMessages();
  renderSidebar(state, { open: openConversation, rename, remove });
  $('input').focus();
}

function rename(conv, title) {
  conv.title = title.trim();
  persist(conv);
}

function remove(conv) {
  store.deleteConversation(conv.id);
  if (state.current?.id === conv.id) state.current = null;
  refreshList();
  if (!state.current) newChat();
}

// ---- messages ----

const actions = {
  regenerate(msg) {
    const conv = state.current;
    conv.messages = conv.messages.slice(0, conv.messages.indexOf(msg));
    generate(conv);
  },
  edit(msg, text) {
    const conv = state.current;
    msg.content = text;
    if (msg.role === 'user') {
      conv.messages = conv.messages.slice(0, conv.messages.indexOf(msg) + 1);
      generate(conv);
    } else {
      persist(conv);
      renderMessages();
    }
  },
  branch(msg) {
    const from = state.current;
    const c = store.newConversation(from.model, from);
    c.title = `${store.titleOf(from)} (branch)`;
    c.messages = structuredClone(from.messages.slice(0, from.messages.indexOf(msg) + 1));
    persist(c);
    openConversation(c.id);
  },
  rerender: () => renderMessages(),
};
const isLast = (msg) => state.current?.messages.at(-1) === msg;

function renderMessages() {
  const list = $('messages');
  const conv = state.current;
  list.replaceChildren(...(conv?.messages ?? []).map((m) => messageView(m, actions, isLast)));
  if (!conv?.messages.length) {
    list.append(h('p', { className: 'empty' }, 'Ask anything. Markdown, code and math are shown formatted.'));
  }
  list.scrollTop = list.scrollHeight;
  const lastStats = conv?.messages.findLast((m) => m.stats)?.stats;
  $('stats').textContent = '';
  if (lastStats?.n_ctx) $('stats').textContent = `Context: ${lastStats.context_used} of ${lastStats.n_ctx} tokens`;
}

async function send() {
  const text = $('input').value;
  if (state.running || (!text.trim() && !state.attachments.length)) return;
  if (!state.model) {
    showStatus('No model to chat with.', true);
    return;
  }
  const conv = state.current;
  conv.messages.push({ id: store.newId(), role: 'user', content: text,
                       attachments: state.attachments.length ? state.attachments : undefined });
  state.attachments = [];
  renderAttachments();
  $('input').value = '';
  await generate(conv);
}

async function generate(conv) {
  conv.model = state.model;
  const msg = { id: store.newId(), role: 'assistant', content: '', model: state.model };
  conv.messages.push(msg);
  persist(conv);
  renderMessages();
  const list = $('messages');
  const el = list.querySelector(`[data-id="${msg.id}"]`);
  updateMessageView(el, msg, actions, isLast, true);  // no actions until the answer is done
  const controller = new AbortController();
  state.running = { controller, conv, msg, el };
  setRunning(true);
  let pending = false;
  const update = () => {
    if (pending) return;
    pending = true;
    requestAnimationFrame(() => {
      pending = false;
      if (!el.isConnected) return;
      const atBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 80;
      updateMessageView(el, msg, actions, isLast, true);
      if (atBottom) list.scrollTop = list.scrollHeight;
    });
  };
  try {
    await streamAnswer(conv, msg, state.model, controller.signal, update);
  } catch (e) {
    msg.error = e instanceof ApiError ? `${e.status}: ${e.message}` : e.message;
  } finally {
    state.running = null;
    setRunning(false);
    persist(conv);
    if (state.current === conv) renderMessages();
    refreshModels();
  }
}

function stop() { state.running?.controller.abort(); }

function setRunning(on) {
  $('stop').hidden = !on;
  $('send').disabled = on;
}

// ---- models ----

const chats = (m) => !m.capabilities || m.capabilities.includes('chat');

async function refreshModels() {
  try {
    state.models = await listModels();
  } catch (e) {
    showStatus(`Models: ${e.message}`, true);
    return;
  }
  const picker = $('model');
  const offered = state.models.filter(chats);
  if (!offered.some((m) => m.id === state.model)) state.model = offered[0]?.id ?? '';
  picker.replaceChildren(...offered.map((m) =>
    h('option', { value: m.id, selected: m.id === state.model }, `${m.id}${m.status && m.status !== 'loaded' ? ` (${m.status})` : ''}`)));
  picker.disabled = offered.length === 0;
  if (!offered.length) showStatus('This server has no model that chats.', true);
}

async function selectModel(id, load = true) {
  state.model = id;
  $('model').value = id;
  if (state.current) state.current.model = id;
  const m = state.models.find((x) => x.id === id);
  if (!load || !m || m.status === 'loaded') return;
  showStatus(`Loading ${id}…`);
  try {
    await loadModel(id, (p) => {
      if (p.total) showStatus(`Loading ${id}: ${Math.round((100 * p.done) / p.total)} %`);
    });
    showStatus(`${id} is loaded.`);
  } catch (e) {
    showStatus(`${id} failed to load: ${e.message}`, true);
  }
  await refreshModels();
}

function showStatus(text, error = false) {
  const s = $('model-status');
  s.textContent = text;
  s.classList.toggle('error', error);
}

// ---- composer, attachments, keys ----

function renderAttachments() {
  $('attachments').replaceChildren(...state.attachments.map((a, i) =>
    h('li', {}, `📎 ${a.name} `, h('button', { type: 'button', className: 'icon', 'aria-label': `Remove ${a.name}`,
                                             onclick: () => { state.attachments.splice(i, 1); renderAttachments(); } }, '✕'))));
}

// A file's bytes as a data: URL.
const dataUrl = (f) => new Promise((resolve, reject) => {
  const r = new FileReader();
  r.onload = () => resolve(r.result);
  r.onerror = () => reject(r.error);
  r.readAsDataURL(f);
});

// Text files are sent inline; images (PNG, JPEG, WebP, GIF) as image parts, for a model with a
// vision projector (the server says so for one without).
async function attach(files) {
  for (const f of files) {
    if (f.size > 4 << 20) {
      showStatus(`${f.name}: over 4 MiB, not attached`, true);
      continue;
    }
    if (/^image\/(png|jpeg|webp|gif)$/.test(f.type)) {
      state.attachments.push({ name: f.name, image: await dataUrl(f) });
      continue;
    }
    const text = await f.text();
    if (text.includes('\u0000')) {
      showStatus(`${f.name}: not a text file, not attached`, true);
      continue;
    }
    state.attachments.push({ name: f.name, text });
  }
  renderAttachments();
}

function askForKey(message) {
  const dialog = $('key-dialog');
  $('key-error').textContent = message || '';
  $('key-input').value = '';
  dialog.showModal();
  return new Promise((resolve) => {
    dialog.addEventListener('close', () => {
      const key = $('key-input').value.trim();
      if (dialog.returnValue === 'save' && key) setApiKey(key);
      resolve(dialog.returnValue === 'save' && key !== '');
    }, { once: true });
  });
}

function initTheme() {
  const saved = localStorage.getItem('ggufd.theme');
  if (saved) document.documentElement.dataset.theme = saved;
  $('theme').addEventListener('click', () => {
    const dark = document.documentElement.dataset.theme
      ? document.documentElement.dataset.theme === 'dark'
      : matchMedia('(prefers-color-scheme: dark)').matches;
    document.documentElement.dataset.theme = dark ? 'light' : 'dark';
    localStorage.setItem('ggufd.theme', document.documentElement.dataset.theme);
  });
}

function initComposer() {
  $('composer').addEventListener('submit', (e) => { e.preventDefault(); send(); });
  $('stop').addEventListener('click', stop);
  $('input').addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  $('attach').addEventListener('click', () => $('attach-file').click());
  $('attach-file').addEventListener('change', (e) => { attach([...e.target.files]); e.target.value = ''; });
  document.addEventListener('keydown', (e) => {
    if (e.key === 'Escape' && state.running) stop();
    if (e.key.toLowerCase() === 'o' && e.shiftKey && (e.ctrlKey || e.metaKey)) { e.preventDefault(); newChat(); }
  });
  $('model').addEventListener('change', (e) => selectModel(e.target.value));
}

async function main() {
  onUnauthorized(askForKey);
  initTheme();
  initComposer();
  initSidebar(state, { newChat, persist, refreshList, open: openConversation, showStatus });
  initSettings(state, persist);
  await refreshModels();
  refreshList();
  if (state.conversations.length) openConversation(state.conversations[0].id);
  else newChat();
}

main();
