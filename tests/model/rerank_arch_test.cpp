// nomic-bert loading (fused QKV, SwiGLU, no position table), jina-bert-v2's (biases, fused GeGLU,
// a one-row classifier alone) and the rank-pooling rules per architecture, on tiny models written
// in memory: what loads, what is refused and how the refusal names the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/encoder.h"
#include "engine/model/model.h"
#include "engine/model/pooling.h"
#include "gguf/writer.h"
#include "tests/support/load_error.h"

namespace engine {
namespace {

using ggufd::test::load_error;

// Embedding 8, 2 heads, ffn 16, vocab 10, one layer. nomic-bert: token_types, embedding norm,
// attn_qkv, attn_output, the two LayerNorms, ffn_{up,gate,down}. jina-bert-v2 (pooling rank):
// attn_{q,k,v,output} with biases, ffn_up of 32 rows (GeGLU) with ffn_down, biases, and a one-row
// cls. qwen3 / llama: a decoder with a 2-row cls.output. `skip` leaves a tensor out, `reshape` gives one another shape, `edit`
// changes the metadata.
struct Tiny {
  std::string arch = "nomic-bert";
  std::string skip;
  std::pair<std::string, std::vector<uint64_t>> reshape;
  std::function<void(gguf::Writer&)> edit;
  std::vector<uint8_t> bytes;

  gguf::File build() {
    gguf::Writer w(3);
    const bool encoder = arch == "nomic-bert" || arch == "jina-bert-v2", jina = arch == "jina-bert-v2";
    const std::string p = arch + ".";
    w.set("general.architecture", gguf::OwnedValue::string(arch));
    w.set(p + "context_length", gguf::OwnedValue::u32(64));
    w.set(p + "embedding_length", gguf::OwnedValue::u32(8));
    w.set(p + "block_count", gguf::OwnedValue::u32(1));
    w.set(p + "feed_forward_length", gguf::OwnedValue::u32(16));
    w.set(p + "attention.head_count", gguf::OwnedValue::u32(2));
    if (encoder) {
      w.set(p + "attention.layer_norm_epsilon", gguf::OwnedValue::f32(1e-12f));
      w.set(p + "attention.causal", gguf::OwnedValue::boolean(false));
      w.set(p + "rope.freq_base", gguf::OwnedValue::f32(1000.0f));
      w.set(p + "pooling_type", gguf::OwnedValue::u32(jina ? 4 : 1));
    } else {
      w.set(p + "attention.layer_norm_rms_epsilon", gguf::OwnedValue::f32(1e-6f));
      w.set(p + "pooling_type", gguf::OwnedValue::u32(4));
    }
    if (edit) edit(w);
    uint32_t seed = 1;
    auto add = [&](const std::string& name, std::vector<uint64_t> ne) {
      if (name == skip) return;
      if (name == reshape.first) ne = reshape.second;
      uint64_t n = 1;
      for (uint64_t d : ne) n *= d;
      std::vector<float> v(n);
      for (float& x : v) x = static_cast<float>(static_cast<int32_t>((seed = seed * 1664525u + 1013904223u) >> 8) % 200 - 100) / 100.0f;
      std::vector<uint8_t> raw(n * 4);
      std::memcpy(raw.data(), v.data(), raw.size());
      w.add_tensor(name, gguf::TensorType::F32, ne, std::move(raw));
    };
    add("token_embd.weight", {8, 10});
    if (jina) {
      add("token_types.weight", {8, 2});
      add("token_embd_norm.weight", {8});
      add("token_embd_norm.bias", {8});
      for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
        add(std::string("blk.0.") + m + ".weight", {8, 8});
        add(std::string("blk.0.") + m + ".bias", {8});
      }
      add("blk.0.attn_output_norm.weight", {8});
      add("blk.0.attn_output_norm.bias", {8});
      add("blk.0.ffn_up.weight", {8, 32});
      add("blk.0.ffn_up.bias", {32});
      add("blk.0.ffn_down.weight", {16, 8});
      add("blk.0.ffn_down.bias", {8});
      add("blk.0.layer_output_norm.weight", {8});
      add("blk.0.layer_output_norm.bias", {8});
      add("cls.weight", {8, 1});
      add("cls.bias", {1});
    } else if (encoder) {
      add("token_types.weight", {8, 2});
      add("token_embd_norm.weight", {8});
      add("token_embd_norm.bias", {8});
      add("blk.0.attn_qkv.weight", {8, 24});
      add("blk.0.attn_output.weight", {8, 8});
      add("blk.0.attn_output_norm.weight", {8});
      add("blk.0.attn_output_norm.bias", {8});
      add("blk.0.ffn_up.weight", {8, 16});
      add("blk.0.ffn_gate.weight", {8, 16});
      add("blk.0.ffn_down.weight", {16, 8});
      add("blk.0.layer_output_norm.weight", {8});
      add("blk.0.layer_output_norm.bias", {8});
    } else {
      add("output_norm.weight", {8});
      add("blk.0.attn_norm.weight", {8});
      add("blk.0.attn_q.weight", {8, 8});
      add("blk.0.attn_k.weight", {8, 8});
      add("blk.0.attn_v.weight", {8, 8});
      add("blk.0.attn_output.weight", {8, 8});
      if (arch == "qwen3") {
        add("blk.0.attn_q_norm.weight", {4});
        add("blk.0.attn_k_norm.weight", {4});
      }
      add("blk.0.ffn_norm.weight", {8});
      add("blk.0.ffn_gate.weight", {8, 16});
      add("blk.0.ffn_up.weight", {8, 16});
      add("blk.0.ffn_down.weight", {16, 8});
      add("cls.output.weight", {8, 2});
    }
    bytes = w.to_bytes();
    return gguf::File::parse(bytes, "tiny.gguf");
  }
};

TEST(NomicBert, Loads) {
  Tiny t;
  const Model m = Model::from_file(t.build(), /*repack=*/false);
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, Arch::kNomicBert);
  EXPECT_FALSE(hp.causal);
  EXPECT_EQ(hp.rope_style, RopeStyle::kNeox);
  EXPECT_EQ(hp.n_rot, 4);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1000.0f);
  EXPECT_EQ(hp.pooling, PoolingType::kMean);
  EXPECT_EQ(m.pos_embd.data, nullptr);
  EXPECT_EQ(m.type_embd0.size(), 8u);
  const LayerWeights& l = m.layers[0];
  // Q, K, V: consecutive 8-row ranges of attn_qkv; no biases; a gated FFN
  EXPECT_EQ(static_cast<const uint8_t*>(l.wk.data), static_cast<const uint8_t*>(l.wq.data) + 8 * l.wq.row_bytes);
  EXPECT_EQ(static_cast<const uint8_t*>(l.wv.data), static_cast<const uint8_t*>(l.wk.data) + 8 * l.wk.row_bytes);
  EXPECT_TRUE(l.bq.empty() && l.bk.empty() && l.bv.empty() && l.bo.empty());
  EXPECT_NE(l.ffn_gate.data, nullptr);
  EXPECT_FALSE(rank_pools_last(hp));
  bool rope = false;
  for (const HParamField& f : describe_hparams(hp)) rope |= f.name == "rope" && f.value == "neox, base 1000";
  EXPECT_TRUE(rope);
}

// Positions come from RoPE: in 1 2 1 2 the two 1s see the 2s at other distances, so their states
// differ (without positions they would be equal); a sequence's states do not depend on the batch
// it shares.
TEST(NomicBert, EncodesWithRope) {
  Tiny t;
  const Model m = Model::from_file(t.build());
  Encoder enc(m);
  ThreadPool pool(2);
  auto states = [&](const std::vector<int32_t>& ids, const std::vector<int32_t>& other) {
    Batch b;
    for (size_t i = 0; i < ids.size(); ++i) b.add(ids[i], 0, static_cast<int32_t>(i), false, true);
    for (size_t i = 0; i < other.size(); ++i) b.add(other[i], 1, static_cast<int32_t>(i), false, true);
    enc.eval(b, pool);
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ids.size(); ++i) out.emplace_back(enc.hidden(static_cast<int64_t>(i)), enc.hidden(static_cast<int64_t>(i)) + 8);
    return out;
  };
  const auto alone = states({1, 2, 1, 2}, {});
  const auto shared = states({1, 2, 1, 2}, {5, 6, 7});
  double diff = 0;
  for (size_t i = 0; i < 4; ++i) {
    for (size_t e = 0; e < 8; ++e) EXPECT_NEAR(alone[i][e], shared[i][e], 1e-5f);
  }
  for (size_t e = 0; e < 8; ++e) diff += std::abs(alone[0][e] - alone[2][e]);
  EXPECT_GT(diff, 1e-2);
}

TEST(NomicBert, RefusesMalformedFiles) {
  Tiny gate;
  gate.skip = "blk.0.ffn_gate.weight";
  EXPECT_CONTAINS(load_error(gate.build()), "tensor 'blk.0.ffn_gate.weight' is missing (architecture nomic-bert)");
  Tiny qkv;
  qkv.reshape = {"blk.0.attn_qkv.weight", {8, 16}};
  EXPECT_CONTAINS(load_error(qkv.build()), "tensor 'blk.0.attn_qkv.weight' has shape [8, 16], expected [8, 24]");
  Tiny no_qkv;  // neither fused nor separate Q/K/V
  no_qkv.skip = "blk.0.attn_qkv.weight";
  EXPECT_CONTAINS(load_error(no_qkv.build()), "tensor 'blk.0.attn_q.weight' is missing");
  Tiny norm;
  norm.skip = "blk.0.attn_output_norm.bias";
  EXPECT_CONTAINS(load_error(norm.build()), "tensor 'blk.0.attn_output_norm.bias' is missing");
  Tiny down;
  down.reshape = {"blk.0.ffn_down.weight", {8, 16}};
  EXPECT_CONTAINS(load_error(down.build()), "tensor 'blk.0.ffn_down.weight' has shape [8, 16], expected [16, 8]");
  Tiny rot;
  rot.edit = [](gguf::Writer& w) { w.set("nomic-bert.rope.dimension_count", gguf::OwnedValue::u32(3)); };
  EXPECT_CONTAINS(load_error(rot.build()), "rope.dimension_count (3) must be even");
  Tiny causal;
  causal.edit = [](gguf::Writer& w) { w.set("nomic-bert.attention.causal", gguf::OwnedValue::boolean(true)); };
  EXPECT_CONTAINS(load_error(causal.build()), "attention.causal = true is not supported for architecture nomic-bert");
  Tiny rank;  // llama.cpp has no classification head for nomic-bert
  rank.edit = [](gguf::Writer& w) { w.set("nomic-bert.pooling_type", gguf::OwnedValue::u32(4)); };
  EXPECT_CONTAINS(load_error(rank.build()), "pooling type rank is not supported for architecture nomic-bert");
}

TEST(JinaBertV2, LoadsAndScores) {
  Tiny t;
  t.arch = "jina-bert-v2";
  const Model m = Model::from_file(t.build(), /*repack=*/false);
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, Arch::kJinaBertV2);
  EXPECT_FLOAT_EQ(hp.alibi_max_bias, 8.0f);
  EXPECT_EQ(m.pos_embd.data, nullptr);
  EXPECT_EQ(m.layers[0].ffn_up.rows, 32);  // fused GeGLU: gate rows, then up rows
  EXPECT_EQ(m.layers[0].ffn_gate.data, nullptr);
  EXPECT_EQ(m.layers[0].ffn_up_b.size(), 32u);
  EXPECT_EQ(hp.n_cls_out, 1);              // cls alone: its tanh is the score
  EXPECT_EQ(m.cls.rows, 1);
  EXPECT_EQ(m.cls_out.data, nullptr);
  EXPECT_FALSE(rank_pools_last(hp));
  Encoder enc(m);
  ThreadPool pool(1);
  Batch b;
  for (int32_t i = 0; i < 3; ++i) b.add(i + 1, 0, i, false, i == 0);
  enc.eval(b, pool);
  const std::vector<float> score = classify(m, std::vector<float>(enc.hidden(0), enc.hidden(0) + 8));
  ASSERT_EQ(score.size(), 1u);
  EXPECT_GT(score[0], -1.0f);
  EXPECT_LT(score[0], 1.0f);
}

TEST(JinaBertV2, RefusesMalformedFiles) {
  Tiny bias;  // llama.cpp requires the output and down biases of jina-bert-v2
  bias.arch = "jina-bert-v2";
  bias.skip = "blk.0.attn_output.bias";
  EXPECT_CONTAINS(load_error(bias.build()), "tensor 'blk.0.attn_output.bias' is missing");
  Tiny up;  // neither n_ff nor 2 * n_ff rows
  up.arch = "jina-bert-v2";
  up.reshape = {"blk.0.ffn_up.weight", {8, 24}};
  EXPECT_CONTAINS(load_error(up.build()), "tensor 'blk.0.ffn_up.weight' has shape [8, 24], expected [8, 16]");
  Tiny cls;
  cls.arch = "jina-bert-v2";
  cls.reshape = {"cls.weight", {4, 1}};
  EXPECT_CONTAINS(load_error(cls.build()), "tensor 'cls.weight' has shape [4, 1], expected [8, 1]");
  Tiny qnorm;  // a Q LayerNorm needs its bias
  qnorm.arch = "jina-bert-v2";
  qnorm.edit = [](gguf::Writer& w) {
    w.add_tensor("blk.0.attn_q_norm.weight", gguf::TensorType::F32, {8}, std::vector<uint8_t>(32, 0));
  };
  EXPECT_CONTAINS(load_error(qnorm.build()), "tensor 'blk.0.attn_q_norm.bias' is missing");
}

// qwen3 with pooling rank: the yes/no head, the last token, a softmax. Other decoders have no
// rank head (llama.cpp loads cls.output for qwen3 only).
TEST(RankHead, PerArchitecture) {
  Tiny q;
  q.arch = "qwen3";
  const Model m = Model::from_file(q.build(), /*repack=*/false);
  EXPECT_EQ(m.hparams().n_cls_out, 2);
  EXPECT_TRUE(rank_pools_last(m.hparams()));
  const std::vector<float> out = classify(m, std::vector<float>(8, 0.5f));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_NEAR(out[0] + out[1], 1.0f, 1e-6f);
  Pooler last(PoolingType::kRank, true, 8, 5), first(PoolingType::kRank, false, 8, 5);
  EXPECT_TRUE(last.wants(4) && !last.wants(0));
  EXPECT_TRUE(first.wants(0) && !first.wants(4));

  Tiny missing;
  missing.arch = "qwen3";
  missing.skip = "cls.output.weight";
  EXPECT_CONTAINS(load_error(missing.build()), "pooling type rank needs a classification head: tensor 'cls.output.weight' is missing");
  Tiny labels;
  labels.arch = "qwen3";
  labels.edit = [](gguf::Writer& w) {
    w.set("qwen3.classifier.output_labels", gguf::OwnedValue::string_array({"yes", "no", "maybe"}));
  };
  EXPECT_CONTAINS(load_error(labels.build()), "qwen3.classifier.output_labels names 3 classes, but tensor 'cls.output.weight' has 2 rows");
  Tiny llama;
  llama.arch = "llama";
  EXPECT_CONTAINS(load_error(llama.build()), "pooling type rank is not supported for architecture llama");
  Tiny llama_embd;  // its cls.output is ignored when it does not rank
  llama_embd.arch = "llama";
  llama_embd.edit = [](gguf::Writer& w) { w.set("llama.pooling_type", gguf::OwnedValue::u32(3)); };
  const Model le = Model::from_file(llama_embd.build(), /*repack=*/false);
  EXPECT_EQ(le.hparams().n_cls_out, 0);
  EXPECT_EQ(le.cls_out.data, nullptr);
}

}  // namespace
}  // namespace engine
