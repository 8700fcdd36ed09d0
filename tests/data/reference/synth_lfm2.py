#!/usr/bin/python3
"""A random-weight lfm2 model (LFM2: gated short convolutions beside GQA attention) for llama.cpp references,
or with --moe an lfm2moe one (LFM2-8B-A1B, LFM2-24B-A2B: the same stack, experts in place of the FFN past the
leading dense layers).

The conventions of ../shared/tools/synth_arch.py: weights N(0, 1/fan_in), norms 1 + N(0, 0.01), F32, the tokenizer
copied from a donor (default ../shared/models/stories260K.gguf, a 512-token SPM vocabulary); quantize afterwards
with llama-quantize. Tensor names, shapes and keys as llama.cpp b10108's src/models/lfm2.cpp loads them:
attention.head_count_kv per layer (0 marks a short-convolution layer), shortconv.l_cache, the final norm named
token_embd_norm, tied output. lfm2moe as src/models/lfm2moe.cpp loads it: leading_dense_block_count dense layers,
then per layer ffn_gate_inp, ffn_{gate,up,down}_exps, exp_probs_b.bias (the selection bias, random and nonzero so
it changes choices), expert_feed_forward_length, expert_gating_func sigmoid.
Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
Usage: synth_lfm2.py OUT.gguf [--donor F.gguf] [--seed N] [--swa N] [--moe]"""
import argparse, os
import numpy as np
import gguf

from synth_common import Weights, copy_tokenizer

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--donor", default=os.path.join(here, "..", "..", "..", "..", "shared", "models", "stories260K.gguf"))
ap.add_argument("--seed", type=int, default=1)
ap.add_argument("--swa", type=int, default=0, help="attention.sliding_window for the attention layers (0: none)")
ap.add_argument("--moe", action="store_true", help="arch lfm2moe: 5 layers, layer 0 dense, 8 experts (2 used)")
a = ap.parse_args()
rng = np.random.default_rng(a.seed)

E, H, KV, FF, L_CACHE = 128, 4, 2, 192, 3
ATTN = [False, False, True, False, False, True]  # layers 2 and 5 attend; the others convolve
N_DENSE, N_EXP, N_USED, FF_EXP = 1, 8, 2, 32  # --moe
if a.moe:
    ATTN = [False, False, True, False, True]  # layers 2 and 4 attend; layer 0 alone has the dense FFN
L, D = len(ATTN), E // H
arch = "lfm2moe" if a.moe else "lfm2"

w = gguf.GGUFWriter(a.out, arch)
w.add_name("synth-" + arch)
w.add_context_length(4096); w.add_embedding_length(E); w.add_block_count(L); w.add_feed_forward_length(FF)
w.add_head_count(H); w.add_head_count_kv([KV if att else 0 for att in ATTN])
w.add_layer_norm_rms_eps(1e-5); w.add_rope_freq_base(1e6); w.add_uint32(arch + ".shortconv.l_cache", L_CACHE)
if a.swa: w.add_sliding_window(a.swa)
if a.moe:
    w.add_leading_dense_block_count(N_DENSE); w.add_expert_count(N_EXP); w.add_expert_used_count(N_USED)
    w.add_expert_feed_forward_length(FF_EXP); w.add_expert_gating_func(gguf.ExpertGatingFuncType.SIGMOID)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
n_vocab = copy_tokenizer(a.donor, w)
mat, norm = Weights(rng).mat, Weights(rng).norm
def t(name, arr): w.add_tensor(name, arr)

t("token_embd.weight", mat(n_vocab, E))
t("token_embd_norm.weight", norm(E))  # the final norm (llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2)
for i, att in enumerate(ATTN):
    p = f"blk.{i}."
    t(p + "attn_norm.weight", norm(E)); t(p + "ffn_norm.weight", norm(E))
    if a.moe and i >= N_DENSE:  # 3-D experts: numpy (n_expert, rows, cols), gguf [cols, rows, n_expert]
        t(p + "ffn_gate_inp.weight", mat(N_EXP, E))
        t(p + "ffn_gate_exps.weight", np.stack([mat(FF_EXP, E) for _ in range(N_EXP)]))
        t(p + "ffn_up_exps.weight", np.stack([mat(FF_EXP, E) for _ in range(N_EXP)]))
        t(p + "ffn_down_exps.weight", np.stack([mat(E, FF_EXP) for _ in range(N_EXP)]))
        t(p + "exp_probs_b.bias", (0.5 * rng.standard_normal(N_EXP)).astype(np.float32))
    else:
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
print(f"wrote {a.out}: {arch}, {L} layers ({sum(ATTN)} attention), embd {E}, vocab {n_vocab}")
