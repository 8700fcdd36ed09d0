// The server's public API, as any client sees it: relative URLs (so the page works behind a path
// prefix), the API key from this browser's storage, server-sent events read from fetch.

const KEY_STORAGE = 'ggufd.apiKey';

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// Called on a 401; resolves true when a (new) key was given and the request should be retried.
let askForKey = async () => false;
export function onUnauthorized(f) { askForKey = f; }

export function apiKey() { return localStorage.getItem(KEY_STORAGE) || ''; }
export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key); else localStorage.removeItem(KEY_STORAGE);
}

function headers(withBody) {
  const h = {};
  if (withBody) h['Content-Type'] = 'application/json';
  const key = apiKey();
  if (key) h.Authorization = `Bearer ${key}`;
  return h;
}

async function errorMessage(res) {
  const text = await res.text().catch(() => '');
  try {
    const j = JSON.parse(text);
    const e = j.error;
    return (typeof e === 'string' ? e : e?.message) || text;
  } catch {
    return text || `${res.status} ${res.statusText}`;
  }
}

// fetch(path) with the key; a 401 asks for a key and retries; any other error status throws
// ApiError with the server's message.
export async function request(path, { method = 'GET', body, signal } = {}) {
  for (;;) {
    const res = await fetch(path, {
      method, signal, headers: headers(body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.status === 401) {
      const message = await errorMessage(res);
      if (await askForKey(message)) continue;
      throw new ApiError(401, message);
    }
    if (!res.ok) throw new ApiError(res.status, await errorMessage(res));
    return res;
  }
}

export async function getJson(path, options) { return (await request(path, options)).json(); }

// The `data:` payloads of a text/event-stream response, parsed as JSON, until [DONE] or its end.
export async function* events(res) {
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value.replace(/\r\n?/g, '\n');
      let end;
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        const data = block.split('\n').filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(l[5] === ' ' ? 6 : 5)).join('\n');
        if (!data) continue;
        if (data === '[DONE]') return;
        yield JSON.parse(data);
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

// GET v1/models: every model the server knows ({id, status, capabilities?, context_length?, ...}).
// A single-model server answers 503 while its model loads: retried until it is ready.
export async function listModels() {
  for (let attempt = 0; ; ++attempt) {
    try {
      return (await getJson('v1/models')).data ?? [];
    } catch (e) {
      if (!(e instanceof ApiError) || e.status !== 503 || attempt >= 600) throw e;
      await new Promise((ok) => setTimeout(ok, 500));
    }
  }
}

// POST models/load; resolves once it is loaded (watching models/events), calling
// progress({done, total}) as the load reports it. Throws the load's error.
export async function loadModel(id, progress) {
  const controller = new AbortController();
  const res = await request('models/events', { signal: controller.signal });
  try {
    const started = await getJson('models/load', { method: 'POST', body: { model: id } });
    if (started.status === 'loaded') return;
    for await (const ev of events(res)) {
      if (ev.model !== id) continue;
      if (ev.type === 'progress') progress?.(ev);
      if (ev.type === 'status' && ev.status === 'loaded') return;
      if (ev.type === 'status' && ev.status === 'failed') throw new ApiError(500, ev.error || `${id} failed to load`);
    }
  } finally {
    controller.abort();
  }
}

const propsCache = new Map();
// GET props?model=: the model's context per slot (n_ctx) and defaults; cached per model.
export async function modelProps(id) {
  if (!propsCache.has(id)) propsCache.set(id, await getJson(`props?model=${encodeURIComponent(id)}`));
  return propsCache.get(id);
}
