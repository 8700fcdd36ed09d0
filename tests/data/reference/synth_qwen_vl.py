#!/usr/bin/python3
"""Random-weight qwen-vl text models for llama.cpp references with their projectors (gen/synth_mmproj.py):

--arch qwen3vl (the default): Qwen3-VL's decoder, qwen3 with interleaved M-RoPE and deepstack, for a qwen3vl_merger
projector that has deepstack layers (gen/synth_mmproj.py qwen3vl_merger --deepstack).

The conventions of ../shared/tools/synth_arch.py: weights N(0, 1/fan_in), norms 1 + N(0, 0.01) (here 0.1, as
synth_lfm2.py), F32, the tokenizer copied from a donor (default ../shared/models/stories260K.gguf, a 512-token SPM
vocabulary); quantize afterwards with llama-quantize. As llama.cpp b10108's src/models/qwen3vl.cpp loads it: embd 128,
3 layers, 2 heads / 1 KV of 64, per-head q/k norms, IMRoPE with rope.dimension_sections [12, 10, 10, 0] (Qwen3-VL's
[24, 20, 20, 0] for half the head) base 5e6, SwiGLU FFN 256, an output matrix, and n_deepstack_layers 2: an image's
row is 128 x 3 wide, and layers 0 and 1 add its second and third slices to their outputs (fewer than the layers:
llama.cpp's graph cannot add deepstack to its last layer, whose rows it first cuts to the outputs).

--arch qwen3vlmoe: Qwen3-VL-MoE's decoder (src/models/qwen3vlmoe.cpp), qwen3vl with qwen3moe's experts in place of
the FFN: 4 experts of 64, 2 used, softmax gating with the chosen weights normalized; seed 29.

--arch qwen2vl: Qwen2-VL's and Qwen2.5-VL's decoder (src/models/qwen2vl.cpp), qwen2 with M-RoPE: the same sizes, q / k / v
biases in place of the q/k norms, rope.dimension_sections [8, 12, 12, 0] side by side (Qwen2-VL's [16, 24, 24, 0] for
half the head) base 1e6, no deepstack; seed 17.
Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
Usage: synth_qwen_vl.py OUT.gguf [--arch qwen3vl|qwen3vlmoe|qwen2vl] [--donor F.gguf] [--seed N]"""
import argparse, os
import numpy as np
import gguf

from synth_common import Weights, copy_tokenizer

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--donor", default=os.path.join(here, "..", "..", "..", "..", "shared", "models", "stories260K.gguf"))
ap.add_argument("--arch", choices=["qwen3vl", "qwen3vlmoe", "qwen2vl"], default="qwen3vl")
ap.add_argument("--seed", type=int)
a = ap.parse_args()
arch = a.arch
v3 = arch in ("qwen3vl", "qwen3vlmoe")
moe = arch == "qwen3vlmoe"
rng = np.random.default_rng(a.seed if a.seed is not None else {"qwen3vl": 11, "qwen3vlmoe": 29, "qwen2vl": 17}[arch])

E, L, H, KV, D, FF, DEEP = 128, 3, 2, 1, 64, 256, (2 if v3 else 0)
N_EXP, N_USED, FF_EXP = 4, 2, 64
w = gguf.GGUFWriter(a.out, arch)
w.add_name("synth-" + arch)
w.add_context_length(4096); w.add_embedding_length(E); w.add_block_count(L); w.add_feed_forward_length(FF)
w.add_head_count(H); w.add_head_count_kv(KV); w.add_key_length(D); w.add_value_length(D)
w.add_rope_dimension_count(D); w.add_layer_norm_rms_eps(1e-6); w.add_rope_freq_base(5e6 if v3 else 1e6)
w.add_array(arch + ".rope.dimension_sections", [12, 10, 10, 0] if v3 else [8, 12, 12, 0])
if v3: w.add_uint32(arch + ".n_deepstack_layers", DEEP)
if moe:
    w.add_expert_count(N_EXP); w.add_expert_used_count(N_USED); w.add_expert_feed_forward_length(FF_EXP)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
n_vocab = copy_tokenizer(a.donor, w)
mat, norm = Weights(rng).mat, Weights(rng).norm
def bias(n): return (0.05 * rng.standard_normal(n)).astype(np.float32)
def t(name, arr): w.add_tensor(name, arr)

t("token_embd.weight", mat(n_vocab, E))
t("output_norm.weight", norm(E))
t("output.weight", mat(n_vocab, E))
for i in range(L):
    p = f"blk.{i}."
    t(p + "attn_norm.weight", norm(E)); t(p + "ffn_norm.weight", norm(E))
    t(p + "attn_q.weight", mat(H * D, E)); t(p + "attn_k.weight", mat(KV * D, E)); t(p + "attn_v.weight", mat(KV * D, E))
    t(p + "attn_output.weight", mat(E, H * D))
    if v3:
        t(p + "attn_q_norm.weight", norm(D)); t(p + "attn_k_norm.weight", norm(D))
    else:
        t(p + "attn_q.bias", bias(H * D)); t(p + "attn_k.bias", bias(KV * D)); t(p + "attn_v.bias", bias(KV * D))
    if moe:
        t(p + "ffn_gate_inp.weight", mat(N_EXP, E))
        t(p + "ffn_gate_exps.weight", np.stack([mat(FF_EXP, E) for _ in range(N_EXP)]))
        t(p + "ffn_up_exps.weight", np.stack([mat(FF_EXP, E) for _ in range(N_EXP)]))
        t(p + "ffn_down_exps.weight", np.stack([mat(E, FF_EXP) for _ in range(N_EXP)]))
    else:
        t(p + "ffn_gate.weight", mat(FF, E)); t(p + "ffn_up.weight", mat(FF, E)); t(p + "ffn_down.weight", mat(E, FF))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(f"wrote {a.out}: {arch}, {L} layers, embd {E}, deepstack {DEEP}, vocab {n_vocab}")
