#!/usr/bin/python3
"""A random-weight llama text model (SmolVLM's decoder is SmolLM2, arch llama) whose vocabulary has the tokens mtmd lays an
idefics3 image out with, for llama.cpp references with gen/synth_mmproj.py idefics3.

The conventions of ../shared/tools/synth_arch.py (synth_common.py: weights N(0, 1/fan_in), norms 1 + N(0, 0.1^2), F32),
the tokenizer of a donor (default ../shared/models/stories260K.gguf, a 512-token SPM vocabulary) with tokens appended:
control tokens <fake_token_around_image>, <global-img> and <row_R_col_C> (R, C = 1 .. 3), and a user-defined "\\n\\n"
(SmolLM2 has it as a word; mtmd looks it up by its text). embd 128, 2 layers, 2 heads / 1 KV of 64, SwiGLU 256, RoPE base
1e4, an output matrix; seed 23.
Needs gguf-py (PYTHONPATH=<llama.cpp>/gguf-py) and numpy.
Usage: synth_smolvlm.py OUT.gguf [--donor F.gguf] [--seed N]"""
import argparse, os
import numpy as np
import gguf

from synth_common import Weights, copy_tokenizer

here = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--donor", default=os.path.join(here, "..", "..", "..", "..", "shared", "models", "stories260K.gguf"))
ap.add_argument("--seed", type=int, default=23)
a = ap.parse_args()
rng = np.random.default_rng(a.seed)

E, L, H, KV, D, FF = 128, 2, 2, 1, 64, 256
arch = "llama"
w = gguf.GGUFWriter(a.out, arch)
w.add_name("synth-smolvlm")
w.add_context_length(2048); w.add_embedding_length(E); w.add_block_count(L); w.add_feed_forward_length(FF)
w.add_head_count(H); w.add_head_count_kv(KV); w.add_rope_dimension_count(D); w.add_layer_norm_rms_eps(1e-5)
w.add_rope_freq_base(1e4)
w.add_file_type(gguf.LlamaFileType.ALL_F32)

# the donor's tokenizer, with the image layout's tokens appended
extra = [("<fake_token_around_image>", 3), ("<global-img>", 3)]
extra += [(f"<row_{r}_col_{c}>", 3) for r in range(1, 4) for c in range(1, 4)]
extra += [("\n\n", 4)]
n_vocab = copy_tokenizer(a.donor, w, extra)

wt = Weights(rng)
def t(name, arr): w.add_tensor(name, arr)
t("token_embd.weight", wt.mat(n_vocab, E))
t("output_norm.weight", wt.norm(E))
t("output.weight", wt.mat(n_vocab, E))
for i in range(L):
    p = f"blk.{i}."
    t(p + "attn_norm.weight", wt.norm(E)); t(p + "ffn_norm.weight", wt.norm(E))
    t(p + "attn_q.weight", wt.mat(H * D, E)); t(p + "attn_k.weight", wt.mat(KV * D, E)); t(p + "attn_v.weight", wt.mat(KV * D, E))
    t(p + "attn_output.weight", wt.mat(E, H * D))
    t(p + "ffn_gate.weight", wt.mat(FF, E)); t(p + "ffn_up.weight", wt.mat(FF, E)); t(p + "ffn_down.weight", wt.mat(E, FF))
w.write_header_to_file(); w.write_kv_data_to_file(); w.write_tensors_to_file(); w.close()
print(f"wrote {a.out}: {arch}, {L} layers, embd {E}, vocab {n_vocab} ({len(extra)} appended)")
