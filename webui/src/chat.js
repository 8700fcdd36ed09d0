// One streamed answer from POST v1/chat/completions: the request built from a conversation,
// the deltas folded into an assistant message, and the figures people want measured around it.
import { request, events, modelProps } from './api.js';

// The text a user message sends: what was typed, then each attached text file in a fenced block.
function userText(m) {
  let text = m.content;
  for (const a of m.attachments ?? []) {
    if (a.text !== undefined) text += `\n\n--- ${a.name} ---\n\`\`\`\n${a.text}\n\`\`\``;
  }
  return text;
}

// A user message's content: its text, or (with attached images) text and image_url parts.
function userContent(m) {
  const images = (m.attachments ?? []).filter((a) => a.image);
  if (!images.length) return userText(m);
  return [{ type: 'text', text: userText(m) },
          ...images.map((a) => ({ type: 'image_url', image_url: { url: a.image } }))];
}

export function chatRequest(conv, model) {
  const messages = [];
  if (conv.system.trim()) messages.push({ role: 'system', content: conv.system });
  for (const m of conv.messages) {
    if (m.role === 'user') messages.push({ role: 'user', content: userContent(m) });
    else if (m.content) messages.push({ role: 'assistant', content: m.content });
  }
  const body = { model, messages, stream: true, stream_options: { include_usage: true } };
  for (const [k, v] of Object.entries(conv.params)) if (Number.isFinite(v)) body[k] = v;
  return body;
}

// Streams the answer into `msg` ({content, reasoning, tool_calls}), calling update() as text
// arrives; sets msg.stats when done, msg.stopped when `signal` aborts, and throws other errors.
export async function streamAnswer(conv, msg, model, signal, update) {
  const started = performance.now();
  let first = 0;
  let usage = null;
  let timings = null;  // the server's own (llama-server's shape): exact where the network batches chunks
  let chunks = 0;
  const calls = [];
  try {
    const res = await request('v1/chat/completions', { method: 'POST', body: chatRequest(conv, model), signal });
    for await (const ev of events(res)) {
      if (ev.error) throw new Error(ev.error.message ?? String(ev.error));
      if (ev.usage) usage = ev.usage;
      if (ev.timings) timings = ev.timings;
      const delta = ev.choices?.[0]?.delta;
      if (!delta) continue;
      if (delta.reasoning_content) msg.reasoning = (msg.reasoning ?? '') + delta.reasoning_content;
      if (delta.content) msg.content += delta.content;
      for (const t of delta.tool_calls ?? []) {
        const c = (calls[t.index ?? 0] ??= { name: '', arguments: '' });
        if (t.function?.name) c.name += t.function.name;
        if (t.function?.arguments) c.arguments += t.function.arguments;
      }
      if (calls.length) msg.tool_calls = calls.filter(Boolean);
      if (delta.content || delta.reasoning_content || delta.tool_calls) {
        chunks += 1;
        if (!first) first = performance.now();
        update();
      }
    }
  } catch (e) {
    if (e.name !== 'AbortError') throw e;
    msg.stopped = true;
  } finally {
    msg.stats = await figures(model, started, first, performance.now(), usage, timings, chunks);
  }
}

// Time to first token and tokens/s as the server measured them when it says (timings), else as
// this page saw the chunks arrive.
async function figures(model, started, first, ended, usage, timings, chunks) {
  const s = {};
  if (first) s.ttft_ms = first - started;
  const generated = usage?.completion_tokens ?? chunks;
  if (usage) s.completion_tokens = usage.completion_tokens;
  if (first && generated > 1 && ended > first) s.tokens_per_second = (generated - 1) / ((ended - first) / 1000);
  if (timings && timings.predicted_n > 1 && timings.predicted_per_second > 0) {
    s.tokens_per_second = timings.predicted_per_second;
  }
  if (usage) {
    s.context_used = usage.prompt_tokens + usage.completion_tokens;
    const cached = usage.prompt_tokens_details?.cached_tokens;
    if (Number.isFinite(cached)) s.cached_tokens = cached;
    try {
      s.n_ctx = (await modelProps(model)).n_ctx;
    } catch {
      // the figures stand without the context size
    }
  }
  return s;
}
