// Synthetic models of the 2026 hybrid architectures: Qwen3.5 (qwen35: Gated DeltaNet + gated
// attention + an MTP block; qwen35moe: routed and shared experts) and Gemma 4 E4B (per-layer
// inputs, sliding layers with their own head size, shared-KV last layers): hyperparameters, the
// tensor plans (names, shapes, llama-quantize's types) and the metadata keys llama.cpp reads.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/support/synth_plan.h"
#include "tools/synth/synth.h"

namespace engine {
namespace {

using ggufd::test::by_name;
using ggufd::test::expect_tensor;
using ggufd::test::find_key;
using gguf::TensorType;

uint64_t u32_key(const synth::Metadata& m, const std::string& key) {
  const gguf::OwnedValue* v = find_key(m, key);
  EXPECT_NE(v, nullptr) << key;
  return v ? v->bits : 0;
}

TEST(SynthHybrid, ShapesMatchTheirConfigs) {
  const auto q4 = synth::find_shape("qwen3.5-4b");
  ASSERT_TRUE(q4);
  EXPECT_EQ(q4->arch, "qwen35");
  EXPECT_EQ(q4->n_vocab, 248320);
  EXPECT_EQ(q4->n_embd, 2560);
  EXPECT_EQ(q4->n_layer, 32);
  EXPECT_EQ(q4->n_ff, 9216);
  EXPECT_EQ(q4->n_nextn, 1);
  EXPECT_TRUE(q4->tied);
  const auto q9 = synth::find_shape("qwen3.5-9b");
  ASSERT_TRUE(q9);
  EXPECT_EQ(q9->n_embd, 4096);
  EXPECT_EQ(q9->n_ff, 12288);
  EXPECT_FALSE(q9->tied);
  const auto moe = synth::find_shape("qwen3.5-35b-a3b");
  ASSERT_TRUE(moe);
  EXPECT_EQ(moe->arch, "qwen35moe");
  EXPECT_EQ(moe->n_layer, 40);
  EXPECT_EQ(moe->n_expert, 256);
  EXPECT_EQ(moe->n_expert_used, 8);
  EXPECT_EQ(moe->n_ff_exp, 512);
  EXPECT_EQ(moe->n_ff_shexp, 512);
  const auto g4 = synth::find_shape("gemma4-e4b");
  ASSERT_TRUE(g4);
  EXPECT_EQ(g4->arch, "gemma4");
  EXPECT_EQ(g4->n_layer, 42);
  EXPECT_EQ(g4->head_dim, 512);
  EXPECT_EQ(g4->head_dim_swa, 256);
  EXPECT_EQ(g4->n_kv_shared, 18);
  EXPECT_TRUE(g4->sliding(0));
  EXPECT_FALSE(g4->sliding(5));
  EXPECT_FALSE(g4->sliding(41));
  for (const auto& s : {*q4, *q9, *moe, *g4}) EXPECT_TRUE(s.is_hybrid()) << s.name;
}

// Qwen3.5-4B Q4_K_M: 24 DeltaNet layers, 8 gated attention layers, the MTP block 32; attn_qkv and
// attn_v share llama-quantize's attn_v more-bits counter over the 33 blocks.
TEST(SynthHybrid, Qwen35Q4KMPlan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("qwen3.5-4b"), *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(plan.size(), 2u + 24u * 14u + 8u * 11u + 15u);  // tied: no output.weight
  const auto t = by_name(plan);
  EXPECT_EQ(t.count("output.weight"), 0u);
  expect_tensor(t, "token_embd.weight", TensorType::Q6_K, {2560, 248320});
  expect_tensor(t, "blk.0.attn_qkv.weight", TensorType::Q6_K, {2560, 8192});  // first eighth of 33
  expect_tensor(t, "blk.5.attn_qkv.weight", TensorType::Q4_K, {2560, 8192});
  expect_tensor(t, "blk.6.attn_qkv.weight", TensorType::Q6_K, {2560, 8192});  // (6 - 4) % 3 == 2
  expect_tensor(t, "blk.0.attn_gate.weight", TensorType::Q4_K, {2560, 4096});
  expect_tensor(t, "blk.0.ssm_conv1d.weight", TensorType::F32, {4, 8192});
  expect_tensor(t, "blk.0.ssm_dt.bias", TensorType::F32, {32});
  expect_tensor(t, "blk.0.ssm_a", TensorType::F32, {32});
  EXPECT_EQ(t.at("blk.0.ssm_a").init, synth::TensorPlan::Init::kDecay);
  expect_tensor(t, "blk.0.ssm_beta.weight", TensorType::Q4_K, {2560, 32});
  expect_tensor(t, "blk.0.ssm_alpha.weight", TensorType::Q4_K, {2560, 32});
  expect_tensor(t, "blk.0.ssm_norm.weight", TensorType::F32, {128});
  expect_tensor(t, "blk.0.ssm_out.weight", TensorType::Q4_K, {4096, 2560});
  expect_tensor(t, "blk.0.post_attention_norm.weight", TensorType::F32, {2560});
  EXPECT_EQ(t.count("blk.0.attn_q.weight"), 0u);
  expect_tensor(t, "blk.3.attn_q.weight", TensorType::Q4_K, {2560, 8192});  // queries and gates
  expect_tensor(t, "blk.3.attn_k.weight", TensorType::Q4_K, {2560, 1024});
  expect_tensor(t, "blk.3.attn_v.weight", TensorType::Q6_K, {2560, 1024});  // layer 3 < 33 / 8
  expect_tensor(t, "blk.3.attn_output.weight", TensorType::Q4_K, {4096, 2560});
  expect_tensor(t, "blk.3.attn_q_norm.weight", TensorType::F32, {256});
  EXPECT_EQ(t.count("blk.3.ssm_a"), 0u);
  expect_tensor(t, "blk.31.ffn_down.weight", TensorType::Q6_K, {9216, 2560});
  expect_tensor(t, "blk.32.attn_q.weight", TensorType::Q4_K, {2560, 8192});
  expect_tensor(t, "blk.32.nextn.eh_proj.weight", TensorType::Q4_K, {5120, 2560});
  expect_tensor(t, "blk.32.nextn.enorm.weight", TensorType::F32, {2560});
  expect_tensor(t, "blk.32.nextn.hnorm.weight", TensorType::F32, {2560});
  expect_tensor(t, "blk.32.nextn.shared_head_norm.weight", TensorType::F32, {2560});
  expect_tensor(t, "blk.32.ffn_up.weight", TensorType::Q4_K, {2560, 9216});
}

// Qwen3.5-35B-A3B Q4_K_M: 256 experts of 512 and a shared expert per block, untied output.
TEST(SynthHybrid, Qwen35MoeQ4KMPlan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("qwen3.5-35b-a3b"), *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(plan.size(), 3u + 30u * 19u + 10u * 16u + 20u);
  const auto t = by_name(plan);
  expect_tensor(t, "token_embd.weight", TensorType::Q4_K, {2048, 248320});
  expect_tensor(t, "output.weight", TensorType::Q6_K, {2048, 248320});
  expect_tensor(t, "blk.0.ffn_gate_inp.weight", TensorType::F32, {2048, 256});
  expect_tensor(t, "blk.0.ffn_gate_exps.weight", TensorType::Q4_K, {2048, 512, 256});
  expect_tensor(t, "blk.0.ffn_up_exps.weight", TensorType::Q4_K, {2048, 512, 256});
  expect_tensor(t, "blk.0.ffn_down_exps.weight", TensorType::Q6_K, {512, 2048, 256});  // first eighth of 41
  expect_tensor(t, "blk.6.ffn_down_exps.weight", TensorType::Q4_K, {512, 2048, 256});
  expect_tensor(t, "blk.7.ffn_down_shexp.weight", TensorType::Q6_K, {512, 2048});  // (7 - 5) % 3 == 2
  expect_tensor(t, "blk.6.ffn_down_shexp.weight", TensorType::Q4_K, {512, 2048});
  expect_tensor(t, "blk.0.ffn_gate_inp_shexp.weight", TensorType::F32, {2048});
  expect_tensor(t, "blk.0.ffn_gate_shexp.weight", TensorType::Q4_K, {2048, 512});
  expect_tensor(t, "blk.0.attn_qkv.weight", TensorType::Q6_K, {2048, 8192});
  expect_tensor(t, "blk.39.attn_k.weight", TensorType::Q4_K, {2048, 512});
  expect_tensor(t, "blk.40.nextn.eh_proj.weight", TensorType::Q4_K, {4096, 2048});
  expect_tensor(t, "blk.40.ffn_gate_inp.weight", TensorType::F32, {2048, 256});
  EXPECT_EQ(t.count("blk.0.ffn_gate.weight"), 0u);
  uint64_t params = 0, bytes = 0;
  for (const auto& p : plan) {
    params += p.n_elements();
    bytes += p.n_bytes();
  }
  EXPECT_GT(params, 34'500'000'000u);  // "35B total" with the MTP block, without the vision tower
  EXPECT_LT(params, 36'000'000'000u);
  EXPECT_GT(bytes, 18ull << 30);
  EXPECT_LT(bytes, 22ull << 30);
}

// Gemma 4 E4B Q4_K_M: per-layer inputs (tied embeddings: per_layer_token_embd takes the output
// rule too, per_layer_model_proj stays F16), sliding heads of 256, global ones of 512, no K/V in
// the last 18 layers (so 24 attn_v tensors for the more-bits counter).
TEST(SynthHybrid, Gemma4Q4KMPlan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("gemma4-e4b"), *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(plan.size(), 6u + 24u * 16u + 18u * 13u);
  const auto t = by_name(plan);
  EXPECT_EQ(t.count("output.weight"), 0u);
  expect_tensor(t, "token_embd.weight", TensorType::Q6_K, {2560, 262144});
  expect_tensor(t, "per_layer_token_embd.weight", TensorType::Q6_K, {10752, 262144});
  expect_tensor(t, "per_layer_model_proj.weight", TensorType::F16, {2560, 10752});
  expect_tensor(t, "per_layer_proj_norm.weight", TensorType::F32, {256});
  expect_tensor(t, "rope_freqs.weight", TensorType::F32, {256});
  EXPECT_EQ(t.at("rope_freqs.weight").init, synth::TensorPlan::Init::kPartialRope);
  expect_tensor(t, "blk.0.attn_q.weight", TensorType::Q4_K, {2560, 2048});
  expect_tensor(t, "blk.0.attn_k.weight", TensorType::Q4_K, {2560, 512});
  expect_tensor(t, "blk.0.attn_v.weight", TensorType::Q6_K, {2560, 512});
  expect_tensor(t, "blk.4.attn_v.weight", TensorType::Q4_K, {2560, 512});
  expect_tensor(t, "blk.23.attn_v.weight", TensorType::Q6_K, {2560, 1024});  // last eighth of 24
  expect_tensor(t, "blk.0.attn_q_norm.weight", TensorType::F32, {256});
  expect_tensor(t, "blk.5.attn_q.weight", TensorType::Q4_K, {2560, 4096});
  expect_tensor(t, "blk.5.attn_output.weight", TensorType::Q4_K, {4096, 2560});
  expect_tensor(t, "blk.5.attn_k_norm.weight", TensorType::F32, {512});
  EXPECT_EQ(t.count("blk.24.attn_k.weight"), 0u);
  EXPECT_EQ(t.count("blk.24.attn_v.weight"), 0u);
  EXPECT_EQ(t.count("blk.24.attn_k_norm.weight"), 0u);
  expect_tensor(t, "blk.41.attn_q_norm.weight", TensorType::F32, {512});
  expect_tensor(t, "blk.41.ffn_down.weight", TensorType::Q6_K, {10240, 2560});
  expect_tensor(t, "blk.3.inp_gate.weight", TensorType::Q4_K, {2560, 256});
  expect_tensor(t, "blk.3.proj.weight", TensorType::Q4_K, {256, 2560});
  expect_tensor(t, "blk.3.post_norm.weight", TensorType::F32, {2560});
  expect_tensor(t, "blk.3.post_ffw_norm.weight", TensorType::F32, {2560});
}

TEST(SynthHybrid, Qwen35Metadata) {
  const synth::Metadata m = synth::model_metadata(*synth::find_shape("qwen3.5-4b"), *synth::find_file_type("Q8_0"));
  EXPECT_EQ(u32_key(m, "qwen35.block_count"), 33u);  // the stack and its MTP block
  EXPECT_EQ(u32_key(m, "qwen35.nextn_predict_layers"), 1u);
  EXPECT_EQ(u32_key(m, "qwen35.feed_forward_length"), 9216u);
  EXPECT_EQ(u32_key(m, "qwen35.attention.key_length"), 256u);
  EXPECT_EQ(u32_key(m, "qwen35.rope.dimension_count"), 64u);
  EXPECT_EQ(u32_key(m, "qwen35.ssm.conv_kernel"), 4u);
  EXPECT_EQ(u32_key(m, "qwen35.ssm.state_size"), 128u);
  EXPECT_EQ(u32_key(m, "qwen35.ssm.group_count"), 16u);
  EXPECT_EQ(u32_key(m, "qwen35.ssm.time_step_rank"), 32u);
  EXPECT_EQ(u32_key(m, "qwen35.ssm.inner_size"), 4096u);
  EXPECT_EQ(u32_key(m, "qwen35.full_attention_interval"), 4u);
  const gguf::OwnedValue* sections = find_key(m, "qwen35.rope.dimension_sections");
  ASSERT_NE(sections, nullptr);
  ASSERT_EQ(sections->items.size(), 4u);
  EXPECT_EQ(sections->items[0].bits, 11u);
  EXPECT_EQ(sections->items[2].bits, 10u);
  EXPECT_EQ(sections->items[3].bits, 0u);
  EXPECT_EQ(find_key(m, "qwen35.expert_count"), nullptr);

  const synth::Metadata e =
      synth::model_metadata(*synth::find_shape("qwen3.5-35b-a3b"), *synth::find_file_type("Q8_0"));
  EXPECT_EQ(u32_key(e, "qwen35moe.block_count"), 41u);
  EXPECT_EQ(u32_key(e, "qwen35moe.expert_count"), 256u);
  EXPECT_EQ(u32_key(e, "qwen35moe.expert_used_count"), 8u);
  EXPECT_EQ(u32_key(e, "qwen35moe.expert_feed_forward_length"), 512u);
  EXPECT_EQ(u32_key(e, "qwen35moe.expert_shared_feed_forward_length"), 512u);
  EXPECT_EQ(find_key(e, "qwen35moe.feed_forward_length"), nullptr);  // (its config has none)
}

TEST(SynthHybrid, Gemma4Metadata) {
  const synth::Metadata m = synth::model_metadata(*synth::find_shape("gemma4-e4b"), *synth::find_file_type("Q8_0"));
  EXPECT_EQ(u32_key(m, "gemma4.block_count"), 42u);
  EXPECT_EQ(u32_key(m, "gemma4.attention.key_length"), 512u);
  EXPECT_EQ(u32_key(m, "gemma4.attention.key_length_swa"), 256u);
  EXPECT_EQ(u32_key(m, "gemma4.attention.value_length_swa"), 256u);
  EXPECT_EQ(u32_key(m, "gemma4.rope.dimension_count"), 512u);
  EXPECT_EQ(u32_key(m, "gemma4.rope.dimension_count_swa"), 256u);
  EXPECT_EQ(u32_key(m, "gemma4.attention.sliding_window"), 512u);
  EXPECT_EQ(u32_key(m, "gemma4.embedding_length_per_layer_input"), 256u);
  EXPECT_EQ(u32_key(m, "gemma4.attention.shared_kv_layers"), 18u);
  ASSERT_NE(find_key(m, "gemma4.final_logit_softcapping"), nullptr);
  ASSERT_NE(find_key(m, "gemma4.rope.freq_base_swa"), nullptr);
  const gguf::OwnedValue* pattern = find_key(m, "gemma4.attention.sliding_window_pattern");
  ASSERT_NE(pattern, nullptr);
  ASSERT_EQ(pattern->items.size(), 42u);
  int global = 0;
  for (const auto& v : pattern->items) global += v.bits == 0;
  EXPECT_EQ(global, 7);  // every 6th layer
  EXPECT_EQ(pattern->items[5].bits, 0u);
  EXPECT_EQ(pattern->items[4].bits, 1u);
}

// --layers: gemma4's shared-KV layers shrink so that they still follow a sliding and a global layer.
TEST(SynthHybrid, WithLayers) {
  const synth::Shape g4 = *synth::find_shape("gemma4-e4b");
  EXPECT_EQ(synth::with_layers(g4, 12).n_kv_shared, 6);
  EXPECT_EQ(synth::with_layers(g4, 18).n_kv_shared, 12);
  EXPECT_EQ(synth::with_layers(g4, 6).n_kv_shared, 0);
  EXPECT_EQ(synth::with_layers(g4, 42).n_kv_shared, 18);
  const synth::Shape q = synth::with_layers(*synth::find_shape("qwen3.5-9b"), 8);
  EXPECT_EQ(q.n_layer, 8);
  EXPECT_EQ(q.n_nextn, 1);
}

}  // namespace
}  // namespace engine
