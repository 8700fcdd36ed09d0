// The rank-pooling rules per architecture, on tiny models written in memory: what loads, what is
// refused and how the refusal names the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/model/pooling.h"
#include "gguf/writer.h"

namespace engine {
namespace {

// Embedding 8, 2 heads, ffn 16, vocab 10, one layer: a decoder (qwen3, llama) with a 2-row
// cls.output. `skip` leaves a tensor out, `reshape` gives one another shape, `edit`
// changes the metadata.
struct Tiny {
  std::string arch = "qwen3";
  std::string skip;
  std::pair<std::string, std::vector<uint64_t>> reshape;
  std::function<void(gguf::Writer&)> edit;
  std::vector<uint8_t> bytes;

  gguf::File build() {
    gguf::Writer w(3);
    const std::string p = arch + ".";
    w.set("general.architecture", gguf::OwnedValue::string(arch));
    w.set(p + "context_length", gguf::OwnedValue::u32(64));
    w.set(p + "embedding_length", gguf::OwnedValue::u32(8));
    w.set(p + "block_count", gguf::OwnedValue::u32(1));
    w.set(p + "feed_forward_length", gguf::OwnedValue::u32(16));
    w.set(p + "attention.head_count", gguf::OwnedValue::u32(2));
    w.set(p + "attention.layer_norm_rms_epsilon", gguf::OwnedValue::f32(1e-6f));
    w.set(p + "pooling_type", gguf::OwnedValue::u32(4));
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
    bytes = w.to_bytes();
    return gguf::File::parse(bytes, "tiny.gguf");
  }
};

std::string load_error(Tiny& m) {
  try {
    Model::from_file(m.build());
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)

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
  EXPECT_CONTAINS(load_error(missing), "pooling type rank needs a classification head: tensor 'cls.output.weight' is missing");
  Tiny labels;
  labels.arch = "qwen3";
  labels.edit = [](gguf::Writer& w) {
    w.set("qwen3.classifier.output_labels", gguf::OwnedValue::string_array({"yes", "no", "maybe"}));
  };
  EXPECT_CONTAINS(load_error(labels), "qwen3.classifier.output_labels names 3 classes, but tensor 'cls.output.weight' has 2 rows");
  Tiny llama;
  llama.arch = "llama";
  EXPECT_CONTAINS(load_error(llama), "pooling type rank is not supported for architecture llama");
  Tiny llama_embd;  // its cls.output is ignored when it does not rank
  llama_embd.arch = "llama";
  llama_embd.edit = [](gguf::Writer& w) { w.set("llama.pooling_type", gguf::OwnedValue::u32(3)); };
  const Model le = Model::from_file(llama_embd.build(), /*repack=*/false);
  EXPECT_EQ(le.hparams().n_cls_out, 0);
  EXPECT_EQ(le.cls_out.data, nullptr);
}

}  // namespace
}  // namespace engine
