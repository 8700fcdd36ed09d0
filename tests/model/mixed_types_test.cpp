// A model whose tensors mix many weight types, as Unsloth's "UD" quants and llama.cpp's
// mixtures do (IQ2_XXS next to IQ3_S, Q4_K, Q6_K, IQ4_XS, ... per tensor): it loads, and its
// forward pass matches the same model with every tensor dequantized to F32 by our reference
// dequantizers.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/traits.h"
#include "engine/model/model.h"
#include "gguf/writer.h"
#include "tests/model/all_logits.h"
#include "tests/support/quantized.h"

namespace engine {
namespace {

using gguf::TensorType;

// Every matrix and its type: the ten lattice / ternary / MXFP4 types and five older ones.
struct Plan {
  const char* name;
  uint64_t cols, rows;  // GGUF ne[0], ne[1]
  TensorType type;
};
constexpr uint64_t kEmbd = 256, kFf = 512, kKv = 128, kVocab = 64;
const Plan kPlan[] = {
    {"token_embd.weight", kEmbd, kVocab, TensorType::IQ3_XXS},  // read by row lookups
    {"output.weight", kEmbd, kVocab, TensorType::Q6_K},
    {"blk.0.attn_q.weight", kEmbd, kEmbd, TensorType::IQ2_XXS},
    {"blk.0.attn_k.weight", kEmbd, kKv, TensorType::IQ3_S},
    {"blk.0.attn_v.weight", kEmbd, kKv, TensorType::Q6_K},
    {"blk.0.attn_output.weight", kEmbd, kEmbd, TensorType::IQ2_XS},
    {"blk.0.ffn_gate.weight", kEmbd, kFf, TensorType::IQ1_S},
    {"blk.0.ffn_up.weight", kEmbd, kFf, TensorType::IQ1_M},
    {"blk.0.ffn_down.weight", kFf, kEmbd, TensorType::IQ4_XS},
    {"blk.1.attn_q.weight", kEmbd, kEmbd, TensorType::IQ2_S},
    {"blk.1.attn_k.weight", kEmbd, kKv, TensorType::TQ2_0},
    {"blk.1.attn_v.weight", kEmbd, kKv, TensorType::TQ1_0},
    {"blk.1.attn_output.weight", kEmbd, kEmbd, TensorType::MXFP4},
    {"blk.1.ffn_gate.weight", kEmbd, kFf, TensorType::Q4_K},
    {"blk.1.ffn_up.weight", kEmbd, kFf, TensorType::Q4_0},
    {"blk.1.ffn_down.weight", kFf, kEmbd, TensorType::IQ3_XXS},
};

// Random blocks of `type` whose dequantized values have an rms near `rms`: one sample at a
// fixed scale tells how the type's scale field maps to magnitude (it differs by type: grid
// levels, 2*ls+1 factors, ...), then the scales are drawn around the matching value.
std::vector<uint8_t> random_weights(TensorType type, uint64_t rows, uint64_t cols, float rms, std::mt19937& rng) {
  const auto r = static_cast<int64_t>(rows), c = static_cast<int64_t>(cols);
  const kernels::KernelTraits* t = kernels::kernel_traits(type);
  const std::vector<uint8_t> probe = ggufd::test::random_blocks(type, r, c, rng, 1e-3f, 1e-3f);
  std::vector<float> y(static_cast<size_t>(r * c));
  t->dequant(probe.data(), y.data(), r * c);
  double sq = 0;
  for (float v : y) sq += double(v) * v;
  const auto scale = static_cast<float>(1e-3 * rms / std::sqrt(sq / static_cast<double>(y.size())));
  return ggufd::test::random_blocks(type, r, c, rng, 0.7f * scale, 1.3f * scale);
}

// The model as GGUF bytes; with `f32`, every matrix dequantized to F32 first (same values).
std::vector<uint8_t> build(bool f32) {
  gguf::Writer w;
  w.set("general.architecture", gguf::OwnedValue::string("llama"));
  w.set("llama.context_length", gguf::OwnedValue::u32(64));
  w.set("llama.embedding_length", gguf::OwnedValue::u32(kEmbd));
  w.set("llama.block_count", gguf::OwnedValue::u32(2));
  w.set("llama.feed_forward_length", gguf::OwnedValue::u32(kFf));
  w.set("llama.attention.head_count", gguf::OwnedValue::u32(4));
  w.set("llama.attention.head_count_kv", gguf::OwnedValue::u32(2));
  w.set("llama.attention.layer_norm_rms_epsilon", gguf::OwnedValue::f32(1e-5f));
  std::mt19937 rng(2024);  // the same draws for both builds
  for (const Plan& p : kPlan) {
    std::vector<uint8_t> bytes = random_weights(p.type, p.rows, p.cols, 0.05f, rng);
    if (!f32) {
      w.add_tensor(p.name, p.type, {p.cols, p.rows}, std::move(bytes));
      continue;
    }
    std::vector<uint8_t> out(p.rows * p.cols * sizeof(float));
    kernels::kernel_traits(p.type)->dequant(bytes.data(), reinterpret_cast<float*>(out.data()),
                                            static_cast<int64_t>(p.rows * p.cols));
    w.add_tensor(p.name, TensorType::F32, {p.cols, p.rows}, std::move(out));
  }
  const std::vector<float> ones(kEmbd, 1.0f);
  const auto* one_bytes = reinterpret_cast<const uint8_t*>(ones.data());
  for (const char* norm : {"output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_norm.weight",
                           "blk.1.attn_norm.weight", "blk.1.ffn_norm.weight"}) {
    w.add_tensor(norm, TensorType::F32, {kEmbd}, std::vector<uint8_t>(one_bytes, one_bytes + kEmbd * 4));
  }
  return w.to_bytes();
}

TEST(MixedTypes, LoadsAndMatchesTheDequantizedModel) {
  const std::vector<uint8_t> quant_bytes = build(false), f32_bytes = build(true);
  const Model quant = Model::from_file(gguf::File::parse(quant_bytes, "mixed.gguf"));
  const Model f32 = Model::from_file(gguf::File::parse(f32_bytes, "mixed-f32.gguf"));
  EXPECT_EQ(quant.hparams().n_vocab, static_cast<int64_t>(kVocab));
  const std::vector<int32_t> tokens{1, 5, 63, 0, 17, 42, 8, 30, 2, 9, 11, 60};
  const std::vector<float> a = test::all_logits(quant, tokens), b = test::all_logits(f32, tokens);
  double sq = 0, err = 0, worst = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = double(a[i]) - b[i];
    sq += double(b[i]) * b[i];
    err += d * d;
    worst = std::max(worst, std::fabs(d));
  }
  const double rms = std::sqrt(sq / static_cast<double>(b.size()));
  // The quantized model rounds every matmul's activations to int8 blocks (Q8A / Q8K) and the
  // F32 one does not; that is the whole difference, and this random-weight network amplifies
  // it. Measured, as a fraction of the logits' rms (rms error / worst error): this file
  // 0.024 / 0.089; the same model with every matrix Q8_0 0.016 / 0.053, IQ4_XS 0.027 / 0.087,
  // IQ2_XXS 0.027 / 0.115, IQ1_S 0.026 / 0.126. The bounds are about twice this file's; a
  // misread block moves logits by O(rms).
  ASSERT_GT(rms, 0.1);
  EXPECT_LT(std::sqrt(err / sq), 0.05);
  EXPECT_LT(worst / rms, 0.18) << "worst " << worst << " rms " << rms;
}

}  // namespace
}  // namespace engine
