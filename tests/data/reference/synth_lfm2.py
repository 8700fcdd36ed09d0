#!/usr/bin/python3
"""A random-weight lfm2 model (LFM2: gated short convolutions beside GQA attention) for llama.cpp references.

The conventions of ../shared/tools/synth_arch.py: weights N(0, 1/fan_in), norms 1 + N(0, 0.01), F32, the tokenizer
copied from a donor (default ../shared/models/stories260K.gguf, a 512-token SPM vocabulary); quantize afterwards
with llama-quantize. Tensor names, shapes and keys as llama.cpp b10108's src/models/lfm2.cpp loads them:
attention.head_count_kv per layer (0 marks a short-convolution layer), shortconv.l_cache, the final norm named
token_embd_norm, tied output.
Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
Usage: synth_lfm2.py OUT.gguf [--donor F.gguf] [--seed N] [--swa N]"""
import argparse, os
import numpy as np
import gguf

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--donor", default=os.path.join(here, "..", "..", "..", "..", "shared", "models", "stories260K.gguf"))
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--swa", type=int, default=0, help="attention.sliding_window for the attention layers (0: none)")
a = ap.parse_args()
rng = np.random.default_rng(a.seed)

E, H, KV, FF, L_CACHE = 128, 4, 2, 192, 3
ATTN = [False, False, True, False, False, True]  # layers 2 and 5 attend; the others convolve
L, D = len(ATTN), E // H

donor = gguf.GGUFReader(a.donor)
tok_fields = {k: f for k, f in donor.fields.items() if k.startswith("tokenizer.")}
n_vocab = len(tok_fields["tokenizer.ggml.tokens"].contents())

w = gguf.GGUFWriter(a.out, "lfm2")
w.add_name("synth-lfm2")
w.add_context_length(4096); w.add_embedding_length(E); w.add_block_count(L); w.add_feed_forward_length(FF)
w.add_head_count(H); w.add_head_count_kv([KV if att else 0 for att in ATTN])
w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(1e6); w.add_uint32("lfm2.shortconv.l_cache", L_CACHE)
if a.swa: w.add_sliding_window(a.swa)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
for k, f in tok_fields.items():
    t = f.types[0]
    if t == gguf.GGUFValueType.ARRAY:
        w.add_array(k, f.contents())
    elif t == gguf.GGUFValueType.STRING:
        w.add_string(k, f.contents())
    else:
        w.add_key_value(k, f.contents(), t)

def mat(rows, cols):  # gguf shape (cols = fan_in, rows) -> numpy (rows, cols)
    return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
def norm(n):
    return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
def t(name, arr): w.add_tensor(name, arr)

t("token_embd.weight", mat(n_vocab, E))
t("token_embd_norm.weight", norm(E))  # the final norm (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2)
for i, att in enumerate(ATTN):
    p = f"blk.{i}."
    t(p + "attn_norm.weight", norm(E)); t(p + "ffn_norm.weight", norm(E))
    t(p + "ffn_gate.weight", mat(FF, E)); t(p + "ffn_up.weight", mat(FF, E)); t(p + "ffn_down.weight", mat(E, FF))
    if att:
        t(p + "attn_q.weight", mat(H * D, E)); t(p + "attn_k.weight", mat(KV * D, E)); t(p + "attn_v.weight", mat(KV * D, E))
        t(p + "attn_output.weight", mat(E, H * D))
        t(p + "attn_q_norm.weight", norm(D)); t(p + "attn_k_norm.weight", norm(D))
    else:
        t(p + "shortconv.in_proj.weight", mat(3 * E, E))
        t(p + "shortconv.conv.weight", mat(E, L_CACHE))  # (n_embd, l_cache): each channel's taps, oldest first
        t(p + "shortconv.out_proj.weight", mat(E, E))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(f"wrote {a.out}: lfm2, {L} layers ({sum(ATTN)} attention), embd {E}, vocab {n_vocab}")
