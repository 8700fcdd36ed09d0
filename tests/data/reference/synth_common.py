"""Helpers of the random-weight model writers here (synth_lfm2.py, synth_qwen_vl.py, synth_smolvlm.py): the conventions of
../shared/tools/synth_arch.py (weights N(0, 1/fan_in), norms 1 + N(0, 0.1^2), F32) and a donor's tokenizer.
Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy."""
import numpy as np
import gguf


def copy_tokenizer(donor_path, w, extra=()):
    """Writes the donor's tokenizer.* keys into the GGUFWriter w, with the (text, token type) pairs of `extra` appended
    to its tokens (score 0); returns the vocabulary size."""
    donor = gguf.GGUFReader(donor_path)
    tok_fields = {k: f for k, f in donor.fields.items() if k.startswith("tokenizer.")}
    appended = {"tokenizer.ggml.tokens": [t for t, _ in extra], "tokenizer.ggml.scores": [0.0 for _ in extra],
                "tokenizer.ggml.token_type": [ty for _, ty in extra]}
    for k, f in tok_fields.items():
        t = f.types[0]
        if t == gguf.GGUFValueType.ARRAY:
            w.add_array(k, list(f.contents()) + appended.get(k, []))
        elif t == gguf.GGUFValueType.STRING:
            w.add_string(k, f.contents())
        else:
            w.add_key_value(k, f.contents(), t)
    return len(tok_fields["tokenizer.ggml.tokens"].contents()) + len(extra)


class Weights:
    """Random tensors from one generator, in the order they are asked for."""

    def __init__(self, rng):
        self.rng = rng

    def mat(self, rows, cols):  # gguf shape (cols = fan_in, rows) -> numpy (rows, cols)
        return (self.rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)

    def norm(self, n):
        return (1.0 + 0.1 * self.rng.standard_normal(n)).astype(np.float32)
