#!/usr/bin/env python3
"""A random-weight qwen3next GGUF (Qwen3-Next's stack as llama.cpp b10108 loads it), for golden logits.

Self-contained (standard library only): writes GGUF v3 itself and copies the tokenizer.* keys of a donor file
(default ../shared/models/stories260K.gguf, the 512-token SentencePiece vocabulary). Weights N(0, 1/fan_in), norms
near 1, as ../shared/tools/synth_arch.py makes its models; every tensor F32 (quantize afterwards with llama-quantize).

The stack (llama.cpp src/models/qwen3next.cpp): layers 0-2 Gated DeltaNet, layer 3 gated full attention
(full_attention_interval 4); every layer's FFN is routed experts (softmax, top-k renormalized) plus a
sigmoid-gated shared expert; post-attention norm; untied output. Key heads are shared by *consecutive* value heads
(value head h reads key head h / (n_v / n_k)), the fused ssm_ba holds per key head its ratio betas then its ratio
alphas, and attention is NeoX RoPE over the first rope.dimension_count dimensions of each head.

--layout ba (default, what the current converter writes): attn_qkv (q | k | v, each all heads) + attn_gate (z).
--layout ssm_in (older files): one fused ssm_in whose rows are, per key head, q (d_state), k (d_state),
v (ratio x d_state), z (ratio x d_state); llama.cpp b10108 still loads it (build_qkvz's legacy path).

Usage: synth_qwen3next.py OUT.gguf [--layout ba|ssm_in] [--embd 128] [--seed 30] [--donor F.gguf]
"""
import argparse
import array
import math
import os
import random
import struct
import sys

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
SCALAR = {U8: "B", I8: "b", U16: "H", I16: "h", U32: "I", I32: "i", F32: "f", BOOL: "?", U64: "Q", I64: "q", F64: "d"}
ALIGN = 32

# The model's shape (see the docstring); the embedding width comes from --embd.
LAYERS, INTERVAL = 4, 4
HEADS, KV_HEADS, HEAD_DIM, ROPE_DIM, ROPE_BASE = 2, 1, 64, 16, 1e7
D_STATE, K_HEADS, V_HEADS, CONV = 32, 2, 4, 4          # Gated DeltaNet: head size, key / value heads, conv taps
EXPERTS, EXPERTS_USED, FF_EXP, FF_SHEXP = 4, 2, 32, 64


class Reader:
    """Just enough of a GGUF reader to copy a donor's key/values as raw bytes."""

    def __init__(self, path):
        with open(path, "rb") as f:
            self.b = f.read()
        self.o = 0
        if self.b[:4] != b"GGUF":
            sys.exit(f"{path}: not a GGUF file")
        self.o = 4
        version = self.take("I")
        if version < 2:
            sys.exit(f"{path}: GGUF v{version} is not supported here")
        self.take("Q")  # tensor count
        n_kv = self.take("Q")
        self.kvs = []  # (key, type, raw value bytes)
        for _ in range(n_kv):
            key = self.string()
            typ = self.take("I")
            start = self.o
            self.skip_value(typ)
            self.kvs.append((key, typ, self.b[start:self.o]))

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.b, self.o)[0]
        self.o += struct.calcsize(fmt)
        return v

    def string(self):
        n = self.take("Q")
        s = self.b[self.o:self.o + n].decode("utf-8")
        self.o += n
        return s

    def skip_value(self, typ):
        if typ == STR:
            n = self.take("Q")  # (taken before self.o is read for the sum)
            self.o += n
        elif typ == ARR:
            elem, n = self.take("I"), self.take("Q")
            for _ in range(n):
                self.skip_value(elem)
        else:
            self.o += struct.calcsize(SCALAR[typ])


class Writer:
    """GGUF v3: key/values, tensor infos, then the F32 data, each tensor aligned to 32 bytes."""

    def __init__(self, arch):
        self.kv = bytearray()
        self.n_kv = 0
        self.tensors = []  # (name, ne, data as array('f'))
        self.add("general.architecture", STR, arch)

    @staticmethod
    def str_bytes(s):
        b = s.encode("utf-8")
        return struct.pack("<Q", len(b)) + b

    def add(self, key, typ, value):
        self.kv += self.str_bytes(key) + struct.pack("<I", typ)
        if typ == STR:
            self.kv += self.str_bytes(value)
        elif typ == ARR:
            elem, items = value
            self.kv += struct.pack("<IQ", elem, len(items))
            for v in items:
                self.kv += self.str_bytes(v) if elem == STR else struct.pack("<" + SCALAR[elem], v)
        else:
            self.kv += struct.pack("<" + SCALAR[typ], value)
        self.n_kv += 1

    def add_raw(self, key, typ, raw):
        self.kv += self.str_bytes(key) + struct.pack("<I", typ) + raw
        self.n_kv += 1

    def tensor(self, name, ne, data):
        """ne: GGUF dimensions, fastest first (ne[0] = a matrix's fan-in); data: row-major floats."""
        assert len(data) == math.prod(ne), name
        self.tensors.append((name, ne, array.array("f", data)))

    def write(self, path):
        head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, len(self.tensors), self.n_kv)) + self.kv
        offset = 0
        for name, ne, data in self.tensors:
            head += self.str_bytes(name) + struct.pack("<I", len(ne)) + struct.pack(f"<{len(ne)}Q", *ne)
            head += struct.pack("<IQ", 0, offset)  # type F32, offset in the data section
            offset += -(-len(data) * 4 // ALIGN) * ALIGN
        head += bytes(-len(head) % ALIGN)
        with open(path, "wb") as f:
            f.write(head)
            for _, _, data in self.tensors:
                if sys.byteorder != "little":
                    data.byteswap()
                raw = data.tobytes()
                f.write(raw + bytes(-len(raw) % ALIGN))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--layout", choices=("ba", "ssm_in"), default="ba")
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--seed", type=int, default=30)
    ap.add_argument("--donor", default=os.path.join(here, "..", "..", "..", "..", "shared", "models", "stories260K.gguf"))
    a = ap.parse_args()
    rng = random.Random(a.seed)
    E = a.embd
    donor = Reader(a.donor)
    n_vocab = None
    w = Writer("qwen3next")
    P = "qwen3next."
    w.add("general.name", STR, "synth-qwen3next")
    keys = [("context_length", U32, 4096), ("embedding_length", U32, E), ("block_count", U32, LAYERS),
            ("feed_forward_length", U32, FF_SHEXP), ("attention.head_count", U32, HEADS),
            ("attention.head_count_kv", U32, KV_HEADS), ("attention.key_length", U32, HEAD_DIM),
            ("attention.value_length", U32, HEAD_DIM), ("attention.layer_norm_rms_epsilon", F32, 1e-6),
            ("rope.freq_base", F32, ROPE_BASE), ("rope.dimension_count", U32, ROPE_DIM),
            ("expert_count", U32, EXPERTS), ("expert_used_count", U32, EXPERTS_USED),
            ("expert_feed_forward_length", U32, FF_EXP), ("expert_shared_feed_forward_length", U32, FF_SHEXP),
            ("ssm.conv_kernel", U32, CONV), ("ssm.state_size", U32, D_STATE), ("ssm.group_count", U32, K_HEADS),
            ("ssm.time_step_rank", U32, V_HEADS), ("ssm.inner_size", U32, D_STATE * V_HEADS),
            ("full_attention_interval", U32, INTERVAL)]
    for key, typ, value in keys:
        w.add(P + key, typ, value)
    w.add("general.file_type", U32, 0)  # all F32
    for key, typ, raw in donor.kvs:
        if key.startswith("tokenizer."):
            w.add_raw(key, typ, raw)
            if key == "tokenizer.ggml.tokens":
                n_vocab = struct.unpack_from("<Q", raw, 4)[0]
    if not n_vocab:
        sys.exit(f"{a.donor}: no tokenizer.ggml.tokens")

    def mat(rows, cols):  # rows x cols, fan-in cols
        s = 1.0 / math.sqrt(cols)
        return [rng.gauss(0.0, s) for _ in range(rows * cols)]

    def norm(n):
        return [1.0 + 0.1 * rng.gauss(0.0, 1.0) for _ in range(n)]

    def t2(name, rows, cols, data=None):
        w.tensor(name, [cols, rows], data if data is not None else mat(rows, cols))

    t2("token_embd.weight", n_vocab, E)
    w.tensor("output_norm.weight", [E], norm(E))
    t2("output.weight", n_vocab, E)
    ratio, kd, vd = V_HEADS // K_HEADS, D_STATE * K_HEADS, D_STATE * V_HEADS
    for i in range(LAYERS):
        p = f"blk.{i}."
        w.tensor(p + "attn_norm.weight", [E], norm(E))
        w.tensor(p + "post_attention_norm.weight", [E], norm(E))
        if (i + 1) % INTERVAL:  # Gated DeltaNet
            qkv, z = mat(2 * kd + vd, E), mat(vd, E)
            if a.layout == "ba":
                t2(p + "attn_qkv.weight", 2 * kd + vd, E, qkv)
                t2(p + "attn_gate.weight", vd, E, z)
            else:  # the same rows regrouped per key head: q, k, v (ratio heads), z (ratio heads)
                rows = lambda m, r0, n: m[r0 * E:(r0 + n) * E]
                fused = []
                for g in range(K_HEADS):
                    fused += rows(qkv, g * D_STATE, D_STATE) + rows(qkv, kd + g * D_STATE, D_STATE)
                    fused += rows(qkv, 2 * kd + g * ratio * D_STATE, ratio * D_STATE)
                    fused += rows(z, g * ratio * D_STATE, ratio * D_STATE)
                t2(p + "ssm_in.weight", 2 * kd + 2 * vd, E, fused)
            t2(p + "ssm_ba.weight", 2 * V_HEADS, E)  # per key head: ratio betas, then ratio alphas
            w.tensor(p + "ssm_conv1d.weight", [CONV, 2 * kd + vd],
                     [rng.gauss(0.0, 1.0 / math.sqrt(CONV)) for _ in range(CONV * (2 * kd + vd))])
            w.tensor(p + "ssm_dt.bias", [V_HEADS], [0.5 * rng.gauss(0.0, 1.0) for _ in range(V_HEADS)])
            w.tensor(p + "ssm_a", [V_HEADS], [-math.exp(rng.uniform(-1.0, 0.5)) for _ in range(V_HEADS)])  # -exp(A_log)
            w.tensor(p + "ssm_norm.weight", [D_STATE], norm(D_STATE))
            t2(p + "ssm_out.weight", E, vd)
        else:  # gated attention: per head the query rows, then its gate rows
            t2(p + "attn_q.weight", 2 * HEADS * HEAD_DIM, E)
            t2(p + "attn_k.weight", KV_HEADS * HEAD_DIM, E)
            t2(p + "attn_v.weight", KV_HEADS * HEAD_DIM, E)
            t2(p + "attn_output.weight", E, HEADS * HEAD_DIM)
            w.tensor(p + "attn_q_norm.weight", [HEAD_DIM], norm(HEAD_DIM))
            w.tensor(p + "attn_k_norm.weight", [HEAD_DIM], norm(HEAD_DIM))
        t2(p + "ffn_gate_inp.weight", EXPERTS, E)
        for n in ("gate", "up"):
            w.tensor(p + f"ffn_{n}_exps.weight", [E, FF_EXP, EXPERTS], sum((mat(FF_EXP, E) for _ in range(EXPERTS)), []))
        w.tensor(p + "ffn_down_exps.weight", [FF_EXP, E, EXPERTS], sum((mat(E, FF_EXP) for _ in range(EXPERTS)), []))
        w.tensor(p + "ffn_gate_inp_shexp.weight", [E], mat(1, E))
        t2(p + "ffn_gate_shexp.weight", FF_SHEXP, E)
        t2(p + "ffn_up_shexp.weight", FF_SHEXP, E)
        t2(p + "ffn_down_shexp.weight", E, FF_SHEXP)
    w.write(a.out)
    print(f"wrote {a.out}: qwen3next ({a.layout}), {LAYERS} layers, embd {E}, vocab {n_vocab}, {len(w.tensors)} tensors")


if __name__ == "__main__":
    main()
