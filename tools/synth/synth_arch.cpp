// Synthetic models: the shapes, the file types, each architecture's tensor list with llama.cpp's
// per-tensor type choices, and the hyperparameter metadata. The writer is in synth.cpp.
#include <cctype>
#include <string>

#include "tools/synth/synth.h"
#include "tools/synth/synth_plan.h"

namespace engine::synth {

using gguf::OwnedValue;
using gguf::TensorType;

// ---------------------------------------------------------------------------------------------
// Shapes and file types

const std::vector<Shape>& shapes() {
  // demo's vocabulary is the built-in one, unpadded (n_vocab 0). Real models' values are from
  // their config.json (Gemma 3's vocabulary as llama.cpp's converter trims it: 262144 rows).
  static const std::vector<Shape> table = {
      {.name = "demo", .arch = "llama", .n_vocab = 0, .n_embd = 64, .n_layer = 2, .n_head = 4,
       .n_head_kv = 2, .n_ff = 192, .n_ctx = 2048, .rope_base = 10000.0f},
      {.name = "llama-1b", .arch = "llama", .n_vocab = 128256, .n_embd = 2048, .n_layer = 16, .n_head = 32,
       .n_head_kv = 8, .n_ff = 8192, .n_ctx = 131072, .rope_base = 500000.0f, .tied = true},
      {.name = "tinyllama", .arch = "llama", .n_vocab = 32000, .n_embd = 2048, .n_layer = 22, .n_head = 32,
       .n_head_kv = 4, .n_ff = 5632, .n_ctx = 2048, .rope_base = 10000.0f},
      {.name = "qwen2.5-0.5b", .arch = "qwen2", .n_vocab = 151936, .n_embd = 896, .n_layer = 24, .n_head = 14,
       .n_head_kv = 2, .n_ff = 4864, .n_ctx = 32768, .rope_base = 1e6f, .rms_eps = 1e-6f, .tied = true,
       .qkv_bias = true},
      {.name = "qwen3-1.7b", .arch = "qwen3", .n_vocab = 151936, .n_embd = 2048, .n_layer = 28, .n_head = 16,
       .n_head_kv = 8, .head_dim = 128, .n_ff = 6144, .n_ctx = 40960, .rope_base = 1e6f, .rms_eps = 1e-6f,
       .tied = true, .qk_norm = true},
      {.name = "llama-8b", .arch = "llama", .n_vocab = 128256, .n_embd = 4096, .n_layer = 32, .n_head = 32,
       .n_head_kv = 8, .n_ff = 14336, .n_ctx = 131072, .rope_base = 500000.0f},
      {.name = "qwen3-30b-a3b", .arch = "qwen3moe", .n_vocab = 151936, .n_embd = 2048, .n_layer = 48,
       .n_head = 32, .n_head_kv = 4, .head_dim = 128, .n_ff = 6144, .n_ctx = 40960, .rope_base = 1e6f,
       .rms_eps = 1e-6f, .qk_norm = true, .n_expert = 128, .n_expert_used = 8, .n_ff_exp = 768,
       .expert_weights_norm = true},
      {.name = "gemma3-4b", .arch = "gemma3", .n_vocab = 262144, .n_embd = 2560, .n_layer = 34, .n_head = 8,
       .n_head_kv = 4, .head_dim = 256, .n_ff = 10240, .n_ctx = 131072, .rope_base = 1e6f, .rms_eps = 1e-6f,
       .tied = true, .qk_norm = true, .post_norms = true, .n_swa = 1024, .swa_pattern = 6,
       .rope_base_swa = 10000.0f, .rope_linear_factor = 8.0f},
      // Qwen3.5 (text_config of Qwen/Qwen3.5-4B, -9B, -35B-A3B): Gated DeltaNet with 16 key and 32
      // value heads of 128, conv 4, every 4th layer gated attention (head 256, a quarter of it
      // rotated: IMRoPE sections 11, 11, 10), rope_theta 1e7, the one MTP layer
      // (mtp_num_hidden_layers 1), vocabulary 248320.
      {.name = "qwen3.5-4b", .arch = "qwen35", .n_vocab = 248320, .n_embd = 2560, .n_layer = 32, .n_head = 16,
       .n_head_kv = 4, .head_dim = 256, .n_ff = 9216, .n_ctx = 262144, .rope_base = 1e7f, .rms_eps = 1e-6f,
       .tied = true, .qk_norm = true, .n_nextn = 1, .n_rot = 64, .full_attn_interval = 4, .ssm_state = 128,
       .ssm_k_heads = 16, .ssm_v_heads = 32, .ssm_conv = 4, .rope_sections = {11, 11, 10, 0}},
      {.name = "qwen3.5-9b", .arch = "qwen35", .n_vocab = 248320, .n_embd = 4096, .n_layer = 32, .n_head = 16,
       .n_head_kv = 4, .head_dim = 256, .n_ff = 12288, .n_ctx = 262144, .rope_base = 1e7f, .rms_eps = 1e-6f,
       .qk_norm = true, .n_nextn = 1, .n_rot = 64, .full_attn_interval = 4, .ssm_state = 128, .ssm_k_heads = 16,
       .ssm_v_heads = 32, .ssm_conv = 4, .rope_sections = {11, 11, 10, 0}},
      {.name = "qwen3.5-35b-a3b", .arch = "qwen35moe", .n_vocab = 248320, .n_embd = 2048, .n_layer = 40,
       .n_head = 16, .n_head_kv = 2, .head_dim = 256, .n_ff = 0, .n_ctx = 262144, .rope_base = 1e7f,
       .rms_eps = 1e-6f, .qk_norm = true, .n_expert = 256, .n_expert_used = 8, .n_ff_exp = 512,
       .expert_weights_norm = true, .n_nextn = 1, .n_rot = 64, .full_attn_interval = 4, .ssm_state = 128,
       .ssm_k_heads = 16, .ssm_v_heads = 32, .ssm_conv = 4, .rope_sections = {11, 11, 10, 0}, .n_ff_shexp = 512},
      // google/gemma-4-E4B: 42 layers, every 6th global (head 512, 2 KV heads, rope_theta 1e6,
      // proportional over a quarter), the others sliding over 512 tokens (head 256, theta 1e4),
      // per-layer inputs of 256, the last 18 layers sharing K/V, soft-cap 30.
      {.name = "gemma4-e4b", .arch = "gemma4", .n_vocab = 262144, .n_embd = 2560, .n_layer = 42, .n_head = 8,
       .n_head_kv = 2, .head_dim = 512, .n_ff = 10240, .n_ctx = 131072, .rope_base = 1e6f, .rms_eps = 1e-6f,
       .tied = true, .qk_norm = true, .post_norms = true, .n_swa = 512, .swa_pattern = 6,
       .rope_base_swa = 10000.0f, .head_dim_swa = 256, .n_embd_per_layer = 256, .n_kv_shared = 18,
       .final_softcap = 30.0f},
      // sentence-transformers/all-MiniLM-L6-v2 as llama.cpp's converter writes it.
      {.name = "minilm-l6", .arch = "bert", .n_vocab = 30522, .n_embd = 384, .n_layer = 6, .n_head = 12,
       .n_head_kv = 12, .n_ff = 1536, .n_ctx = 512, .rms_eps = 1e-12f, .n_token_types = 2, .pooling_type = 1},
      // A small BERT cross-encoder (not a real model's size): [CLS] row -> classification head.
      {.name = "bert-rerank", .arch = "bert", .n_vocab = 30522, .n_embd = 128, .n_layer = 2, .n_head = 4,
       .n_head_kv = 4, .n_ff = 512, .n_ctx = 512, .rms_eps = 1e-12f, .n_token_types = 2, .pooling_type = 4,
       .n_cls_out = 1},
      // nomic-ai/nomic-embed-text-v1.5's block (fused QKV, NeoX RoPE base 1000, SwiGLU, no biases),
      // made small; its 2048 positions and bert-base-uncased-sized vocabulary.
      {.name = "nomic-bert", .arch = "nomic-bert", .n_vocab = 30522, .n_embd = 128, .n_layer = 2, .n_head = 4,
       .n_head_kv = 4, .n_ff = 384, .n_ctx = 2048, .rope_base = 1000.0f, .rms_eps = 1e-12f, .n_token_types = 2,
       .pooling_type = 1},
      // jinaai/jina-embeddings-v2's block (ALiBi, biases, fused GeGLU) with every optional LayerNorm
      // llama.cpp reads (Q/K norms, attn_norm_2), made small; its 8192 positions.
      {.name = "jina-bert-v2", .arch = "jina-bert-v2", .n_vocab = 30522, .n_embd = 128, .n_layer = 2, .n_head = 4,
       .n_head_kv = 4, .n_ff = 256, .n_ctx = 8192, .rms_eps = 1e-12f, .jina_norms = true, .n_token_types = 2,
       .pooling_type = 1},
      // jinaai/jina-reranker-v1-turbo-en's kind (jina-bert-v2, a classifier of one output), made small.
      {.name = "jina-rerank", .arch = "jina-bert-v2", .n_vocab = 30522, .n_embd = 128, .n_layer = 2, .n_head = 4,
       .n_head_kv = 4, .n_ff = 256, .n_ctx = 8192, .rms_eps = 1e-12f, .n_token_types = 2, .pooling_type = 4,
       .n_cls_out = 1},
      // Qwen3-Reranker as llama.cpp converts it (tied embeddings, a yes/no head, the rerank prompt),
      // made small.
      {.name = "qwen3-rerank", .arch = "qwen3", .n_vocab = 0, .n_embd = 64, .n_layer = 2, .n_head = 4,
       .n_head_kv = 2, .head_dim = 16, .n_ff = 192, .n_ctx = 4096, .rope_base = 1e6f, .rms_eps = 1e-6f,
       .tied = true, .qk_norm = true, .pooling_type = 4, .n_cls_out = 2},
      // A qwen3 as small as the demo's with a 128K context, for agent CLIs whose first prompts run
      // to tens of thousands of tokens (tests/compat's Codex and Claude Code runs, with
      // --vocab-from the Qwen3 vocabulary).
      {.name = "agent-tiny", .arch = "qwen3", .n_vocab = 0, .n_embd = 64, .n_layer = 2, .n_head = 4,
       .n_head_kv = 2, .head_dim = 16, .n_ff = 192, .n_ctx = 131072, .rope_base = 1e6f, .rms_eps = 1e-6f,
       .tied = true, .qk_norm = true},
  };
  return table;
}

std::optional<Shape> find_shape(std::string_view name) {
  for (const Shape& s : shapes()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

const std::vector<FileType>& file_types() {
  static const std::vector<FileType> table = {
      {"F32", 0, TensorType::F32},      {"F16", 1, TensorType::F16},
      {"BF16", 32, TensorType::BF16},   {"Q8_0", 7, TensorType::Q8_0},
      {"Q4_0", 2, TensorType::Q4_0},    {"Q4_1", 3, TensorType::Q4_1},
      {"Q5_0", 8, TensorType::Q5_0},    {"Q5_1", 9, TensorType::Q5_1},
      {"Q2_K", 10, TensorType::Q2_K},   {"Q3_K_S", 11, TensorType::Q3_K},
      {"Q4_K_S", 14, TensorType::Q4_K}, {"Q4_K_M", 15, TensorType::Q4_K},
      {"Q5_K_S", 16, TensorType::Q5_K}, {"Q5_K_M", 17, TensorType::Q5_K},
      {"Q6_K", 18, TensorType::Q6_K},   {"IQ4_NL", 25, TensorType::IQ4_NL},
      {"IQ4_XS", 30, TensorType::IQ4_XS},
  };
  return table;
}

std::optional<FileType> find_file_type(std::string_view name) {
  std::string upper(name);
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  for (const FileType& t : file_types()) {
    if (t.name == upper) return t;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// Tensor plan

uint64_t TensorPlan::n_elements() const {
  uint64_t n = 1;
  for (uint64_t d : ne) n *= d;
  return n;
}

uint64_t TensorPlan::n_bytes() const {
  const gguf::TypeInfo& info = gguf::type_info(type);
  return n_elements() / info.block_size * info.block_bytes;
}

namespace {

// llama.cpp's use_more_bits: the first and last eighth of the layers and every third between.
bool more_bits_layer(int64_t il, int64_t n) {
  return il < n / 8 || il >= 7 * n / 8 || (il - n / 8) % 3 == 2;
}

bool is_float_type(TensorType t) {
  return t == TensorType::F32 || t == TensorType::F16 || t == TensorType::BF16;
}

}  // namespace

TensorType detail::fit_row(TensorType t, uint64_t cols) {
  auto fits = [cols](TensorType x) { return cols % gguf::type_info(x).block_size == 0; };
  if (fits(t)) return t;
  switch (t) {
    case TensorType::Q4_K: t = TensorType::Q5_0; break;
    case TensorType::Q5_K: t = TensorType::Q5_1; break;
    case TensorType::Q6_K: t = TensorType::Q8_0; break;
    case TensorType::Q2_K:
    case TensorType::Q3_K:
    case TensorType::IQ4_XS: t = TensorType::IQ4_NL; break;
    default: break;
  }
  if (fits(t)) return t;
  return fits(TensorType::F16) ? TensorType::F16 : TensorType::F32;
}

TensorType detail::matrix_type(const FileType& ft, const std::string& role, bool is_output, int64_t il,
                               MoreBitsCounts n) {
  if (is_float_type(ft.base)) return ft.base;
  if (is_output) return ft.base == TensorType::Q8_0 ? TensorType::Q8_0 : TensorType::Q6_K;
  if (ft.name != "Q4_K_M" && ft.name != "Q5_K_M") return ft.base;
  if ((role == "attn_v" || role == "attn_qkv") && more_bits_layer(il, n.attn_v)) return TensorType::Q6_K;
  if (role.starts_with("ffn_down") && more_bits_layer(il, n.ffn_down)) return TensorType::Q6_K;
  return ft.base;
}

namespace {

using detail::Planner;
using Init = TensorPlan::Init;

void plan_attention(Planner& p, const Shape& s, int64_t il) {
  const auto E = static_cast<uint64_t>(s.n_embd), hd = static_cast<uint64_t>(s.head_size());
  const uint64_t q_dim = static_cast<uint64_t>(s.n_head) * hd, kv_dim = static_cast<uint64_t>(s.n_head_kv) * hd;
  const std::string b = "blk." + std::to_string(il) + ".";
  p.vec(b + "attn_norm.weight", E, Init::kOnes);
  p.mat(il, "attn_q", q_dim, E);
  p.mat(il, "attn_k", kv_dim, E);
  p.mat(il, "attn_v", kv_dim, E);
  if (s.qkv_bias) {
    p.vec(b + "attn_q.bias", q_dim, Init::kNormal);
    p.vec(b + "attn_k.bias", kv_dim, Init::kNormal);
    p.vec(b + "attn_v.bias", kv_dim, Init::kNormal);
  }
  if (s.qk_norm) {
    p.vec(b + "attn_q_norm.weight", hd, Init::kOnes);
    p.vec(b + "attn_k_norm.weight", hd, Init::kOnes);
  }
  p.mat(il, "attn_output", E, q_dim);
  if (s.post_norms) p.vec(b + "post_attention_norm.weight", E, Init::kOnes);
}

void plan_ffn(Planner& p, const Shape& s, int64_t il) {
  const auto E = static_cast<uint64_t>(s.n_embd);
  const std::string b = "blk." + std::to_string(il) + ".";
  p.vec(b + "ffn_norm.weight", E, Init::kOnes);
  if (s.n_expert > 0) {
    const auto X = static_cast<uint64_t>(s.n_expert), F = static_cast<uint64_t>(s.n_ff_exp);
    p.router(il, X, E);
    p.mat(il, "ffn_gate_exps", F, E, X);
    p.mat(il, "ffn_up_exps", F, E, X);
    p.mat(il, "ffn_down_exps", E, F, X);
  } else {
    const auto F = static_cast<uint64_t>(s.n_ff);
    p.mat(il, "ffn_gate", F, E);
    p.mat(il, "ffn_up", F, E);
    p.mat(il, "ffn_down", E, F);
  }
  if (s.post_norms) p.vec(b + "post_ffw_norm.weight", E, Init::kOnes);
}

// bert: W (rows, cols) and its bias (rows,).
void mat_bias(Planner& p, int64_t il, const std::string& role, uint64_t rows, uint64_t cols) {
  p.mat_fan_in(il, role, rows, cols);
  p.vec((il < 0 ? "" : "blk." + std::to_string(il) + ".") + role + ".bias", rows, Init::kNormal);
}

// bert: LayerNorm weight (near 1) and bias.
void layer_norm(Planner& p, const std::string& prefix, uint64_t n) {
  p.vec(prefix + ".weight", n, Init::kNearOnes);
  p.vec(prefix + ".bias", n, Init::kNormal);
}

std::vector<TensorPlan> plan_encoder(const Shape& s, const FileType& ft) {
  const auto E = static_cast<uint64_t>(s.n_embd), F = static_cast<uint64_t>(s.n_ff);
  const bool nomic = s.arch == "nomic-bert", jina = s.arch == "jina-bert-v2";
  Planner p(s, ft);
  p.mat(-1, "token_embd", static_cast<uint64_t>(s.n_vocab), E);
  if (s.n_token_types > 0) p.mat_f32(-1, "token_types", static_cast<uint64_t>(s.n_token_types), E);
  if (!nomic && !jina) p.mat_f32(-1, "position_embd", static_cast<uint64_t>(s.n_ctx), E);
  layer_norm(p, "token_embd_norm", E);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    if (nomic) {  // no biases; fused Q, K, V rows; SwiGLU
      p.mat_fan_in(il, "attn_qkv", 3 * E, E);
      p.mat_fan_in(il, "attn_output", E, E);
      layer_norm(p, b + "attn_output_norm", E);
      p.mat_fan_in(il, "ffn_up", F, E);
      p.mat_fan_in(il, "ffn_gate", F, E);
      p.mat_fan_in(il, "ffn_down", E, F);
      layer_norm(p, b + "layer_output_norm", E);
      continue;
    }
    for (const char* role : {"attn_q", "attn_k", "attn_v", "attn_output"}) mat_bias(p, il, role, E, E);
    if (s.jina_norms) {
      layer_norm(p, b + "attn_q_norm", E);
      layer_norm(p, b + "attn_k_norm", E);
      layer_norm(p, b + "attn_norm_2", E);
    }
    layer_norm(p, b + "attn_output_norm", E);
    mat_bias(p, il, "ffn_up", jina ? 2 * F : F, E);  // jina: gate rows, then up rows (GeGLU)
    mat_bias(p, il, "ffn_down", E, F);
    layer_norm(p, b + "layer_output_norm", E);
  }
  if (s.n_cls_out > 0 && jina) {  // jina-reranker: the classifier alone
    mat_bias(p, -1, "cls", static_cast<uint64_t>(s.n_cls_out), E);
  } else if (s.n_cls_out > 0) {
    mat_bias(p, -1, "cls", E, E);
    mat_bias(p, -1, "cls.output", static_cast<uint64_t>(s.n_cls_out), E);
  }
  return p.take();
}

}  // namespace

std::vector<TensorPlan> plan_tensors(const Shape& s, const FileType& ft) {
  if (s.is_encoder()) return plan_encoder(s, ft);
  if (s.is_hybrid()) return detail::plan_hybrid(s, ft);
  const auto E = static_cast<uint64_t>(s.n_embd), V = static_cast<uint64_t>(s.n_vocab);
  Planner p(s, ft);
  p.mat(-1, "token_embd", V, E);
  for (int64_t il = 0; il < s.n_layer; ++il) {
    plan_attention(p, s, il);
    plan_ffn(p, s, il);
  }
  p.vec("output_norm.weight", E, Init::kOnes);
  if (!s.tied) p.mat(-1, "output", V, E);
  if (s.is_reranker()) p.mat(-1, "cls.output", static_cast<uint64_t>(s.n_cls_out), E);
  std::vector<TensorPlan> plan = p.take();
  if (s.is_reranker()) {  // rerankers: the layer matrices and the head N(0, 1 / sqrt(fan in))
    for (TensorPlan& t : plan) {
      if (t.ne.size() == 2 && t.name != "token_embd.weight" && t.name != "output.weight") t.init = Init::kFanIn;
    }
  }
  return plan;
}

// ---------------------------------------------------------------------------------------------
// Metadata

namespace {

// Qwen3-Reranker's prompt ({query}, {document}) as llama.cpp's Qwen3Model converter stores it.
constexpr const char* kQwen3RerankPrompt =
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct "
    "provided. Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the "
    "query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n";

// bert, nomic-bert, jina-bert-v2: the keys of llama.cpp's BertModel converter.
Metadata encoder_metadata(const Shape& s, const FileType& ft) {
  const std::string p = s.arch + ".";
  auto u32 = [](int64_t v) { return OwnedValue::u32(static_cast<uint32_t>(v)); };
  Metadata m = {
      {"general.architecture", OwnedValue::string(s.arch)},
      {"general.name", OwnedValue::string("synth-" + s.name)},
      {"general.file_type", OwnedValue::u32(ft.ftype)},
      {"general.quantization_version", OwnedValue::u32(2)},
      {p + "context_length", u32(s.n_ctx)},
      {p + "embedding_length", u32(s.n_embd)},
      {p + "block_count", u32(s.n_layer)},
      {p + "feed_forward_length", u32(s.n_ff)},
      {p + "attention.head_count", u32(s.n_head)},
      {p + "attention.head_count_kv", u32(s.n_head_kv)},
      {p + "attention.layer_norm_epsilon", OwnedValue::f32(s.rms_eps)},
      {p + "attention.causal", OwnedValue::boolean(false)},
  };
  if (s.arch == "nomic-bert") m.emplace_back(p + "rope.freq_base", OwnedValue::f32(s.rope_base));
  if (s.pooling_type != 0) m.emplace_back(p + "pooling_type", OwnedValue::u32(s.pooling_type));
  if (s.n_cls_out > 0) {
    std::vector<std::string> labels;
    for (int64_t i = 0; i < s.n_cls_out; ++i) labels.push_back("LABEL_" + std::to_string(i));
    m.emplace_back(p + "classifier.output_labels", OwnedValue::string_array(labels));
  }
  if (s.n_token_types > 0) m.emplace_back("tokenizer.ggml.token_type_count", u32(s.n_token_types));
  return m;
}

}  // namespace

Metadata model_metadata(const Shape& s, const FileType& ft) {
  if (s.is_encoder()) return encoder_metadata(s, ft);
  const std::string p = s.arch + ".";
  auto u32 = [](int64_t v) { return OwnedValue::u32(static_cast<uint32_t>(v)); };
  Metadata m = {
      {"general.architecture", OwnedValue::string(s.arch)},
      {"general.name", OwnedValue::string("synth-" + s.name)},
      {"general.file_type", OwnedValue::u32(ft.ftype)},
      {"general.quantization_version", OwnedValue::u32(2)},
      {p + "context_length", u32(s.n_ctx)},
      {p + "embedding_length", u32(s.n_embd)},
      {p + "block_count", u32(s.n_layer + s.n_nextn)},
  };
  if (s.n_ff > 0) m.emplace_back(p + "feed_forward_length", u32(s.n_ff));  // (qwen35moe: none)
  m.emplace_back(p + "attention.head_count", u32(s.n_head));
  m.emplace_back(p + "attention.head_count_kv", u32(s.n_head_kv));
  m.emplace_back(p + "attention.layer_norm_rms_epsilon", OwnedValue::f32(s.rms_eps));
  m.emplace_back(p + "rope.freq_base", OwnedValue::f32(s.rope_base));
  m.emplace_back(p + "rope.dimension_count", u32(s.n_rot ? s.n_rot : s.head_size()));
  m.emplace_back(p + "vocab_size", u32(s.n_vocab));
  if (s.head_dim != 0) {
    m.emplace_back(p + "attention.key_length", u32(s.head_dim));
    m.emplace_back(p + "attention.value_length", u32(s.head_dim));
  }
  if (s.rope_linear_factor != 0.0f) {
    m.emplace_back(p + "rope.scaling.type", OwnedValue::string("linear"));
    m.emplace_back(p + "rope.scaling.factor", OwnedValue::f32(s.rope_linear_factor));
  }
  if (s.is_hybrid()) {
    detail::append_hybrid_metadata(s, m);
    return m;
  }
  if (s.n_swa > 0) {
    m.emplace_back(p + "attention.sliding_window", u32(s.n_swa));
    m.emplace_back(p + "attention.sliding_window_pattern", u32(s.swa_pattern));
    m.emplace_back(p + "rope.freq_base_swa", OwnedValue::f32(s.rope_base_swa));
  }
  if (s.n_expert > 0) {
    m.emplace_back(p + "expert_count", u32(s.n_expert));
    m.emplace_back(p + "expert_used_count", u32(s.n_expert_used));
    m.emplace_back(p + "expert_feed_forward_length", u32(s.n_ff_exp));
    m.emplace_back(p + "expert_weights_norm", OwnedValue::boolean(s.expert_weights_norm));
  }
  if (s.is_reranker()) {  // as llama.cpp's converter writes Qwen3-Reranker
    m.emplace_back(p + "pooling_type", OwnedValue::u32(s.pooling_type));
    m.emplace_back(p + "classifier.output_labels", OwnedValue::string_array({"yes", "no"}));
    m.emplace_back("tokenizer.chat_template.rerank", OwnedValue::string(kQwen3RerankPrompt));
  }
  return m;
}

}  // namespace engine::synth
