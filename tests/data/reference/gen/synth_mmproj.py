#!/usr/bin/python3
"""Random-weight vision projectors (mmproj GGUFs) of the kinds ../shared does not have, with the keys and tensors llama.cpp
b10108's tools/mtmd reads (clip.cpp, models/<kind>.cpp), for references from libmtmd
(../shared/tools/golden/golden_mtmd.cpp). Conventions of ../shared/tools/synth_mmproj.py: weights N(0, 1/sqrt(fan_in)),
norms around 1, F32, a fixed seed per kind.

gemma4v (Gemma 4's vision tower; seed 3, text width 256):
  patch embedding without bias (pixels scaled to 2x - 1 by the graph, so mean 0 / std 1 here); learned
  position tables, one for columns and one for rows (v.position_embd.weight, (2, pos_size, n_embd)); per layer RMS
  norms ln1 / ln2 with weights, q / k / v / out without biases, per-head RMS norms on q and k (attn_q_norm,
  attn_k_norm; v is RMS-normed without a weight), 2-D NeoX RoPE (first half of each head by column, second half by
  row, base 100), attention scale 1, post-attention and post-FFN RMS norms, a gated FFN (no activation key: quick GELU), and a layer out scale
  (v.blk.N.out_scale, one value). Then k x k average pooling (scale_factor), times sqrt(n_embd), minus v.std_bias
  times v.std_scale, an RMS norm without weight and mm.input_projection (n_embd -> text width). Gemma4's clippable
  linears: some matrices carry .input_min/.input_max/.output_min/.output_max scalars that clamp what goes in and
  comes out; this file gives them to layer 0's attn_q/k/v and ffn_down and to the projection, tight enough to clamp.

pixtral (Mistral Small 3.1 / Ministral 3's vision encoder with its patch merger; seed 5, text width 128):
  patch embedding without bias; an RMS pre-norm (v.pre_ln); per layer RMS norms ln1 / ln2 with weights,
  q / k / v / out without biases, 2-D RoPE (base 10000, adjacent pairs: a head's first half turned by the patch's row,
  its second half by its column at the odd frequencies), scores times 1/sqrt(head), a gated SiLU FFN (clip.use_silu);
  then the patch merger (RMS norm mm.input_norm, each merge x merge block of patches unfolded to one vector,
  mm.patch_merger), the LLaVA projector (mm.1 + bias, GELU, mm.2 + bias) and v.token_embd.img_break after each row of
  tokens but the last. The image keeps its aspect (sides multiples of patch x merge, 8 to 1024 tokens).

qwen3vl_merger (Qwen3-VL / Qwen3.5's vision encoder; seed 7, text width 256, as synth-qwen35):
  two patch embeddings (v.patch_embd.weight and .weight.1: the temporal patch's two frames, both the image) with a bias;
  a learned position table of 16 x 16 (v.position_embd.weight), bilinearly resized (corners aligned) to the patch
  grid; per layer LayerNorms ln1 / ln2 with biases, one fused attn_qkv with a bias, attn_out with a bias, M-RoPE of
  the vision kind (NeoX pairs over the whole head: the first quarter of pairs turned by the patch's row, the second by
  its column, base 10000), scores times 1/sqrt(head), a GELU FFN (up, down, biases; clip.use_gelu); then the merger:
  a LayerNorm (v.post_ln), each 2 x 2 block of patches concatenated (mm.0 + bias, GELU, mm.2 + bias). The image keeps
  its aspect (sides multiples of patch x 2, 8 to 4096 tokens); in the decoder its tokens take 2-D M-RoPE positions.
  With --deepstack (Qwen3-VL): the outputs of those layers, each 2 x 2 block concatenated, through their own merger
  (v.deepstack.N: LayerNorm over the 4 patches, fc1 + bias, GELU, fc2 + bias), appended to each token's row.

qwen2vl_merger (Qwen2-VL's vision encoder; seed 13, text width 128, as synth-qwen2vl) and qwen2.5vl_merger (Qwen2.5-VL's;
seed 15): two patch embeddings (the temporal patch's two frames) without a bias (llama.cpp refuses one); no learned
positions: M-RoPE of the vision kind alone; per layer q / k / v / out with biases (separate, as the converter splits
the fused qkv), scores times 1/sqrt(head); then v.post_ln (the merger's ln_q) and the 2 x 2 block merger (mm.0 + bias,
GELU, mm.2 + bias). qwen2vl_merger: LayerNorms with biases, a quick GELU FFN with biases (no activation key, as its
converter writes it). qwen2.5vl_merger: RMS norms, a gated SiLU FFN with biases on gate, up and down (clip.use_silu),
and window attention: clip.vision.n_wa_pattern 2 (layer 1 full, layer 0 within windows of Qwen2.5-VL's 112 pixels,
which llama.cpp takes from no key). Its patches are 28 pixels (--patch 28 by default here), so that a window is 2 x 2
tokens and the test image (fitted to 224 x 168, 4 x 3 tokens) has whole and partial windows.

idefics3 (SmolVLM's SigLIP encoder and pixel-shuffle connector; seed 19, text width 128, as synth-smolvlm): 32-pixel tiles
(clip.vision.image_size) of 4-pixel patches (8 x 8) with a bias, a learned position table of 64 rows, LayerNorm blocks
with biases, q / k / v / out with biases, a GELU FFN with biases (clip.use_gelu), v.post_ln; then each 2 x 2 block of
patches (projector.scale_factor 2) concatenated through mm.model.fc (no bias): 16 tokens a tile. The image's longer
side is scaled to clip.vision.preproc_image_size 80 and each side rounded up to tiles: the 96 x 72 test image becomes
96 x 64, 3 x 2 tiles (letterboxed: its scaled 86 x 64 centred on black), then the overview.

Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
Usage: synth_mmproj.py {gemma4v,pixtral,qwen3vl_merger,qwen2vl_merger,qwen2.5vl_merger,idefics3} OUT.gguf [--seed S] [--text-embd T] [--embd 64] [--layers 2] [--heads 2]
                       [--ff 128] [--patch 8] [--side 16] [--deepstack 0,1] [--wa-pattern 2]
                       [--tile 32] [--longest 80] [--merge 2]   (the defaults make the files
                       kept here; synth-mmproj-qwen3vl-deepstack-F32 is qwen3vl_merger --deepstack 0,1 --seed 9 --text-embd 128)"""
import argparse
import numpy as np
import gguf

ap = argparse.ArgumentParser()
ap.add_argument("kind", choices=["gemma4v", "pixtral", "qwen3vl_merger", "qwen2vl_merger", "qwen2.5vl_merger", "idefics3"]); ap.add_argument("out")
ap.add_argument("--seed", type=int); ap.add_argument("--text-embd", type=int)
ap.add_argument("--embd", type=int, default=64); ap.add_argument("--layers", type=int, default=2)
ap.add_argument("--heads", type=int, default=2); ap.add_argument("--ff", type=int, default=128)
ap.add_argument("--patch", type=int)  # default 8 (qwen2.5vl_merger 28)
ap.add_argument("--side", type=int, default=16)  # qwen3vl_merger: the learned position table's side
ap.add_argument("--deepstack", default="")
ap.add_argument("--wa-pattern", type=int, default=2)
ap.add_argument("--tile", type=int, default=32)     # idefics3: image_size (a tile's side)
ap.add_argument("--longest", type=int, default=80)  # idefics3: preproc_image_size
ap.add_argument("--merge", type=int, default=2)     # idefics3: scale_factor  # qwen2.5vl_merger: every n-th layer attends to the whole image  # qwen3vl_merger: "0,1": those layers' outputs merged too (Qwen3-VL)
a = ap.parse_args()
rng = np.random.default_rng(a.seed if a.seed is not None else {"gemma4v": 3, "pixtral": 5, "qwen3vl_merger": 7,
                                                              "qwen2vl_merger": 13, "qwen2.5vl_merger": 15, "idefics3": 19}[a.kind])
T = a.text_embd or {"gemma4v": 256, "pixtral": 128, "qwen3vl_merger": 256, "qwen2vl_merger": 128, "qwen2.5vl_merger": 128,
                    "idefics3": 128}[a.kind]
V, L, H, FF, PS = a.embd, a.layers, a.heads, a.ff, a.patch or {"qwen2.5vl_merger": 28, "idefics3": 4}.get(a.kind, 8)
D = V // H


def mat(rows, cols): return (rng.standard_normal((rows, cols)) / np.sqrt(cols)).astype(np.float32)
def norm(n): return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
def bias(n): return (0.05 * rng.standard_normal(n)).astype(np.float32)
def scalar(v): return np.array([v], dtype=np.float32)


w = gguf.GGUFWriter(a.out, "clip")
w.add_name(f"synth-mmproj-{a.kind}"); w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_string("clip.projector_type", a.kind); w.add_bool("clip.has_vision_encoder", True)
w.add_uint32("clip.vision.embedding_length", V); w.add_uint32("clip.vision.feed_forward_length", FF)
w.add_uint32("clip.vision.block_count", L); w.add_uint32("clip.vision.attention.head_count", H)
w.add_uint32("clip.vision.patch_size", PS); w.add_uint32("clip.vision.projection_dim", T)
t = w.add_tensor
t("v.patch_embd.weight", (rng.standard_normal((V, 3, PS, PS)) / np.sqrt(3 * PS * PS)).astype(np.float32))


def gemma4v():
    M, POS = 3, 32
    # no clip.use_gelu / use_silu, as Gemma 4's converter writes it: llama.cpp then runs quick GELU
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.image_size", 224)  # unused by gemma4v (the converter writes 224)
    w.add_array("clip.vision.image_mean", [0.0, 0.0, 0.0]); w.add_array("clip.vision.image_std", [1.0, 1.0, 1.0])
    w.add_uint32("clip.vision.projector.scale_factor", M)
    t("v.position_embd.weight", (0.5 * rng.standard_normal((2, POS, V))).astype(np.float32))
    for i in range(L):
        p = f"v.blk.{i}."
        for n in ("attn_q", "attn_k", "attn_v", "attn_out"): t(p + n + ".weight", mat(V, V))
        # q and k are RMS-normed and the scores not scaled: norm weights near 0.35 keep the scores in a trained
        # model's range (near 1, scores of std ~5.7 make the softmax so sharp that float rounding shows)
        t(p + "attn_q_norm.weight", 0.35 * norm(D)); t(p + "attn_k_norm.weight", 0.35 * norm(D))
        t(p + "ln1.weight", norm(V)); t(p + "ln2.weight", norm(V))
        t(p + "attn_post_norm.weight", norm(V)); t(p + "ffn_post_norm.weight", norm(V))
        t(p + "ffn_gate.weight", mat(FF, V)); t(p + "ffn_up.weight", mat(FF, V)); t(p + "ffn_down.weight", mat(V, FF))
        t(p + "out_scale.weight", scalar(0.8 + 0.1 * i))
        if i == 0:  # clippable linears (the inputs are RMS-normed, about N(0, 1); the outputs about the same)
            # q, k and v read the same input, so their input bounds are the same (as a model calibrated on
            # that input has them; llama.cpp clamps that shared input in place, so different bounds would
            # reach all three there); their output bounds differ
            for n, lo, hi, out_lo in (("attn_q", -1.5, 1.2, -1.1), ("attn_k", -1.5, 1.2, -0.9),
                                      ("attn_v", -1.5, 1.2, -1.3), ("ffn_down", -1.0, 1.0, -1.1)):
                t(p + n + ".input_min", scalar(lo)); t(p + n + ".input_max", scalar(hi))
                t(p + n + ".output_min", scalar(out_lo)); t(p + n + ".output_max", scalar(0.9))
    t("v.std_bias", (0.1 * rng.standard_normal(V)).astype(np.float32))
    t("v.std_scale", (1.0 + 0.1 * rng.standard_normal(V)).astype(np.float32))
    t("mm.input_projection.weight", mat(T, V))
    t("mm.input_projection.input_min", scalar(-2.0)); t("mm.input_projection.input_max", scalar(2.0))
    t("mm.input_projection.output_min", scalar(-1.5)); t("mm.input_projection.output_max", scalar(1.5))


def pixtral():
    M = 2
    w.add_bool("clip.use_silu", True); w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    w.add_uint32("clip.vision.image_size", 1024)
    w.add_array("clip.vision.image_mean", [0.48145466, 0.4578275, 0.40821073])
    w.add_array("clip.vision.image_std", [0.26862954, 0.26130258, 0.27577711])
    w.add_uint32("clip.vision.spatial_merge_size", M)
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


def qwen3vl_merger():
    M, SIDE = 2, a.side
    w.add_bool("clip.use_gelu", True); w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.image_size", SIDE * PS)  # the converter's sqrt(num_position_embeddings) x patch
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5]); w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_uint32("clip.vision.spatial_merge_size", M)
    t("v.patch_embd.weight.1", (rng.standard_normal((V, 3, PS, PS)) / np.sqrt(3 * PS * PS)).astype(np.float32))
    t("v.patch_embd.bias", bias(V))
    t("v.position_embd.weight", (0.5 * rng.standard_normal((SIDE * SIDE, V))).astype(np.float32))
    for i in range(L):
        p = f"v.blk.{i}."
        t(p + "ln1.weight", norm(V)); t(p + "ln1.bias", bias(V)); t(p + "ln2.weight", norm(V)); t(p + "ln2.bias", bias(V))
        t(p + "attn_qkv.weight", mat(3 * V, V)); t(p + "attn_qkv.bias", bias(3 * V))
        t(p + "attn_out.weight", mat(V, V)); t(p + "attn_out.bias", bias(V))
        t(p + "ffn_up.weight", mat(FF, V)); t(p + "ffn_up.bias", bias(FF))
        t(p + "ffn_down.weight", mat(V, FF)); t(p + "ffn_down.bias", bias(V))
    deep = [int(x) for x in a.deepstack.split(",") if x != ""]
    if deep: w.add_array("clip.vision.is_deepstack_layers", [i in deep for i in range(L)])
    for i in deep:
        p = f"v.deepstack.{i}."
        t(p + "norm.weight", norm(4 * V)); t(p + "norm.bias", bias(4 * V))
        t(p + "fc1.weight", mat(4 * V, 4 * V)); t(p + "fc1.bias", bias(4 * V))
        t(p + "fc2.weight", mat(T, 4 * V)); t(p + "fc2.bias", bias(T))
    t("v.post_ln.weight", norm(V)); t("v.post_ln.bias", bias(V))
    t("mm.0.weight", mat(4 * V, 4 * V)); t("mm.0.bias", bias(4 * V))
    t("mm.2.weight", mat(T, 4 * V)); t("mm.2.bias", bias(T))


def qwen2vl_family(v25):
    M = 2
    if v25:
        w.add_bool("clip.use_silu", True)
        w.add_uint32("clip.vision.n_wa_pattern", a.wa_pattern)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.image_size", 560)  # the converter's default (unused: any size)
    w.add_array("clip.vision.image_mean", [0.48145466, 0.4578275, 0.40821073])
    w.add_array("clip.vision.image_std", [0.26862954, 0.26130258, 0.27577711])
    w.add_uint32("clip.vision.spatial_merge_size", M)
    t("v.patch_embd.weight.1", (rng.standard_normal((V, 3, PS, PS)) / np.sqrt(3 * PS * PS)).astype(np.float32))
    for i in range(L):
        p = f"v.blk.{i}."
        t(p + "ln1.weight", norm(V)); t(p + "ln2.weight", norm(V))
        if not v25: t(p + "ln1.bias", bias(V)); t(p + "ln2.bias", bias(V))
        for n in ("attn_q", "attn_k", "attn_v", "attn_out"): t(p + n + ".weight", mat(V, V)); t(p + n + ".bias", bias(V))
        if v25: t(p + "ffn_gate.weight", mat(FF, V)); t(p + "ffn_gate.bias", bias(FF))
        t(p + "ffn_up.weight", mat(FF, V)); t(p + "ffn_up.bias", bias(FF))
        t(p + "ffn_down.weight", mat(V, FF)); t(p + "ffn_down.bias", bias(V))
    t("v.post_ln.weight", norm(V))
    if not v25: t("v.post_ln.bias", bias(V))
    t("mm.0.weight", mat(4 * V, 4 * V)); t("mm.0.bias", bias(4 * V))
    t("mm.2.weight", mat(T, 4 * V)); t("mm.2.bias", bias(T))


def idefics3():
    M, S = a.merge, a.tile
    w.add_bool("clip.use_gelu", True); w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-6)
    w.add_uint32("clip.vision.image_size", S); w.add_uint32("clip.vision.preproc_image_size", a.longest)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5]); w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])
    w.add_uint32("clip.vision.projector.scale_factor", M)
    t("v.patch_embd.bias", bias(V))
    t("v.position_embd.weight", (0.5 * rng.standard_normal(((S // PS) ** 2, V))).astype(np.float32))
    for i in range(L):
        p = f"v.blk.{i}."
        t(p + "ln1.weight", norm(V)); t(p + "ln1.bias", bias(V)); t(p + "ln2.weight", norm(V)); t(p + "ln2.bias", bias(V))
        for n in ("attn_q", "attn_k", "attn_v", "attn_out"): t(p + n + ".weight", mat(V, V)); t(p + n + ".bias", bias(V))
        t(p + "ffn_up.weight", mat(FF, V)); t(p + "ffn_up.bias", bias(FF))
        t(p + "ffn_down.weight", mat(V, FF)); t(p + "ffn_down.bias", bias(V))
    t("v.post_ln.weight", norm(V)); t("v.post_ln.bias", bias(V))
    t("mm.model.fc.weight", mat(T, V * M * M))


{"gemma4v": gemma4v, "pixtral": pixtral, "qwen3vl_merger": qwen3vl_merger, "idefics3": idefics3,
 "qwen2vl_merger": lambda: qwen2vl_family(False), "qwen2.5vl_merger": lambda: qwen2vl_family(True)}[a.kind]()
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(f"wrote {a.out}: {a.kind} projector, ViT {L} layers x {V} ({H} heads), {PS}px patches, to {T}")
