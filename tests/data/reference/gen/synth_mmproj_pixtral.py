#!/usr/bin/python3
"""A random-weight pixtral vision projector (an mmproj GGUF: Mistral Small 3.1 / Ministral 3's vision encoder with its
patch merger), with the keys and tensors llama.cpp b10108's tools/mtmd reads (clip.cpp, models/pixtral.cpp), for
references from libmtmd (../shared/tools/golden/golden_mtmd.cpp). Conventions of ../shared/tools/synth_mmproj.py:
weights N(0, 1/sqrt(fan_in)), norms around 1, F32, seed fixed.

The encoder: patch embedding without bias; an RMS pre-norm (v.pre_ln); per layer RMS norms ln1 / ln2 with weights,
q / k / v / out without biases, 2-D RoPE (base 10000, adjacent pairs: a head's first half turned by the patch's row,
its second half by its column at the odd frequencies), scores times 1/sqrt(head), a gated SiLU FFN (clip.use_silu);
then the patch merger (RMS norm mm.input_norm, each merge x merge block of patches unfolded to one vector,
mm.patch_merger), the LLaVA projector (mm.1 + bias, GELU, mm.2 + bias) and v.token_embd.img_break after each row of
tokens but the last. The image keeps its aspect (sides multiples of patch x merge, 8 to 1024 tokens).

Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
Usage: synth_mmproj_pixtral.py OUT.gguf [--text-embd 128] [--seed 5] [--embd 64] [--layers 2] [--heads 2]
                               [--ff 128] [--patch 8] [--merge 2]"""
import argparse
import numpy as np
import gguf

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--seed", type=int, default=5); ap.add_argument("--text-embd", type=int, default=128)
ap.add_argument("--embd", type=int, default=64); ap.add_argument("--layers", type=int, default=2)
ap.add_argument("--heads", type=int, default=2); ap.add_argument("--ff", type=int, default=128)
ap.add_argument("--patch", type=int, default=8); ap.add_argument("--merge", type=int, default=2)
a = ap.parse_args()
rng = np.random.default_rng(a.seed)
V, L, H, FF, PS, T, M = a.embd, a.layers, a.heads, a.ff, a.patch, a.text_embd, a.merge

w = gguf.GGUFWriter(a.out, "clip")
w.add_name("synth-mmproj-pixtral"); w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_string("clip.projector_type", "pixtral"); w.add_bool("clip.has_vision_encoder", True)
w.add_bool("clip.use_silu", True)
w.add_uint32("clip.vision.embedding_length", V); w.add_uint32("clip.vision.feed_forward_length", FF)
w.add_uint32("clip.vision.block_count", L); w.add_uint32("clip.vision.attention.head_count", H)
w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
w.add_uint32("clip.vision.image_size", 1024); w.add_uint32("clip.vision.patch_size", PS)
w.add_uint32("clip.vision.projection_dim", T)
w.add_array("clip.vision.image_mean", [0.48145466, 0.4578275, 0.40821073])
w.add_array("clip.vision.image_std", [0.26862954, 0.26130258, 0.27577711])
w.add_uint32("clip.vision.spatial_merge_size", M)


def mat(rows, cols): return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
def norm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
def bias(n): return (0.05 * rng.standard_normal(n)).astype(np.float32)


t = w.add_tensor
t("v.patch_embd.weight", (rng.standard_normal((V, 3, PS, PS)) / np.sqrt(3 * PS * PS)).astype(np.float32))
t("v.pre_ln.weight", norm(V))
for i in range(L):
    p = f"v.blk.{i}."
    for n in ("attn_q", "attn_k", "attn_v", "attn_out"): t(p + n + ".weight", mat(V, V))
    t(p + "ln1.weight", norm(V)); t(p + "ln2.weight", norm(V))
    t(p + "ffn_gate.weight", mat(FF, V)); t(p + "ffn_up.weight", mat(FF, V)); t(p + "ffn_down.weight", mat(V, FF))
t("mm.input_norm.weight", norm(V))
t("mm.patch_merger.weight", mat(V, V * M * M))
t("mm.1.weight", mat(T, V)); t("mm.1.bias", bias(T))
t("mm.2.weight", mat(T, T)); t("mm.2.bias", bias(T))
t("v.token_embd.img_break", (0.5 * rng.standard_normal(T)).astype(np.float32))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(f"wrote {a.out}: pixtral projector, ViT {L} layers x {V} ({H} heads), {PS}px patches merged {M}x{M}, to {T}")
