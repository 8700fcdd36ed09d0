// The settings dialog of the conversation shown: its system prompt and sampling parameters.
import { $ } from './dom.js';

const FIELDS = ['temperature', 'top_p', 'top_k', 'min_p', 'repeat_penalty', 'max_tokens', 'seed'];

export function initSettings(state, persist) {
  const dialog = $('settings');
  const form = $('settings-form');
  $('settings-button').addEventListener('click', () => {
    const conv = state.current;
    $('system-prompt').value = conv.system;
    for (const f of FIELDS) form.elements[f].value = conv.params[f] ?? '';
    dialog.showModal();
  });
  dialog.addEventListener('close', () => {
    if (dialog.returnValue !== 'save') return;
    const conv = state.current;
    conv.system = $('system-prompt').value;
    conv.params = {};
    for (const f of FIELDS) {
      const text = form.elements[f].value.trim();
      if (text !== '' && Number.isFinite(Number(text))) conv.params[f] = Number(text);
    }
    if (conv.messages.length) persist(conv);
  });
}
