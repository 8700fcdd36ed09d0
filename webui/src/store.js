// Conversations, kept in this browser's localStorage (one key per conversation plus none else:
// the list is every key with the prefix). Nothing leaves the browser but what a request sends.
//
// A conversation: { id, title, created, updated, model, system, params: {temperature, ...},
//   messages: [{ id, role: 'user'|'assistant', content, reasoning?, tool_calls?, attachments? (text or image):
//   [{name, text} or {name, image: data URL}], model?, stats?, error?, stopped? }] }

const PREFIX = 'ggufd.conversation.';

export function newId() {
  return Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
}

export function newConversation(model, from = {}) {
  const now = Date.now();
  return { id: newId(), title: '', created: now, updated: now, model, system: from.system ?? '',
           params: { ...(from.params ?? {}) }, messages: [] };
}

export function listConversations() {
  const list = [];
  for (let i = 0; i < localStorage.length; ++i) {
    const key = localStorage.key(i);
    if (!key.startsWith(PREFIX)) continue;
    try {
      list.push(JSON.parse(localStorage.getItem(key)));
    } catch {
      // a damaged entry is left alone rather than lost
    }
  }
  return list.sort((a, b) => b.updated - a.updated);
}

// Throws when the browser's storage is full (the caller says so).
export function saveConversation(c) {
  localStorage.setItem(PREFIX + c.id, JSON.stringify(c));
}

export function deleteConversation(id) { localStorage.removeItem(PREFIX + id); }

const str = (v, max = 1 << 24) => (typeof v === 'string' ? v.slice(0, max) : '');
const num = (v) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

// One imported conversation, rebuilt field by field from what the file holds: nothing but
// known fields of the right types is kept, so a crafted file cannot plant anything else.
// A text file's text, or an image as a data: URL of one of the four image types (nothing else
// may reach an <img>).
function cleanAttachment(a) {
  const image = str(a?.image);
  if (/^data:image\/(png|jpeg|webp|gif);base64,[A-Za-z0-9+/=]*$/.test(image)) return { name: str(a?.name, 256), image };
  return { name: str(a?.name, 256), text: str(a?.text) };
}

function cleanConversation(c) {
  if (typeof c !== 'object' || c === null || !Array.isArray(c.messages)) return null;
  const params = {};
  for (const k of ['temperature', 'top_p', 'top_k', 'min_p', 'repeat_penalty', 'max_tokens', 'seed']) {
    const v = num(c.params?.[k]);
    if (v !== undefined) params[k] = v;
  }
  const messages = c.messages.filter((m) => m && (m.role === 'user' || m.role === 'assistant')).map((m) => ({
    id: newId(), role: m.role, content: str(m.content), reasoning: str(m.reasoning),
    model: str(m.model, 256) || undefined,
    attachments: Array.isArray(m.attachments)
      ? m.attachments.map(cleanAttachment) : undefined,
    tool_calls: Array.isArray(m.tool_calls)
      ? m.tool_calls.map((t) => ({ name: str(t?.name, 256), arguments: str(t?.arguments) })) : undefined,
  }));
  const now = Date.now();
  return { id: newId(), title: str(c.title, 200), created: num(c.created) ?? now, updated: num(c.updated) ?? now,
           model: str(c.model, 256), system: str(c.system), params, messages };
}

// The conversations of an exported file (an array, or {conversations: [...]}); throws on a file
// that is not one.
export function parseImport(text) {
  const data = JSON.parse(text);
  const list = Array.isArray(data) ? data : data?.conversations;
  if (!Array.isArray(list)) throw new Error('not a ggufd export: expected a list of conversations');
  const clean = list.map(cleanConversation).filter(Boolean);
  if (clean.length === 0 && list.length > 0) throw new Error('no conversation in the file has messages');
  return clean;
}

export function exportText(conversations) {
  return JSON.stringify({ format: 'ggufd-conversations', version: 1, conversations }, null, 2);
}

// A title from the first user message: its first line, shortened.
export function titleOf(c) {
  if (c.title) return c.title;
  const first = c.messages.find((m) => m.role === 'user');
  const line = (first?.content || 'New chat').trim().split('\n')[0];
  return line.length > 60 ? `${line.slice(0, 57)}…` : line || 'New chat';
}
