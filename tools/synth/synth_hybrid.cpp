// Synthetic models of the hybrid architectures: qwen35 / qwen35moe (Gated DeltaNet layers, gated
// full attention every few layers, a NextN / MTP block; qwen35moe: routed experts and a shared
// expert) and gemma4 (per-layer input embeddings, sliding layers with their own head size,
// shared-KV last layers, final soft-cap). Tensor names and shapes are those llama.cpp's loaders
// (src/models/qwen35.cpp, qwen35moe.cpp, gemma4.cpp) and engine/model read; metadata keys as its
// converter writes them (conversion/qwen.py, gemma.py).
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "tools/synth/synth_plan.h"

namespace engine::synth {

using gguf::OwnedValue;

namespace {

using detail::Planner;
using Init = TensorPlan::Init;

uint64_t u(int64_t v) { return static_cast<uint64_t>(v); }

std::string blk(int64_t il) { return "blk." + std::to_string(il) + "."; }

bool qwen35_family(const Shape& s) { return s.arch == "qwen35" || s.arch == "qwen35moe"; }

bool recurrent(const Shape& s, int64_t il) { return il < s.n_layer && (il + 1) % s.full_attn_interval != 0; }

// Gated full attention (qwen35): attn_q holds each head's query and then its gate.
void plan_gated_attention(Planner& p, const Shape& s, int64_t il) {
  const uint64_t E = u(s.n_embd), hd = u(s.head_size()), q_dim = u(s.n_head) * hd, kv_dim = u(s.n_head_kv) * hd;
  p.mat(il, "attn_q", 2 * q_dim, E);
  p.mat(il, "attn_k", kv_dim, E);
  p.mat(il, "attn_v", kv_dim, E);
  p.mat(il, "attn_output", E, q_dim);
  p.vec(blk(il) + "attn_q_norm.weight", hd, Init::kOnes);
  p.vec(blk(il) + "attn_k_norm.weight", hd, Init::kOnes);
}

// Gated DeltaNet: q, k (ssm_k_heads each) and v (ssm_v_heads) rows of attn_qkv go through the
// causal conv; attn_gate gates the normed output.
void plan_delta_net(Planner& p, const Shape& s, int64_t il) {
  const uint64_t E = u(s.n_embd), key_dim = u(s.ssm_k_heads * s.ssm_state), value_dim = u(s.ssm_v_heads * s.ssm_state);
  const uint64_t conv_dim = 2 * key_dim + value_dim, nv = u(s.ssm_v_heads);
  p.mat(il, "attn_qkv", conv_dim, E);
  p.mat(il, "attn_gate", value_dim, E);
  p.mat_f32(il, "ssm_conv1d", conv_dim, u(s.ssm_conv));
  p.vec(blk(il) + "ssm_dt.bias", nv, Init::kNormal);
  p.vec(blk(il) + "ssm_a", nv, Init::kDecay);
  p.mat(il, "ssm_beta", nv, E);
  p.mat(il, "ssm_alpha", nv, E);
  p.vec(blk(il) + "ssm_norm.weight", u(s.ssm_state), Init::kOnes);
  p.mat(il, "ssm_out", E, value_dim);
}

void plan_qwen35_ffn(Planner& p, const Shape& s, int64_t il) {
  const uint64_t E = u(s.n_embd);
  if (s.n_expert == 0) {
    p.mat(il, "ffn_gate", u(s.n_ff), E);
    p.mat(il, "ffn_up", u(s.n_ff), E);
    p.mat(il, "ffn_down", E, u(s.n_ff));
    return;
  }
  const uint64_t X = u(s.n_expert), F = u(s.n_ff_exp), S = u(s.n_ff_shexp);
  p.router(il, X, E);
  p.mat(il, "ffn_gate_exps", F, E, X);
  p.mat(il, "ffn_up_exps", F, E, X);
  p.mat(il, "ffn_down_exps", E, F, X);
  p.vec(blk(il) + "ffn_gate_inp_shexp.weight", E, Init::kNormal);
  p.mat(il, "ffn_gate_shexp", S, E);
  p.mat(il, "ffn_up_shexp", S, E);
  p.mat(il, "ffn_down_shexp", E, S);
}

std::vector<TensorPlan> plan_qwen35(const Shape& s, const FileType& ft) {
  const uint64_t E = u(s.n_embd), V = u(s.n_vocab);
  const int64_t n_all = s.n_layer + s.n_nextn;
  Planner p(s, ft, {n_all, n_all});  // one attn_v-like tensor (attn_v or attn_qkv) per block
  p.mat(-1, "token_embd", V, E);
  for (int64_t il = 0; il < n_all; ++il) {
    p.vec(blk(il) + "attn_norm.weight", E, Init::kOnes);
    if (recurrent(s, il)) {
      plan_delta_net(p, s, il);
    } else {
      plan_gated_attention(p, s, il);
    }
    p.vec(blk(il) + "post_attention_norm.weight", E, Init::kOnes);
    plan_qwen35_ffn(p, s, il);
    if (il >= s.n_layer) {  // the MTP block: [enorm(embedding); hnorm(hidden)] -> eh_proj
      p.mat(il, "nextn.eh_proj", E, 2 * E);
      p.vec(blk(il) + "nextn.enorm.weight", E, Init::kOnes);
      p.vec(blk(il) + "nextn.hnorm.weight", E, Init::kOnes);
      p.vec(blk(il) + "nextn.shared_head_norm.weight", E, Init::kOnes);
    }
  }
  p.vec("output_norm.weight", E, Init::kOnes);
  if (!s.tied) p.mat(-1, "output", V, E);
  return p.take();
}

// The first layer without K/V of its own (gemma4).
int64_t first_shared_kv(const Shape& s) { return s.n_layer - s.n_kv_shared; }

void plan_gemma4_layer(Planner& p, const Shape& s, int64_t il) {
  const uint64_t E = u(s.n_embd), F = u(s.n_ff), P = u(s.n_embd_per_layer);
  const uint64_t hd = u(s.sliding(il) ? s.head_dim_swa : s.head_dim), q_dim = u(s.n_head) * hd;
  const std::string b = blk(il);
  p.vec(b + "attn_norm.weight", E, Init::kOnes);
  p.mat(il, "attn_q", q_dim, E);
  if (il < first_shared_kv(s)) {
    p.mat(il, "attn_k", u(s.n_head_kv) * hd, E);
    p.mat(il, "attn_v", u(s.n_head_kv) * hd, E);
    p.vec(b + "attn_k_norm.weight", hd, Init::kOnes);
  }
  p.mat(il, "attn_output", E, q_dim);
  p.vec(b + "attn_q_norm.weight", hd, Init::kOnes);
  p.vec(b + "post_attention_norm.weight", E, Init::kOnes);
  p.vec(b + "ffn_norm.weight", E, Init::kOnes);
  p.mat(il, "ffn_gate", F, E);
  p.mat(il, "ffn_up", F, E);
  p.mat(il, "ffn_down", E, F);
  p.vec(b + "post_ffw_norm.weight", E, Init::kOnes);
  p.mat(il, "inp_gate", P, E);
  p.mat(il, "proj", E, P);
  p.vec(b + "post_norm.weight", E, Init::kOnes);
}

std::vector<TensorPlan> plan_gemma4(const Shape& s, const FileType& ft) {
  const uint64_t E = u(s.n_embd), V = u(s.n_vocab), PL = u(s.n_embd_per_layer * s.n_layer);
  Planner p(s, ft, {first_shared_kv(s), s.n_layer});  // attn_v in the layers with K/V only
  p.mat(-1, "token_embd", V, E);
  p.mat(-1, "per_layer_token_embd", V, PL);
  p.mat_unquantized(-1, "per_layer_model_proj", PL, E);
  p.vec("per_layer_proj_norm.weight", u(s.n_embd_per_layer), Init::kOnes);
  p.vec("rope_freqs.weight", u(s.head_dim) / 2, Init::kPartialRope);
  for (int64_t il = 0; il < s.n_layer; ++il) plan_gemma4_layer(p, s, il);
  p.vec("output_norm.weight", E, Init::kOnes);
  if (!s.tied) p.mat(-1, "output", V, E);
  return p.take();
}

}  // namespace

std::vector<TensorPlan> detail::plan_hybrid(const Shape& s, const FileType& ft) {
  return qwen35_family(s) ? plan_qwen35(s, ft) : plan_gemma4(s, ft);
}

void detail::append_hybrid_metadata(const Shape& s, Metadata& m) {
  const std::string p = s.arch + ".";
  auto u32 = [](int64_t v) { return OwnedValue::u32(static_cast<uint32_t>(v)); };
  if (qwen35_family(s)) {
    m.emplace_back(p + "rope.dimension_sections",
                   OwnedValue::i32_array({s.rope_sections[0], s.rope_sections[1], s.rope_sections[2], s.rope_sections[3]}));
    m.emplace_back(p + "ssm.conv_kernel", u32(s.ssm_conv));
    m.emplace_back(p + "ssm.state_size", u32(s.ssm_state));
    m.emplace_back(p + "ssm.group_count", u32(s.ssm_k_heads));
    m.emplace_back(p + "ssm.time_step_rank", u32(s.ssm_v_heads));
    m.emplace_back(p + "ssm.inner_size", u32(s.ssm_v_heads * s.ssm_state));
    m.emplace_back(p + "full_attention_interval", u32(s.full_attn_interval));
    if (s.n_nextn > 0) m.emplace_back(p + "nextn_predict_layers", u32(s.n_nextn));
    if (s.n_expert > 0) {
      m.emplace_back(p + "expert_count", u32(s.n_expert));
      m.emplace_back(p + "expert_used_count", u32(s.n_expert_used));
      m.emplace_back(p + "expert_feed_forward_length", u32(s.n_ff_exp));
      m.emplace_back(p + "expert_shared_feed_forward_length", u32(s.n_ff_shexp));
    }
    return;
  }
  std::vector<OwnedValue> sliding;  // one flag per layer
  for (int64_t il = 0; il < s.n_layer; ++il) sliding.push_back(OwnedValue::boolean(s.sliding(il)));
  m.emplace_back(p + "attention.sliding_window", u32(s.n_swa));
  m.emplace_back(p + "attention.sliding_window_pattern", OwnedValue::array(gguf::ValueType::kBool, std::move(sliding)));
  m.emplace_back(p + "rope.freq_base_swa", OwnedValue::f32(s.rope_base_swa));
  m.emplace_back(p + "attention.key_length_swa", u32(s.head_dim_swa));
  m.emplace_back(p + "attention.value_length_swa", u32(s.head_dim_swa));
  m.emplace_back(p + "rope.dimension_count_swa", u32(s.head_dim_swa));
  m.emplace_back(p + "embedding_length_per_layer_input", u32(s.n_embd_per_layer));
  m.emplace_back(p + "attention.shared_kv_layers", u32(s.n_kv_shared));
  m.emplace_back(p + "final_logit_softcapping", OwnedValue::f32(s.final_softcap));
}

void detail::check_hybrid_shape(const Shape& s) {
  auto fail = [&s](const std::string& why) {
    throw std::runtime_error("synth: inconsistent shape '" + s.name + "': " + why);
  };
  if (qwen35_family(s)) {
    if (s.full_attn_interval < 1 || s.ssm_state < 1 || s.ssm_k_heads < 1 || s.ssm_v_heads % s.ssm_k_heads != 0 ||
        s.ssm_conv < 1 || s.n_nextn < 0 || s.head_dim == 0) {
      fail("Gated DeltaNet sizes");
    }
    if (s.n_expert > 0 && s.n_ff_shexp < 1) fail("qwen35moe needs a shared expert");
    return;
  }
  if (s.n_swa < 1 || s.head_dim == 0 || s.head_dim_swa < 1 || s.n_embd_per_layer < 1 || s.n_kv_shared < 0) {
    fail("gemma4 sizes");
  }
  if (s.n_kv_shared > 0) {  // engine/model and llama.cpp: sliding layers read from - 2, global ones from - 1
    const int64_t from = first_shared_kv(s);
    if (from < 2 || s.sliding(from - 1) || !s.sliding(from - 2)) fail("shared-KV layers need a sliding then a global layer before them");
  }
}

Shape with_layers(Shape s, int64_t n_layer) {
  if (s.arch == "gemma4" && s.n_kv_shared > 0) {
    // keep the share of layers with K/V, rounded down to whole sliding / global periods
    const int64_t own = s.n_layer - s.n_kv_shared;
    int64_t from = n_layer * own / s.n_layer / s.swa_pattern * s.swa_pattern;
    if (from < s.swa_pattern) from = s.swa_pattern;
    s.n_kv_shared = from < n_layer ? n_layer - from : 0;
  }
  s.n_layer = n_layer;
  return s;
}

}  // namespace engine::synth
