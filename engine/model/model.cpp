#include "engine/model/model.h"

#include "engine/model/loader.h"
#include "engine/model/arch.h"
#include "engine/model/pages.h"

#include <sys/mman.h>

#include <cstring>
#include <initializer_list>
#include <stdexcept>
#include <string_view>

namespace engine {

namespace {

// Layer weights are read by the functions below, each tensor's presence, shape and type checked
// against hp and the architecture table.

// Q, K, V of layer il (prefix b "blk.N."): a fused attn_qkv (rows Q, then K, then V: phi3,
// nomic-bert) with its optional fused bias, or attn_{q,k,v} with biases (required when
// `biases`, else optional). A layer that reuses another's K/V has Q only; with HParams::v_norm
// (gemma4) attn_v is optional: V is then K's projection.
void load_qkv(const Loader& ld, const HParams& hp, int64_t il, const std::string& b, bool biases, LayerWeights& l) {
  // (attn_out_gate: Q's rows are per head the query then its gate)
  const int64_t E = hp.n_embd, nq = hp.q_dim(il) * (hp.attn_out_gate ? 2 : 1), nk = hp.k_dim(il), nv = hp.v_dim(il);
  if (ld.has(b + "attn_qkv.weight")) {
    const Matrix qkv = ld.matrix(b + "attn_qkv.weight", nq + nk + nv, E);
    l.wq = Loader::row_slice(qkv, 0, nq);
    l.wk = Loader::row_slice(qkv, nq, nk);
    l.wv = Loader::row_slice(qkv, nq + nk, nv);
    const std::vector<float> bias = ld.vector(b + "attn_qkv.bias", nq + nk + nv, false);
    if (!bias.empty()) {
      l.bq.assign(bias.begin(), bias.begin() + nq);
      l.bk.assign(bias.begin() + nq, bias.begin() + nq + nk);
      l.bv.assign(bias.begin() + nq + nk, bias.end());
    }
    return;
  }
  l.wq = ld.matrix(b + "attn_q.weight", nq, E);
  l.bq = ld.vector(b + "attn_q.bias", nq, biases);
  if (!hp.own_kv(il)) return;
  l.wk = ld.matrix(b + "attn_k.weight", nk, E);
  if (!hp.v_norm || ld.has(b + "attn_v.weight")) l.wv = ld.matrix(b + "attn_v.weight", nv, E);
  l.bk = ld.vector(b + "attn_k.bias", nk, biases);
  l.bv = ld.vector(b + "attn_v.bias", nv, biases);
}

// A Gated DeltaNet layer's weights (prefix b), as llama.cpp's qwen35.cpp / qwen3next.cpp load them.
DeltaNetWeights load_delta_net(const Loader& ld, const HParams& hp, const std::string& b) {
  const DeltaNetParams& s = hp.ssm;
  const int64_t E = hp.n_embd, nv = s.n_v_heads;
  DeltaNetWeights w;
  if (hp.arch == Arch::kQwen3Next && !ld.has(b + "attn_qkv.weight")) {  // older files: fused ssm_in
    w.w_in = ld.matrix(b + "ssm_in.weight", 2 * s.key_dim() + 2 * s.d_inner, E);
  } else {
    w.wqkv = ld.matrix(b + "attn_qkv.weight", s.conv_channels(), E);
    w.wz = ld.matrix(b + "attn_gate.weight", s.d_inner, E);
  }
  if (hp.arch == Arch::kQwen3Next) {
    w.w_ba = ld.matrix(b + "ssm_ba.weight", 2 * nv, E);
  } else {
    w.w_beta = ld.matrix(b + "ssm_beta.weight", nv, E);
    w.w_alpha = ld.matrix(b + "ssm_alpha.weight", nv, E);
  }
  w.conv = ld.vectors(b + "ssm_conv1d.weight", s.d_conv, s.conv_channels(), true);
  w.dt_bias = ld.vector(b + "ssm_dt.bias", nv, true);
  w.a = ld.vector(b + "ssm_a", nv, true);
  w.norm = ld.vector(b + "ssm_norm.weight", s.d_state, true);
  w.w_out = ld.matrix(b + "ssm_out.weight", E, s.d_inner);
  return w;
}

// A gated short convolution layer's weights (prefix b), as llama.cpp's lfm2.cpp loads them.
ShortConvWeights load_short_conv(const Loader& ld, const HParams& hp, const std::string& b) {
  const int64_t E = hp.n_embd;
  return {ld.matrix(b + "shortconv.in_proj.weight", 3 * E, E), ld.vectors(b + "shortconv.conv.weight", hp.ssm.d_conv, E, true),
          ld.matrix(b + "shortconv.out_proj.weight", E, E)};
}

// The experts of layer il (prefix b): router, gate/up (or fused gate_up), down, and their
// optional biases (required when `biases`), shared expert, gemma4's norms and scales.
void load_experts(const Loader& ld, const HParams& hp, const std::string& b, bool biases, LayerWeights& l) {
  const int64_t E = hp.n_embd;
  l.ffn_gate_inp = ld.matrix(b + "ffn_gate_inp.weight", hp.n_expert, E);
  if (ld.has(b + "ffn_gate_up_exps.weight")) {  // fused: each expert's gate rows, then its up rows
    for (const Matrix& gu : ld.experts(b + "ffn_gate_up_exps.weight", hp.n_expert, 2 * hp.n_ff_exp, E)) {
      l.gate_exps.push_back(Loader::row_slice(gu, 0, hp.n_ff_exp));
      l.up_exps.push_back(Loader::row_slice(gu, hp.n_ff_exp, hp.n_ff_exp));
    }
  } else {
    l.gate_exps = ld.experts(b + "ffn_gate_exps.weight", hp.n_expert, hp.n_ff_exp, E);
    l.up_exps = ld.experts(b + "ffn_up_exps.weight", hp.n_expert, hp.n_ff_exp, E);
  }
  l.down_exps = ld.experts(b + "ffn_down_exps.weight", hp.n_expert, E, hp.n_ff_exp);
  l.ffn_gate_inp_b = ld.vector(b + "ffn_gate_inp.bias", hp.n_expert, biases);
  l.gate_exps_b = ld.vectors(b + "ffn_gate_exps.bias", hp.n_ff_exp, hp.n_expert, biases);
  l.up_exps_b = ld.vectors(b + "ffn_up_exps.bias", hp.n_ff_exp, hp.n_expert, biases);
  l.down_exps_b = ld.vectors(b + "ffn_down_exps.bias", E, hp.n_expert, biases);
  if (hp.expert_selection_bias) l.ffn_exp_probs_b = ld.vector(b + "exp_probs_b.bias", hp.n_expert, true);
  if (hp.n_ff_shexp > 0) {
    l.ffn_gate_inp_shexp = ld.vector(b + "ffn_gate_inp_shexp.weight", E, true);
    l.gate_shexp = ld.matrix(b + "ffn_gate_shexp.weight", hp.n_ff_shexp, E);
    l.up_shexp = ld.matrix(b + "ffn_up_shexp.weight", hp.n_ff_shexp, E);
    l.down_shexp = ld.matrix(b + "ffn_down_shexp.weight", E, hp.n_ff_shexp);
  }
  if (hp.experts_beside_ffn) {
    l.ffn_gate_inp_scale = ld.vector(b + "ffn_gate_inp.scale", E, true);
    l.pre_ffn_norm_2 = ld.vector(b + "pre_ffw_norm_2.weight", E, true);
    l.post_ffn_norm_1 = ld.vector(b + "post_ffw_norm_1.weight", E, true);
    l.post_ffn_norm_2 = ld.vector(b + "post_ffw_norm_2.weight", E, true);
    l.down_exps_scale = ld.vector(b + "ffn_down_exps.scale", hp.n_expert, false);
  }
}

// Layer il of a decoder.
LayerWeights load_layer(const Loader& ld, const HParams& hp, int64_t il) {
  const ArchTraits& arch = arch_traits(hp.arch);
  const std::string b = "blk." + std::to_string(il) + ".";
  const int64_t E = hp.n_embd;
  LayerWeights l;
  l.attn_norm = ld.vector(b + "attn_norm.weight", E, true);
  const bool moe_biases = arch.moe && arch.qkv_bias;  // gpt-oss: biases everywhere
  if (hp.recurrent(il) && hp.ssm.short_conv) {
    l.sc = load_short_conv(ld, hp, b);
  } else if (hp.recurrent(il)) {
    l.dn = load_delta_net(ld, hp, b);
  } else {
    load_qkv(ld, hp, il, b, arch.qkv_bias, l);
    l.wo = ld.matrix(b + "attn_output.weight", E, hp.n_head * hp.head_v(il));
    l.bo = ld.vector(b + "attn_output.bias", E, moe_biases);
    l.q_norm = ld.vector(b + "attn_q_norm.weight", hp.head_k(il), arch.qk_norm);
    if (hp.own_kv(il)) l.k_norm = ld.vector(b + "attn_k_norm.weight", hp.head_k(il), arch.qk_norm);
  }
  if (arch.sinks) l.attn_sinks = ld.vector(b + "attn_sinks.weight", hp.n_head, true);
  if (arch.post_norms) l.post_attn_norm = ld.vector(b + "post_attention_norm.weight", E, true);
  l.ffn_norm = ld.vector(b + std::string(arch.ffn_norm) + ".weight", E, true);
  l.post_ffn_norm = ld.vector(b + "post_ffw_norm.weight", E, arch.post_norms);
  // experts in every layer past the leading dense ones, or (experts_beside_ffn) in the layers that
  // have a router
  const bool experts = hp.n_expert > 0 && il >= hp.n_layer_dense_lead &&
                       (!hp.experts_beside_ffn || ld.has(b + "ffn_gate_inp.weight"));
  if (experts) load_experts(ld, hp, b, moe_biases, l);
  const bool dense = !experts || hp.experts_beside_ffn;
  if (dense && !ld.has(b + "ffn_gate.weight") && hp.arch == Arch::kPhi3) {  // fused gate+up: gate first
    const Matrix gate_up = ld.matrix(b + "ffn_up.weight", 2 * hp.n_ff, E);
    l.ffn_gate = Loader::row_slice(gate_up, 0, hp.n_ff);
    l.ffn_up = Loader::row_slice(gate_up, hp.n_ff, hp.n_ff);
  } else if (dense) {
    l.ffn_gate = ld.matrix(b + "ffn_gate.weight", hp.n_ff, E);
    l.ffn_up = ld.matrix(b + "ffn_up.weight", hp.n_ff, E);
  }
  if (dense) l.ffn_down = ld.matrix(b + "ffn_down.weight", E, hp.n_ff);
  if (hp.n_embd_per_layer > 0) {
    l.per_layer_inp_gate = ld.matrix(b + "inp_gate.weight", hp.n_embd_per_layer, E);
    l.per_layer_proj = ld.matrix(b + "proj.weight", E, hp.n_embd_per_layer);
    l.per_layer_post_norm = ld.vector(b + "post_norm.weight", E, true);
  }
  if (hp.arch == Arch::kGemma4) l.out_scale = ld.vector(b + "layer_output_scale.weight", 1, false);
  return l;
}

// The NextN / MTP block il (after the stack): a full-attention block (as load_layer) and its
// projections, as llama.cpp's qwen35.cpp loads them.
void load_nextn(const Loader& ld, const HParams& hp, int64_t il, Model& m) {
  const std::string b = "blk." + std::to_string(il) + ".";
  const int64_t E = hp.n_embd;
  HParams attn = hp;
  attn.recurrent_layer.assign(static_cast<size_t>(il) + 1, 0);  // (a full-attention block)
  m.nextn_layers.push_back(load_layer(ld, attn, il));
  NextNWeights w;
  w.eh_proj = ld.matrix(b + "nextn.eh_proj.weight", E, 2 * E);
  w.enorm = ld.vector(b + "nextn.enorm.weight", E, true);
  w.hnorm = ld.vector(b + "nextn.hnorm.weight", E, true);
  w.shared_head_norm = ld.vector(b + "nextn.shared_head_norm.weight", E, false);
  if (ld.has(b + "nextn.embed_tokens.weight")) w.embed_tokens = ld.matrix(b + "nextn.embed_tokens.weight", hp.n_vocab, E);
  if (ld.has(b + "nextn.shared_head_head.weight")) {
    w.shared_head_head = ld.matrix(b + "nextn.shared_head_head.weight", hp.n_vocab, E);
  }
  m.nextn.push_back(std::move(w));
}

// A LayerNorm's weight and bias (n,) with prefix `name` ("blk.0.attn_norm_2"), when the file has
// the weight (the bias is then required); empty otherwise.
void optional_layer_norm(const Loader& ld, const std::string& name, int64_t n, std::vector<float>& w,
                         std::vector<float>& b) {
  w = ld.vector(name + ".weight", n, false);
  if (!w.empty()) b = ld.vector(name + ".bias", n, true);
}

// Layer il of an encoder: Q/K/V (bert: with biases; nomic-bert: fused, without), output
// projection, LayerNorms after the residual adds, an FFN with optional biases -- gate-less (bert:
// GELU) unless the file has ffn_gate (required for SwiGLU: nomic-bert) or a fused gate+up
// (jina-bert-v2). jina-bert-v2 also has optional Q/K and second attention LayerNorms, and
// requires the output and down biases, as llama.cpp does.
LayerWeights load_encoder_layer(const Loader& ld, const HParams& hp, int64_t il) {
  const ArchTraits& arch = arch_traits(hp.arch);
  const bool jina = hp.arch == Arch::kJinaBertV2;
  const std::string b = "blk." + std::to_string(il) + ".";
  const int64_t E = hp.n_embd, F = hp.n_ff;
  LayerWeights l;
  load_qkv(ld, hp, il, b, arch.qkv_bias, l);
  if (jina) {
    optional_layer_norm(ld, b + "attn_q_norm", hp.q_dim(), l.attn_q_ln, l.attn_q_ln_b);
    optional_layer_norm(ld, b + "attn_k_norm", hp.k_dim(), l.attn_k_ln, l.attn_k_ln_b);
    optional_layer_norm(ld, b + "attn_norm_2", E, l.attn_norm_2, l.attn_norm_2_b);
  }
  l.wo = ld.matrix(b + "attn_output.weight", E, hp.n_head * hp.head_dim_v);
  l.bo = ld.vector(b + "attn_output.bias", E, jina);
  l.attn_out_norm = ld.vector(b + "attn_output_norm.weight", E, true);
  l.attn_out_norm_b = ld.vector(b + "attn_output_norm.bias", E, true);
  const bool gate = arch.act == FfnAct::kSilu || ld.has(b + "ffn_gate.weight");
  int64_t up_rows = F;
  if (jina && !gate) {  // ffn_up of n_ff rows (GELU) or 2 * n_ff (GeGLU, gate rows first)
    const gguf::TensorInfo& up = ld.get(b + "ffn_up.weight");
    if (up.n_dims == 2 && static_cast<int64_t>(up.ne[1]) == 2 * F) up_rows = 2 * F;
  }
  l.ffn_up = ld.matrix(b + "ffn_up.weight", up_rows, E);
  l.ffn_up_b = ld.vector(b + "ffn_up.bias", up_rows, false);
  if (gate) l.ffn_gate = ld.matrix(b + "ffn_gate.weight", F, E);
  l.ffn_down = ld.matrix(b + "ffn_down.weight", E, F);
  l.ffn_down_b = ld.vector(b + "ffn_down.bias", E, jina);
  l.layer_out_norm = ld.vector(b + "layer_output_norm.weight", E, true);
  l.layer_out_norm_b = ld.vector(b + "layer_output_norm.bias", E, true);
  return l;
}

// The input side of an encoder: the position table (bert), token-type embeddings, the embedding
// LayerNorm.
void load_encoder_inputs(const Loader& ld, const gguf::File& f, const HParams& hp, Model& m) {
  if (arch_traits(hp.arch).positions == EncoderPositions::kTable) {
    m.pos_embd = ld.matrix("position_embd.weight", hp.n_ctx_train, hp.n_embd);
  }
  if (const gguf::TensorInfo* t = ld.find("token_types.weight")) {
    if (t->n_dims != 2 || static_cast<int64_t>(t->ne[0]) != hp.n_embd || t->ne[1] == 0) {
      fail(f, "tensor 'token_types.weight' has shape " + shape_string(*t) + ", expected [" +
                  std::to_string(hp.n_embd) + ", n_token_types]");
    }
    m.type_embd0.resize(static_cast<size_t>(hp.n_embd));
    const Matrix types = ld.matrix("token_types.weight", static_cast<int64_t>(t->ne[1]), hp.n_embd);
    dequantize_row(types, 0, m.type_embd0.data());
  }
  m.tok_norm = ld.vector("token_embd_norm.weight", hp.n_embd, true);
  m.tok_norm_b = ld.vector("token_embd_norm.bias", hp.n_embd, true);
}

// The classification head (cls, cls.output) of an architecture that has one (ArchTraits::rank),
// when the file has it; sets hp.n_cls_out. Architectures without one ignore these tensors, as
// llama.cpp does, and refuse pooling rank. A first-token head may be cls alone (jina-reranker:
// cls of n_cls_out rows, its tanh the output).
void load_classifier(const Loader& ld, const gguf::File& f, HParams& hp, Model& m) {
  const RankHead rank = arch_traits(hp.arch).rank;
  if (rank == RankHead::kNone) {
    if (hp.pooling == PoolingType::kRank) {
      fail(f, "pooling type rank is not supported for architecture " + hp.arch_name +
                  " (rerankers: bert and jina-bert-v2 cross-encoders, qwen3 as Qwen3-Reranker)");
    }
    return;
  }
  const gguf::TensorInfo* out = ld.find("cls.output.weight");
  const bool cls_alone = out == nullptr && rank == RankHead::kFirst && ld.has("cls.weight");
  if (out == nullptr && !cls_alone) {
    if (hp.pooling == PoolingType::kRank && rank == RankHead::kLastSoftmax) {
      fail(f, "pooling type rank needs a classification head: tensor 'cls.output.weight' is missing");
    }
    return;
  }
  const gguf::TensorInfo& head = cls_alone ? ld.get("cls.weight") : *out;
  if (head.n_dims != 2 || head.ne[1] == 0 || head.ne[1] > 1024) {
    fail(f, "tensor '" + std::string(head.name) + "' has shape " + shape_string(head) + ", expected [" +
                std::to_string(hp.n_embd) + ", n_classes] with 1 to 1024 classes");
  }
  hp.n_cls_out = static_cast<int64_t>(head.ne[1]);
  const std::string labels_key = hp.arch_name + ".classifier.output_labels";
  if (const gguf::Value* labels = f.find_array(labels_key); labels && labels->size() != static_cast<uint64_t>(hp.n_cls_out)) {
    fail(f, labels_key + " names " + std::to_string(labels->size()) + " classes, but tensor '" + std::string(head.name) +
                "' has " + std::to_string(hp.n_cls_out) + " rows");
  }
  if (cls_alone) {
    m.cls = ld.matrix("cls.weight", hp.n_cls_out, hp.n_embd);
    m.cls_b = ld.vector("cls.bias", hp.n_cls_out, false);
    return;
  }
  if (rank == RankHead::kFirst && ld.has("cls.weight")) {  // (qwen3 has no hidden layer: llama.cpp loads none)
    m.cls = ld.matrix("cls.weight", hp.n_embd, hp.n_embd);
    m.cls_b = ld.vector("cls.bias", hp.n_embd, false);
  }
  m.cls_out = ld.matrix("cls.output.weight", hp.n_cls_out, hp.n_embd);
  m.cls_out_b = ld.vector("cls.output.bias", hp.n_cls_out, false);
}

}  // namespace

const float* Model::rope_factors(int64_t n_ctx_seq) const {
  if (!rope_freqs.empty()) return rope_freqs.data();
  if (!rope_long.empty() && n_ctx_seq > hp_.n_ctx_orig) return rope_long.data();
  return rope_short.empty() ? nullptr : rope_short.data();
}

Model Model::load(const std::string& path, bool repack) { return from_files(gguf::FileSet::open(path), repack); }

Model Model::from_file(gguf::File file, bool repack) { return from_files(gguf::FileSet::single(std::move(file)), repack); }

uint64_t Model::weight_bytes() const { return files_.data_bytes(); }

// output, then each layer's projections: &matrix of every matrix matmul reads; of each MoE
// layer's experts, the first `experts` (all of them by default).
// (`top`: the model's matrices outside the layers, output first; absent ones are skipped.)
template <class M, class Layers>
std::vector<M*> matmul_weights_of(std::initializer_list<M*> top, Layers& layers, size_t experts = SIZE_MAX) {
  std::vector<M*> mats;
  for (M* m : top) {
    if (m->data) mats.push_back(m);  // (an encoder has no output)
  }
  for (auto& l : layers) {
    for (M* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down, &l.ffn_gate_inp, &l.gate_shexp,
                 &l.up_shexp, &l.down_shexp, &l.dn.wqkv, &l.dn.wz, &l.dn.w_beta, &l.dn.w_alpha, &l.dn.w_ba, &l.dn.w_in,
                 &l.dn.w_out, &l.sc.in_proj, &l.sc.out_proj, &l.per_layer_inp_gate, &l.per_layer_proj}) {
      if (m->data) mats.push_back(m);  // (a MoE layer has no dense FFN, a dense one no router)
    }
    for (auto* each : {&l.gate_exps, &l.up_exps, &l.down_exps}) {
      for (size_t e = 0; e < std::min(experts, each->size()); ++e) mats.push_back(&(*each)[e]);
    }
  }
  return mats;
}

std::vector<const Matrix*> Model::matmul_weights() const {
  return matmul_weights_of<const Matrix>({&output, &per_layer_model_proj}, layers);
}

namespace {

// The rows of m that matmul reads from the file mapping: those past the packed ones.
std::span<const uint8_t> file_rows(const Matrix& m) {
  const auto packed = static_cast<size_t>(m.packed_rows) * m.row_bytes;
  return {static_cast<const uint8_t*>(m.data) + packed, static_cast<size_t>(m.rows - m.packed_rows) * m.row_bytes};
}

}  // namespace

std::vector<std::span<const uint8_t>> Model::matmul_ranges() const {
  std::vector<std::span<const uint8_t>> ranges;
  // a token's share of the experts: n_expert_used of them (the first, as sizes are equal)
  for (const Matrix* m : matmul_weights_of<const Matrix>({&output, &per_layer_model_proj}, layers, static_cast<size_t>(hp_.n_expert_used))) {
    const auto packed = static_cast<size_t>(m->packed_rows) * m->row_bytes;
    if (packed > 0) ranges.emplace_back(static_cast<const uint8_t*>(m->packed), packed);
    if (const auto rows = file_rows(*m); !rows.empty()) ranges.push_back(rows);
  }
  return ranges;
}

void Model::page_in(const std::function<void(uint64_t, uint64_t)>& progress) const {
  std::vector<std::span<const uint8_t>> ranges;
  uint64_t total = 0;
  for (const Matrix* m : matmul_weights()) {
    if (const auto rows = file_rows(*m); !rows.empty()) {
      ranges.push_back(rows);
      total += rows.size();
    }
  }
  constexpr uint64_t kReport = uint64_t{64} << 20;
  // Ask for read-ahead of every range, then touch each page (the reads are what wait).
  for (const std::span<const uint8_t> r : ranges) read_ahead(r);
  // Each 64 MiB piece is mapped in by the kernel at once (MADV_POPULATE_READ, Linux 5.14): one
  // call rather than a page fault per 4 KiB page, which costs about as much as the disk read itself
  // when the pages are cached (and more in a VM). Where the kernel lacks it, each page is touched.
  uint8_t sum = 0;
  uint64_t done = 0, next_report = kReport;
  for (const std::span<const uint8_t> r : ranges) {
    for (uint64_t off = 0; off < r.size(); off += kReport) {
      const uint64_t n = std::min<uint64_t>(kReport, r.size() - off);
      const auto at = reinterpret_cast<uintptr_t>(r.data() + off);
      const auto base = at & ~(kPageBytes - 1);
#ifdef MADV_POPULATE_READ
      if (::madvise(reinterpret_cast<void*>(base), n + (at - base), MADV_POPULATE_READ) == 0) continue;
#endif
      for (uint64_t i = 0; i < n; i += kPageBytes) sum = static_cast<uint8_t>(sum + r[off + i]);
    }
    done += r.size();
    if (done >= next_report) {
      progress(done, total);
      next_report = done + kReport;
    }
  }
  volatile uint8_t keep = sum;  // the reads must happen
  (void)keep;
  progress(total, total);
}

Model Model::from_files(gguf::FileSet files, bool repack) {
  Model m(std::move(files));
  const gguf::File& f = m.file();
  m.hp_ = read_hparams(f, m.files_.n_tensors());
  HParams& hp = m.hp_;
  Loader ld(m.files_);

  const gguf::TensorInfo& embd = ld.get("token_embd.weight");
  hp.n_vocab = embd.n_dims == 2 ? static_cast<int64_t>(embd.ne[1]) : 0;
  if (const auto v = f.find_u64(hp.arch_name + ".vocab_size"); v && static_cast<int64_t>(*v) != hp.n_vocab) {
    fail(f, hp.arch_name + ".vocab_size (" + std::to_string(*v) +
                ") does not match token_embd.weight's " + std::to_string(hp.n_vocab) + " rows");
  }
  m.tok_embd = ld.matrix("token_embd.weight", hp.n_vocab, hp.n_embd);
  load_classifier(ld, f, hp, m);
  if (arch_traits(hp.arch).encoder) {
    load_encoder_inputs(ld, f, hp, m);
    for (int64_t il = 0; il < hp.n_layer; ++il) m.layers.push_back(load_encoder_layer(ld, hp, il));
    if (repack) m.packed_ = PackedWeights::pack(matmul_weights_of<Matrix>({&m.output}, m.layers), &m.files_);
    return m;
  }
  // (lfm2's final norm is named token_embd_norm, as llama.cpp's LLM_TENSOR_OUTPUT_NORM_LFM2)
  const bool lfm2 = hp.arch == Arch::kLfm2 || hp.arch == Arch::kLfm2Moe;
  m.output_norm = ld.vector(lfm2 ? "token_embd_norm.weight" : "output_norm.weight", hp.n_embd, true);
  m.output = ld.has("output.weight") ? ld.matrix("output.weight", hp.n_vocab, hp.n_embd)
                                            : m.tok_embd;
  m.rope_freqs = ld.vector("rope_freqs.weight", hp.n_rot / 2, false);
  m.rope_short = ld.vector("rope_factors_short.weight", hp.n_rot / 2, false);
  m.rope_long = ld.vector("rope_factors_long.weight", hp.n_rot / 2, false);

  if (hp.n_embd_per_layer > 0) {
    const int64_t P = hp.n_embd_per_layer;
    m.per_layer_tok_embd = ld.matrix("per_layer_token_embd.weight", hp.n_vocab, hp.n_layer * P);
    m.per_layer_model_proj = ld.matrix("per_layer_model_proj.weight", hp.n_layer * P, hp.n_embd);
    m.per_layer_proj_norm = ld.vector("per_layer_proj_norm.weight", P, true);
  }

  for (int64_t il = 0; il < hp.n_layer; ++il) m.layers.push_back(load_layer(ld, hp, il));
  for (int64_t il = hp.n_layer; il < hp.n_layer + hp.n_layer_nextn; ++il) load_nextn(ld, hp, il, m);
  if (repack) {
    m.packed_ = PackedWeights::pack(matmul_weights_of<Matrix>({&m.output, &m.per_layer_model_proj}, m.layers), &m.files_);
    if (m.output.data == m.tok_embd.data) m.tok_embd = m.output;  // tied: look rows up in the copy
  }
  return m;
}

}  // namespace engine
