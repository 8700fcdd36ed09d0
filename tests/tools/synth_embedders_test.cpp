// Synthetic nomic-bert and jina-bert-v2 encoders and Qwen3-Reranker-style decoders: tensor plans
// and metadata as llama.cpp's converter writes them (nomic-bert: no position table, fused QKV,
// SwiGLU, no biases; jina-bert-v2: no position table, fused GeGLU, a one-row classifier for the
// reranker; qwen3 reranker: a 2-row cls.output, pooling rank, yes/no labels, the rerank template).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tools/synth/synth.h"
#include "tests/support/synth_plan.h"

namespace engine {
namespace {

using ggufd::test::by_name;
using ggufd::test::find_key;

using gguf::TensorType;

TEST(SynthNomicBert, Plan) {
  const auto s = synth::find_shape("nomic-bert");
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->is_encoder());
  EXPECT_FALSE(s->is_reranker());
  const auto plan = synth::plan_tensors(*s, *synth::find_file_type("Q8_0"));
  EXPECT_EQ(plan.size(), 4u + 2u * 9u);
  const auto t = by_name(plan);
  auto expect = [&t](const std::string& name, TensorType type, std::vector<uint64_t> ne) {
    ggufd::test::expect_tensor(t, name, type, ne);
  };
  expect("token_embd.weight", TensorType::Q8_0, {128, 30522});
  expect("token_types.weight", TensorType::F32, {128, 2});
  expect("blk.1.attn_qkv.weight", TensorType::Q8_0, {128, 384});
  expect("blk.1.attn_output.weight", TensorType::Q8_0, {128, 128});
  expect("blk.1.ffn_up.weight", TensorType::Q8_0, {128, 384});
  expect("blk.1.ffn_gate.weight", TensorType::Q8_0, {128, 384});
  expect("blk.1.ffn_down.weight", TensorType::Q8_0, {384, 128});
  expect("blk.1.layer_output_norm.bias", TensorType::F32, {128});
  for (const char* absent : {"position_embd.weight", "blk.0.attn_q.weight", "blk.0.attn_qkv.bias",
                             "blk.0.attn_output.bias", "blk.0.ffn_up.bias", "blk.0.ffn_down.bias", "cls.output.weight"}) {
    EXPECT_EQ(t.count(absent), 0u) << absent;
  }
  EXPECT_EQ(t.at("blk.0.attn_qkv.weight").init, synth::TensorPlan::Init::kFanIn);
  EXPECT_EQ(t.at("blk.0.ffn_gate.weight").init, synth::TensorPlan::Init::kFanIn);

  const synth::Metadata m = synth::model_metadata(*s, *synth::find_file_type("F32"));
  EXPECT_EQ(find_key(m, "general.architecture")->str, "nomic-bert");
  EXPECT_EQ(find_key(m, "nomic-bert.attention.causal")->bits, 0u);
  EXPECT_EQ(find_key(m, "nomic-bert.pooling_type")->bits, 1u);
  EXPECT_EQ(find_key(m, "nomic-bert.context_length")->bits, 2048u);
  ASSERT_NE(find_key(m, "nomic-bert.rope.freq_base"), nullptr);
  EXPECT_NE(find_key(m, "nomic-bert.attention.layer_norm_epsilon"), nullptr);
}

TEST(SynthJinaBertV2, Plans) {
  const auto t = by_name(synth::plan_tensors(*synth::find_shape("jina-bert-v2"), *synth::find_file_type("Q8_0")));
  EXPECT_EQ(t.count("position_embd.weight"), 0u);
  EXPECT_EQ(t.at("blk.1.ffn_up.weight").ne, (std::vector<uint64_t>{128, 512}));  // gate | up
  EXPECT_EQ(t.at("blk.1.ffn_up.bias").ne, (std::vector<uint64_t>{512}));
  EXPECT_EQ(t.at("blk.1.ffn_down.weight").ne, (std::vector<uint64_t>{256, 128}));
  for (const char* n : {"attn_q_norm", "attn_k_norm", "attn_norm_2"}) {
    EXPECT_EQ(t.at(std::string("blk.0.") + n + ".weight").ne, (std::vector<uint64_t>{128})) << n;
    EXPECT_EQ(t.at(std::string("blk.0.") + n + ".bias").type, TensorType::F32) << n;
  }
  EXPECT_EQ(t.count("cls.weight"), 0u);
  const auto r = by_name(synth::plan_tensors(*synth::find_shape("jina-rerank"), *synth::find_file_type("F32")));
  EXPECT_EQ(r.at("cls.weight").ne, (std::vector<uint64_t>{128, 1}));  // the classifier alone
  EXPECT_EQ(r.at("cls.bias").ne, (std::vector<uint64_t>{1}));
  for (const char* absent : {"cls.output.weight", "blk.0.attn_q_norm.weight", "blk.0.attn_norm_2.weight"}) {
    EXPECT_EQ(r.count(absent), 0u) << absent;
  }
  const synth::Metadata m = synth::model_metadata(*synth::find_shape("jina-rerank"), *synth::find_file_type("F32"));
  EXPECT_EQ(find_key(m, "jina-bert-v2.pooling_type")->bits, 4u);
  EXPECT_EQ(find_key(m, "jina-bert-v2.classifier.output_labels")->items.size(), 1u);
  EXPECT_EQ(find_key(m, "jina-bert-v2.rope.freq_base"), nullptr);
}

TEST(SynthQwen3Rerank, PlanAndMetadata) {
  const auto s = synth::find_shape("qwen3-rerank");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->is_encoder());
  EXPECT_TRUE(s->is_reranker());
  const auto t = by_name(synth::plan_tensors(*s, *synth::find_file_type("Q8_0")));
  EXPECT_EQ(t.at("cls.output.weight").ne, (std::vector<uint64_t>{64, 2}));
  EXPECT_EQ(t.at("cls.output.weight").type, TensorType::Q8_0);
  EXPECT_EQ(t.at("cls.output.weight").init, synth::TensorPlan::Init::kFanIn);
  EXPECT_EQ(t.at("blk.1.attn_q.weight").init, synth::TensorPlan::Init::kFanIn);
  EXPECT_EQ(t.at("token_embd.weight").init, synth::TensorPlan::Init::kNormal);
  for (const char* absent : {"output.weight", "cls.weight", "cls.output.bias"}) EXPECT_EQ(t.count(absent), 0u) << absent;

  const synth::Metadata m = synth::model_metadata(*s, *synth::find_file_type("F32"));
  EXPECT_EQ(find_key(m, "qwen3.pooling_type")->bits, 4u);
  const gguf::OwnedValue* labels = find_key(m, "qwen3.classifier.output_labels");
  ASSERT_NE(labels, nullptr);
  ASSERT_EQ(labels->items.size(), 2u);
  EXPECT_EQ(labels->items[0].str, "yes");
  EXPECT_EQ(labels->items[1].str, "no");
  const gguf::OwnedValue* rerank = find_key(m, "tokenizer.chat_template.rerank");
  ASSERT_NE(rerank, nullptr);
  EXPECT_EQ(rerank->str.rfind("<|im_start|>system\nJudge whether the Document", 0), 0u);
  EXPECT_NE(rerank->str.find("<Query>: {query}\n<Document>: {document}<|im_end|>"), std::string::npos);
  EXPECT_NE(rerank->str.find("<|im_start|>assistant\n<think>\n\n</think>\n\n"), std::string::npos);
  // a plain qwen3 shape has none of it
  const synth::Metadata plain = synth::model_metadata(*synth::find_shape("qwen3-1.7b"), *synth::find_file_type("F32"));
  EXPECT_EQ(find_key(plain, "qwen3.pooling_type"), nullptr);
  EXPECT_EQ(find_key(plain, "tokenizer.chat_template.rerank"), nullptr);
}

}  // namespace
}  // namespace engine
