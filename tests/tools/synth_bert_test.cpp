// Synthetic BERT encoders (minilm-l6, bert-rerank): tensor plans, metadata and the built-in
// WordPiece vocabulary, as llama.cpp's converter writes them (names, shapes, F32 exceptions).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "tests/support/shared.h"
#include "tests/support/synth_plan.h"
#include "tests/support/temp_path.h"
#include "tools/synth/synth.h"

namespace engine {
namespace {

using ggufd::test::by_name;
using ggufd::test::find_key;

namespace fs = std::filesystem;
using gguf::TensorType;

const std::string kWordStart = "\xe2\x96\x81";  // U+2581

using ggufd::test::TempPath;

TEST(SynthBert, MiniLmShape) {
  const auto s = synth::find_shape("minilm-l6");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->arch, "bert");
  EXPECT_TRUE(s->is_encoder());
  EXPECT_EQ(s->n_vocab, 30522);
  EXPECT_EQ(s->n_embd, 384);
  EXPECT_EQ(s->n_layer, 6);
  EXPECT_EQ(s->n_head, 12);
  EXPECT_EQ(s->n_ff, 1536);
  EXPECT_EQ(s->n_ctx, 512);
  EXPECT_EQ(s->n_token_types, 2);
  EXPECT_EQ(s->pooling_type, 1u);
  EXPECT_EQ(s->n_cls_out, 0);
  const auto r = synth::find_shape("bert-rerank");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->pooling_type, 4u);
  EXPECT_EQ(r->n_cls_out, 1);
}

// all-MiniLM-L6-v2 as convert_hf_to_gguf + llama-quantize make its Q8_0: 5 + 16 per layer
// tensors, position_embd and token_types F32, every bias and LayerNorm F32.
TEST(SynthBert, MiniLmQ8Plan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("minilm-l6"), *synth::find_file_type("Q8_0"));
  EXPECT_EQ(plan.size(), 5u + 6u * 16u);
  const auto t = by_name(plan);
  auto expect = [&t](const std::string& name, TensorType type, std::vector<uint64_t> ne) {
    ggufd::test::expect_tensor(t, name, type, ne);
  };
  expect("token_embd.weight", TensorType::Q8_0, {384, 30522});
  expect("token_types.weight", TensorType::F32, {384, 2});
  expect("position_embd.weight", TensorType::F32, {384, 512});
  expect("token_embd_norm.weight", TensorType::F32, {384});
  expect("token_embd_norm.bias", TensorType::F32, {384});
  for (const std::string b : {"blk.0.", "blk.5."}) {
    for (const char* m : {"attn_q", "attn_k", "attn_v", "attn_output"}) {
      expect(b + m + ".weight", TensorType::Q8_0, {384, 384});
      expect(b + m + ".bias", TensorType::F32, {384});
    }
    expect(b + "ffn_up.weight", TensorType::Q8_0, {384, 1536});
    expect(b + "ffn_up.bias", TensorType::F32, {1536});
    expect(b + "ffn_down.weight", TensorType::Q8_0, {1536, 384});
    expect(b + "ffn_down.bias", TensorType::F32, {384});
    for (const char* n : {"attn_output_norm", "layer_output_norm"}) {
      expect(b + n + ".weight", TensorType::F32, {384});
      expect(b + n + ".bias", TensorType::F32, {384});
    }
  }
  for (const char* absent : {"output.weight", "output_norm.weight", "blk.0.attn_norm.weight", "blk.0.ffn_gate.weight",
                             "cls.weight", "cls.output.weight"}) {
    EXPECT_EQ(t.count(absent), 0u) << absent;
  }
  uint64_t params = 0;
  for (const auto& p : plan) params += p.n_elements();
  EXPECT_EQ(params, 22565376u);  // all-MiniLM-L6-v2's 22713216 without the pooler llama.cpp drops
  const auto& ln = t.at("blk.0.attn_output_norm.weight");
  EXPECT_EQ(ln.init, synth::TensorPlan::Init::kNearOnes);
  EXPECT_EQ(t.at("blk.0.attn_output_norm.bias").init, synth::TensorPlan::Init::kNormal);
  EXPECT_EQ(t.at("blk.3.ffn_up.weight").init, synth::TensorPlan::Init::kFanIn);
  EXPECT_EQ(t.at("token_embd.weight").init, synth::TensorPlan::Init::kNormal);
}

// Q4_K_M: with no output matrix token_embd takes the output rule (Q6_K); rows of 384 are not whole
// 256-blocks, so Q6_K -> Q8_0 and Q4_K -> Q5_0 as llama.cpp falls back.
TEST(SynthBert, MiniLmQ4KMTypes) {
  const auto t = by_name(synth::plan_tensors(*synth::find_shape("minilm-l6"), *synth::find_file_type("Q4_K_M")));
  EXPECT_EQ(t.at("token_embd.weight").type, TensorType::Q8_0);
  EXPECT_EQ(t.at("blk.1.attn_q.weight").type, TensorType::Q5_0);
  EXPECT_EQ(t.at("blk.5.attn_v.weight").type, TensorType::Q8_0);  // last eighth: Q6_K -> Q8_0
  EXPECT_EQ(t.at("position_embd.weight").type, TensorType::F32);
  EXPECT_EQ(t.at("token_types.weight").type, TensorType::F32);
}

// The cross-encoder's classification head: cls (E x E), cls.output (1 x E), biases, fan-in init.
TEST(SynthBert, RerankHead) {
  const auto plan = synth::plan_tensors(*synth::find_shape("bert-rerank"), *synth::find_file_type("Q8_0"));
  EXPECT_EQ(plan.size(), 5u + 2u * 16u + 4u);
  const auto t = by_name(plan);
  EXPECT_EQ(t.at("cls.weight").ne, (std::vector<uint64_t>{128, 128}));
  EXPECT_EQ(t.at("cls.weight").type, TensorType::Q8_0);
  EXPECT_EQ(t.at("cls.weight").init, synth::TensorPlan::Init::kFanIn);
  EXPECT_EQ(t.at("cls.bias").ne, (std::vector<uint64_t>{128}));
  EXPECT_EQ(t.at("cls.output.weight").ne, (std::vector<uint64_t>{128, 1}));
  EXPECT_EQ(t.at("cls.output.weight").init, synth::TensorPlan::Init::kFanIn);
  EXPECT_EQ(t.at("cls.output.bias").ne, (std::vector<uint64_t>{1}));
  EXPECT_EQ(t.at("cls.output.bias").type, TensorType::F32);
  EXPECT_EQ(plan.back().name, "cls.output.bias");
}

// llama.cpp's BERT keys; no rope or RMS-norm keys.
TEST(SynthBert, Metadata) {
  const synth::Metadata m = synth::model_metadata(*synth::find_shape("bert-rerank"), *synth::find_file_type("F32"));
  ASSERT_NE(find_key(m, "general.architecture"), nullptr);
  EXPECT_EQ(find_key(m, "general.architecture")->str, "bert");
  EXPECT_EQ(find_key(m, "general.file_type")->bits, 0u);
  EXPECT_EQ(find_key(m, "bert.context_length")->bits, 512u);
  EXPECT_EQ(find_key(m, "bert.embedding_length")->bits, 128u);
  EXPECT_EQ(find_key(m, "bert.block_count")->bits, 2u);
  EXPECT_EQ(find_key(m, "bert.feed_forward_length")->bits, 512u);
  EXPECT_EQ(find_key(m, "bert.attention.head_count")->bits, 4u);
  EXPECT_EQ(find_key(m, "bert.attention.causal")->bits, 0u);
  EXPECT_EQ(find_key(m, "bert.pooling_type")->bits, 4u);
  EXPECT_EQ(find_key(m, "tokenizer.ggml.token_type_count")->bits, 2u);
  const gguf::OwnedValue* labels = find_key(m, "bert.classifier.output_labels");
  ASSERT_NE(labels, nullptr);
  ASSERT_EQ(labels->items.size(), 1u);
  EXPECT_EQ(labels->items[0].str, "LABEL_0");
  float eps;
  const uint32_t eps_bits = static_cast<uint32_t>(find_key(m, "bert.attention.layer_norm_epsilon")->bits);
  std::memcpy(&eps, &eps_bits, sizeof eps);
  EXPECT_FLOAT_EQ(eps, 1e-12f);
  for (const char* absent : {"bert.rope.freq_base", "bert.attention.layer_norm_rms_epsilon", "bert.vocab_size"}) {
    EXPECT_EQ(find_key(m, absent), nullptr) << absent;
  }
  const synth::Metadata mini = synth::model_metadata(*synth::find_shape("minilm-l6"), *synth::find_file_type("Q8_0"));
  EXPECT_EQ(find_key(mini, "bert.pooling_type")->bits, 1u);
  EXPECT_EQ(find_key(mini, "bert.classifier.output_labels"), nullptr);
}

// BERT's special ids, unique pieces, every printable lower-case ASCII character both as a word
// start and as a continuation, real words, padding with [unusedN].
TEST(SynthBert, BuiltinWordPieceVocabulary) {
  const synth::Metadata meta = synth::builtin_wordpiece_vocabulary(30522);
  EXPECT_EQ(find_key(meta, "tokenizer.ggml.model")->str, "bert");
  const auto& tokens = find_key(meta, "tokenizer.ggml.tokens")->items;
  const auto& types = find_key(meta, "tokenizer.ggml.token_type")->items;
  ASSERT_EQ(tokens.size(), 30522u);
  ASSERT_EQ(types.size(), tokens.size());
  const std::map<uint64_t, std::string> specials = {
      {0, "[PAD]"}, {100, "[UNK]"}, {101, "[CLS]"}, {102, "[SEP]"}, {103, "[MASK]"}};
  for (const auto& [id, text] : specials) {
    EXPECT_EQ(tokens[id].str, text);
    EXPECT_EQ(types[id].bits, 3u) << text;  // control
  }
  EXPECT_EQ(find_key(meta, "tokenizer.ggml.unknown_token_id")->bits, 100u);
  EXPECT_EQ(find_key(meta, "tokenizer.ggml.cls_token_id")->bits, 101u);
  EXPECT_EQ(find_key(meta, "tokenizer.ggml.seperator_token_id")->bits, 102u);
  EXPECT_EQ(find_key(meta, "tokenizer.ggml.padding_token_id")->bits, 0u);
  EXPECT_EQ(find_key(meta, "tokenizer.ggml.mask_token_id")->bits, 103u);
  EXPECT_EQ(tokens[1].str, "[unused0]");
  EXPECT_EQ(tokens.back().str.rfind("[unused", 0), 0u);
  std::set<std::string> all;
  for (const auto& t : tokens) EXPECT_TRUE(all.insert(t.str).second) << "duplicate " << t.str;
  for (char c = '!'; c <= '~'; ++c) {
    if (c >= 'A' && c <= 'Z') continue;
    EXPECT_TRUE(all.count(kWordStart + c)) << c;
    EXPECT_TRUE(all.count(std::string(1, c))) << c;
  }
  for (const char* w : {"the", "server", "robot", "weights"}) EXPECT_TRUE(all.count(kWordStart + w)) << w;
  for (const char* piece : {"ing", "tion", "ly", "ed"}) EXPECT_TRUE(all.count(piece)) << piece;
  EXPECT_FALSE(all.count("##ing"));  // llama.cpp's layout: continuations bare
  EXPECT_THROW(synth::builtin_wordpiece_vocabulary(500), std::runtime_error);
}

// A written file: llama.cpp's keys and tensors; the F32 file holds the inits (LayerNorms near 1,
// matrices N(0, 1 / sqrt(fan in)), embeddings N(0, 0.02)). Two runs with one seed are
// byte-identical whatever the threads.
TEST(SynthBert, RerankFileIsDeterministic) {
  synth::Options o;
  o.shape = *synth::find_shape("bert-rerank");
  o.type = *synth::find_file_type("F32");
  o.seed = 18;
  TempPath a("synth-rerank-a"), b("synth-rerank-b");
  o.threads = 1;
  const synth::Result r = synth::write_model(o, a.path);
  EXPECT_EQ(r.n_vocab, 30522);
  EXPECT_EQ(r.n_tensors, 41u);
  o.threads = 3;
  synth::write_model(o, b.path);
  const gguf::File fa = gguf::File::open(a.path), fb = gguf::File::open(b.path);
  ASSERT_EQ(fs::file_size(a.path), fs::file_size(b.path));
  EXPECT_EQ(std::memcmp(fa.bytes().data(), fb.bytes().data(), fs::file_size(a.path)), 0);
  EXPECT_EQ(fa.get_string("tokenizer.ggml.model"), "bert");
  EXPECT_EQ(fa.get_u64("bert.pooling_type"), 4u);
  auto stats = [&fa](const std::string& name) {
    const auto& t = fa.get_tensor(name);
    std::vector<float> w(t.n_elements);
    std::memcpy(w.data(), t.data.data(), t.n_bytes);
    double sum = 0, sum_sq = 0;
    for (float v : w) {
      sum += v;
      sum_sq += double(v) * v;
    }
    const double mean = sum / double(w.size());
    return std::pair{mean, std::sqrt(sum_sq / double(w.size()) - mean * mean)};
  };
  EXPECT_NEAR(stats("blk.0.attn_output_norm.weight").first, 1.0, 0.01);
  EXPECT_NEAR(stats("blk.0.attn_output_norm.weight").second, 0.02, 0.01);
  EXPECT_NEAR(stats("blk.0.attn_q.bias").first, 0.0, 0.01);
  EXPECT_NEAR(stats("cls.weight").second, 1.0 / std::sqrt(128.0), 0.01);
  EXPECT_NEAR(stats("blk.0.ffn_down.weight").second, 1.0 / std::sqrt(512.0), 0.005);
  EXPECT_NEAR(stats("token_embd.weight").second, 0.02, 0.002);
}

// With a copied BERT vocabulary the model's token_type_count is written once.
TEST(SynthBert, VocabFromBge) {
  GGUFD_REQUIRE_SHARED("tokenizer/ggml-vocab-bert-bge.gguf");
  synth::Options o;
  o.shape = *synth::find_shape("bert-rerank");
  o.shape.n_layer = 1;
  o.vocab_from = ggufd::test::shared_path("tokenizer/ggml-vocab-bert-bge.gguf");
  TempPath out("synth-rerank-bge");
  synth::write_model(o, out.path);
  const gguf::File f = gguf::File::open(out.path);
  int n = 0;
  for (const gguf::KeyValue& kv : f.metadata()) n += kv.key == "tokenizer.ggml.token_type_count";
  EXPECT_EQ(n, 1);
  EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "bert-bge");
  EXPECT_EQ(f.get_tensor("token_embd.weight").ne[1], 30522u);
}

}  // namespace
}  // namespace engine
