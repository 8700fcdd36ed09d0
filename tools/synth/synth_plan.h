// Synthetic models, internal: the tensor planner shared by synth_arch.cpp (llama-like decoders,
// encoders) and synth_hybrid.cpp (qwen35, qwen35moe, gemma4). Not part of the synth API.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "tools/synth/synth.h"

namespace engine::synth::detail {

// How many tensors llama-quantize counts for its "more bits" layer choice (use_more_bits(i, n)):
// n_attention_wv, the attn_v-like tensors (attn_v, attn_qkv), and n_ffn_down (n_layer_all).
// Tensor i of a kind is the one of layer i in our plans.
struct MoreBitsCounts {
  int64_t attn_v = 0;
  int64_t ffn_down = 0;
};

// llama.cpp's fallback for rows that do not fill whole blocks.
gguf::TensorType fit_row(gguf::TensorType t, uint64_t cols);

// The type of a weight matrix; `il` is its layer (-1 for token_embd / output), `role` its name
// without the layer prefix and suffix ("ffn_down_exps"). attn_v and attn_qkv (llama-quantize's
// attn_v-like category) and every ffn_down* get Q6_K in the more-bits layers of Q4_K_M / Q5_K_M.
gguf::TensorType matrix_type(const FileType& ft, const std::string& role, bool is_output, int64_t il,
                             MoreBitsCounts n);

// Appends one file's tensors in order, each typed by the rules of plan_tensors(). Holds references
// to the shape and file type (they must outlive it); not thread-safe.
class Planner {
 public:
  using Init = TensorPlan::Init;
  Planner(const Shape& s, const FileType& ft) : Planner(s, ft, {s.n_layer, s.n_layer}) {}
  Planner(const Shape& s, const FileType& ft, MoreBitsCounts n) : s_(s), ft_(ft), n_(n) {}

  void vec(std::string name, uint64_t n, Init init) {
    out_.push_back({std::move(name), gguf::TensorType::F32, {n}, init});
  }
  // W (rows, cols), or n_expert such matrices: GGUF [cols, rows] / [cols, rows, n_expert].
  // token_embd and per_layer_token_embd take the output rule when the output is tied to them.
  void mat(int64_t il, const std::string& role, uint64_t rows, uint64_t cols, uint64_t n_expert = 0) {
    const bool embd = role == "token_embd" || role == "per_layer_token_embd";
    const bool is_output = role == "output" || (embd && (s_.tied || s_.is_encoder()));
    const gguf::TensorType t = fit_row(matrix_type(ft_, role, is_output, il, n_), cols);
    std::vector<uint64_t> ne = {cols, rows};
    if (n_expert > 0) ne.push_back(n_expert);
    out_.push_back({name(il, role), t, std::move(ne), Init::kNormal});
  }
  // The MoE router: always F32.
  void router(int64_t il, uint64_t n_expert, uint64_t cols) {
    out_.push_back({name(il, "ffn_gate_inp"), gguf::TensorType::F32, {cols, n_expert}, Init::kNormal});
  }
  // An encoder's layer or head matrix: typed as mat(), N(0, 1 / sqrt(cols)).
  void mat_fan_in(int64_t il, const std::string& role, uint64_t rows, uint64_t cols) {
    mat(il, role, rows, cols);
    out_.back().init = Init::kFanIn;
  }
  // A matrix never quantized and written F32 by the converter (bert's position_embd, token_types,
  // ssm_conv1d): F32 [cols, rows].
  void mat_f32(int64_t il, const std::string& role, uint64_t rows, uint64_t cols) {
    out_.push_back({name(il, role), gguf::TensorType::F32, {cols, rows}, Init::kNormal});
  }
  // A matrix llama-quantize never quantizes but the converter writes in its output type
  // (gemma4's per_layer_model_proj): the float file types' own, F16 (convert_hf_to_gguf's
  // default) under a quantized one.
  void mat_unquantized(int64_t il, const std::string& role, uint64_t rows, uint64_t cols) {
    const bool f = ft_.base == gguf::TensorType::F32 || ft_.base == gguf::TensorType::BF16;
    out_.push_back({name(il, role), f ? ft_.base : gguf::TensorType::F16, {cols, rows}, Init::kNormal});
  }
  std::vector<TensorPlan> take() { return std::move(out_); }

  static std::string name(int64_t il, const std::string& role) {
    return (il < 0 ? "" : "blk." + std::to_string(il) + ".") + role + ".weight";
  }

 private:
  const Shape& s_;
  const FileType& ft_;
  MoreBitsCounts n_;
  std::vector<TensorPlan> out_;
};

// qwen35, qwen35moe, gemma4 (synth_hybrid.cpp).
std::vector<TensorPlan> plan_hybrid(const Shape& s, const FileType& ft);
// The hybrid architectures' own keys, appended to model_metadata()'s common decoder keys.
void append_hybrid_metadata(const Shape& s, Metadata& m);
// Throws std::runtime_error unless the hybrid fields of `s` are consistent.
void check_hybrid_shape(const Shape& s);

}  // namespace engine::synth::detail
