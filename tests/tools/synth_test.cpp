// Synthetic models: shapes and type plans, the built-in vocabulary, and written files that the
// parser, the model loader, the tokenizer and the forward pass all accept.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/forward.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "tests/support/temp_path.h"
#include "tools/synth/synth.h"

namespace engine {
namespace {

namespace fs = std::filesystem;
using gguf::TensorType;

// A fresh file path in the test temp dir, removed by the destructor.
using ggufd::test::TempPath;

const TensorType* type_of(const std::vector<synth::TensorPlan>& plan, const std::string& name) {
  for (const auto& t : plan) {
    if (t.name == name) return &t.type;
  }
  return nullptr;
}

// Logits of "Hello, world!" through the whole model; all finite.
void expect_forward_runs(const Model& model, const Tokenizer& tok) {
  const std::vector<int32_t> ids = tok.encode("Hello, world!", true, false);
  ASSERT_FALSE(ids.empty());
  ThreadPool pool(1);
  KvCache cache(model.hparams(), 64);
  Forward fwd(model, 16);
  Batch batch;
  for (size_t i = 0; i < ids.size(); ++i) {
    batch.add(ids[i], 0, static_cast<int32_t>(i), i + 1 == ids.size());
  }
  fwd.eval(batch, cache, pool);
  ASSERT_EQ(fwd.n_outputs(), 1);
  const float* logits = fwd.logits(0);
  double sum_sq = 0;
  for (int64_t v = 0; v < fwd.n_vocab(); ++v) {
    ASSERT_TRUE(std::isfinite(logits[v])) << v;
    sum_sq += double(logits[v]) * logits[v];
  }
  EXPECT_GT(sum_sq, 0.0);
}

TEST(Synth, ShapesMatchTheirModels) {
  const auto l1 = synth::find_shape("llama-1b");
  ASSERT_TRUE(l1);
  EXPECT_EQ(l1->n_embd, 2048);
  EXPECT_EQ(l1->n_layer, 16);
  EXPECT_EQ(l1->n_vocab, 128256);
  EXPECT_TRUE(l1->tied);
  EXPECT_EQ(l1->head_size(), 64);
  const auto q3 = synth::find_shape("qwen3-1.7b");
  ASSERT_TRUE(q3);
  EXPECT_EQ(q3->head_size(), 128);
  EXPECT_TRUE(q3->qk_norm);
  const auto moe = synth::find_shape("qwen3-30b-a3b");
  ASSERT_TRUE(moe);
  EXPECT_EQ(moe->arch, "qwen3moe");
  EXPECT_EQ(moe->n_layer, 48);
  EXPECT_EQ(moe->n_expert, 128);
  EXPECT_EQ(moe->n_expert_used, 8);
  EXPECT_EQ(moe->n_ff_exp, 768);
  EXPECT_FALSE(moe->tied);
  const auto g3 = synth::find_shape("gemma3-4b");
  ASSERT_TRUE(g3);
  EXPECT_EQ(g3->n_vocab, 262144);
  EXPECT_EQ(g3->head_size(), 256);
  EXPECT_EQ(g3->n_swa, 1024);
  EXPECT_TRUE(g3->tied && g3->post_norms && g3->qk_norm);
  for (const char* name : {"demo", "tinyllama", "qwen2.5-0.5b", "llama-8b"}) EXPECT_TRUE(synth::find_shape(name)) << name;
  EXPECT_FALSE(synth::find_shape("gpt-5"));
  EXPECT_TRUE(synth::find_file_type("q4_k_m"));
  EXPECT_FALSE(synth::find_file_type("Q9_0"));
}

// The llama-1b plan (no file written): tensor count, shapes, llama.cpp's type choices, size.
TEST(Synth, Llama1bQ4KMPlan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("llama-1b"), *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(plan.size(), 2u + 16u * 9u);  // embd, output_norm, 9 per layer; tied: no output
  EXPECT_EQ(type_of(plan, "output.weight"), nullptr);
  EXPECT_EQ(*type_of(plan, "token_embd.weight"), TensorType::Q6_K);  // tied: the output rule
  EXPECT_EQ(*type_of(plan, "blk.0.attn_v.weight"), TensorType::Q6_K);   // first eighth
  EXPECT_EQ(*type_of(plan, "blk.3.attn_v.weight"), TensorType::Q4_K);
  EXPECT_EQ(*type_of(plan, "blk.4.ffn_down.weight"), TensorType::Q6_K);  // (4 - 2) % 3 == 2
  EXPECT_EQ(*type_of(plan, "blk.15.ffn_down.weight"), TensorType::Q6_K);  // last eighth
  EXPECT_EQ(*type_of(plan, "blk.5.attn_q.weight"), TensorType::Q4_K);
  EXPECT_EQ(*type_of(plan, "blk.5.attn_norm.weight"), TensorType::F32);
  uint64_t params = 0, bytes = 0;
  for (const auto& t : plan) {
    params += t.n_elements();
    bytes += t.n_bytes();
    if (t.name == "blk.0.attn_k.weight") {
      EXPECT_EQ(t.ne, (std::vector<uint64_t>{2048, 512}));
    }
  }
  EXPECT_EQ(params, 1235814400u);  // Llama-3.2-1B's parameter count
  EXPECT_GT(bytes, 700u << 20);
  EXPECT_LT(bytes, 900u << 20);
}

// Sum of the plan's elements and bytes.
std::pair<uint64_t, uint64_t> totals(const std::vector<synth::TensorPlan>& plan) {
  uint64_t params = 0, bytes = 0;
  for (const auto& t : plan) {
    params += t.n_elements();
    bytes += t.n_bytes();
  }
  return {params, bytes};
}

const synth::TensorPlan* find(const std::vector<synth::TensorPlan>& plan, const std::string& name) {
  for (const auto& t : plan) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

// Qwen3-30B-A3B as llama-quantize makes its Q4_K_M: 3-D experts, F32 router, Q6_K down
// projections in the more-bits layers, Q4_K token_embd (untied), Q6_K output.
TEST(Synth, Qwen3MoeQ4KMPlan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("qwen3-30b-a3b"), *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(plan.size(), 3u + 48u * 12u);
  const auto* gate = find(plan, "blk.0.ffn_gate_exps.weight");
  ASSERT_NE(gate, nullptr);
  EXPECT_EQ(gate->ne, (std::vector<uint64_t>{2048, 768, 128}));
  EXPECT_EQ(gate->type, TensorType::Q4_K);
  EXPECT_EQ(find(plan, "blk.0.ffn_up_exps.weight")->ne, (std::vector<uint64_t>{2048, 768, 128}));
  EXPECT_EQ(find(plan, "blk.0.ffn_down_exps.weight")->ne, (std::vector<uint64_t>{768, 2048, 128}));
  EXPECT_EQ(find(plan, "blk.0.ffn_gate_inp.weight")->ne, (std::vector<uint64_t>{2048, 128}));
  EXPECT_EQ(*type_of(plan, "blk.0.ffn_gate_inp.weight"), TensorType::F32);
  EXPECT_EQ(*type_of(plan, "blk.0.ffn_down_exps.weight"), TensorType::Q6_K);  // first eighth
  EXPECT_EQ(*type_of(plan, "blk.6.ffn_down_exps.weight"), TensorType::Q4_K);
  EXPECT_EQ(*type_of(plan, "blk.8.ffn_down_exps.weight"), TensorType::Q6_K);  // (8 - 6) % 3 == 2
  EXPECT_EQ(*type_of(plan, "blk.8.attn_v.weight"), TensorType::Q6_K);
  EXPECT_EQ(*type_of(plan, "blk.7.attn_k_norm.weight"), TensorType::F32);
  EXPECT_EQ(type_of(plan, "blk.0.ffn_gate.weight"), nullptr);
  EXPECT_EQ(*type_of(plan, "token_embd.weight"), TensorType::Q4_K);
  EXPECT_EQ(*type_of(plan, "output.weight"), TensorType::Q6_K);
  const auto [params, bytes] = totals(plan);
  EXPECT_EQ(params, 30532122624u);  // Qwen3-30B-A3B's parameter count
  EXPECT_GT(bytes, 17ull << 30);    // 17.28 GiB (18.55 GB)
  EXPECT_LT(bytes, 18ull << 30);
}

// Gemma-3-4B's text model: post-norms, q/k norms, tied Q6_K embeddings.
TEST(Synth, Gemma3Q4KMPlan) {
  const auto plan = synth::plan_tensors(*synth::find_shape("gemma3-4b"), *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(plan.size(), 2u + 34u * 13u);
  EXPECT_EQ(type_of(plan, "output.weight"), nullptr);
  EXPECT_EQ(*type_of(plan, "token_embd.weight"), TensorType::Q6_K);
  EXPECT_EQ(*type_of(plan, "blk.3.post_attention_norm.weight"), TensorType::F32);
  EXPECT_EQ(*type_of(plan, "blk.3.post_ffw_norm.weight"), TensorType::F32);
  EXPECT_EQ(find(plan, "blk.0.attn_q_norm.weight")->ne, (std::vector<uint64_t>{256}));
  EXPECT_EQ(find(plan, "blk.0.attn_output.weight")->ne, (std::vector<uint64_t>{2048, 2560}));
  EXPECT_EQ(*type_of(plan, "blk.0.ffn_down.weight"), TensorType::Q6_K);
  const auto [params, bytes] = totals(plan);
  EXPECT_EQ(params, 3880099328u);  // Gemma-3-4B without its vision tower
  EXPECT_GT(bytes, 2ull << 30);
  EXPECT_LT(bytes, 3ull << 30);
}

TEST(Synth, OutputAndFallbackTypes) {
  synth::Shape demo = *synth::find_shape("demo");
  demo.n_vocab = 1000;
  auto plan = synth::plan_tensors(demo, *synth::find_file_type("Q8_0"));
  EXPECT_EQ(*type_of(plan, "output.weight"), TensorType::Q8_0);
  // Rows of 64 / 192 are not whole 256-blocks: K-quants fall back as llama.cpp does.
  plan = synth::plan_tensors(demo, *synth::find_file_type("Q4_K_M"));
  EXPECT_EQ(*type_of(plan, "blk.0.attn_q.weight"), TensorType::Q5_0);
  EXPECT_EQ(*type_of(plan, "output.weight"), TensorType::Q8_0);  // Q6_K -> Q8_0
  plan = synth::plan_tensors(demo, *synth::find_file_type("F16"));
  EXPECT_EQ(*type_of(plan, "output.weight"), TensorType::F16);
  EXPECT_EQ(*type_of(plan, "output_norm.weight"), TensorType::F32);
}

TEST(Synth, BuiltinVocabularyIsPaddedAndUnique) {
  const synth::Metadata meta = synth::builtin_vocabulary(1000);
  const gguf::OwnedValue* tokens = nullptr;
  for (const auto& [k, v] : meta) {
    if (k == "tokenizer.ggml.tokens") tokens = &v;
  }
  ASSERT_NE(tokens, nullptr);
  EXPECT_EQ(tokens->items.size(), 1000u);
  EXPECT_THROW(synth::builtin_vocabulary(300), std::runtime_error);  // below the natural size
}

// The demo: every layer of the stack accepts it, the tokenizer round-trips, the pass runs.
TEST(Synth, DemoLoadsTokenizesAndRuns) {
  TempPath out("synth-demo");
  const synth::Result r = synth::write_model(synth::demo_options(), out.path);
  EXPECT_EQ(r.bytes, fs::file_size(out.path));
  const gguf::File file = gguf::File::open(out.path);
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.get_string("general.architecture"), "llama");
  EXPECT_EQ(file.get_u64("general.quantization_version"), 2u);
  EXPECT_EQ(file.get_u64("general.file_type"), 7u);
  EXPECT_EQ(file.get_string("tokenizer.ggml.model"), "gpt2");

  const Tokenizer tok = Tokenizer::from_gguf(file);
  const std::string text = "Hello, world! 123";
  const std::vector<int32_t> ids = tok.encode(text, false, false);
  EXPECT_LT(ids.size(), text.size());  // the merges do something
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_EQ(tok.decode(tok.encode("naïve café — ünïcödé ✓", false, false)), "naïve café — ünïcödé ✓");
  EXPECT_EQ(tok.token_text(tok.bos()), "<|begin_of_text|>");
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|im_end|>")));
  const auto chatml = tok.encode("<|im_start|>user\nhi<|im_end|>", false, true);
  EXPECT_EQ(chatml.front(), tok.find_token("<|im_start|>"));
  EXPECT_TRUE(file.find_string("tokenizer.chat_template"));

  const Model model = Model::load(out.path);
  EXPECT_EQ(model.hparams().n_vocab, tok.n_vocab());
  expect_forward_runs(model, tok);
}

// Weights: deterministic per seed, ~N(0, 0.02), norms 1.
TEST(Synth, WeightsAreSeededNormals) {
  synth::Options o = synth::demo_options();
  o.type = *synth::find_file_type("F32");
  TempPath a("synth-a"), b("synth-b"), c("synth-c");
  o.threads = 1;
  synth::write_model(o, a.path);
  o.threads = 3;
  synth::write_model(o, b.path);
  o.seed += 1;
  synth::write_model(o, c.path);
  const gguf::File fa = gguf::File::open(a.path), fb = gguf::File::open(b.path), fc = gguf::File::open(c.path);
  const auto& ta = fa.get_tensor("token_embd.weight");
  ASSERT_EQ(ta.n_bytes, fb.get_tensor("token_embd.weight").n_bytes);
  EXPECT_EQ(std::memcmp(ta.data.data(), fb.get_tensor("token_embd.weight").data.data(), ta.n_bytes), 0);
  EXPECT_NE(std::memcmp(ta.data.data(), fc.get_tensor("token_embd.weight").data.data(), ta.n_bytes), 0);
  std::vector<float> w(ta.n_elements);
  std::memcpy(w.data(), ta.data.data(), ta.n_bytes);
  double sum = 0, sum_sq = 0;
  for (float v : w) {
    sum += v;
    sum_sq += double(v) * v;
  }
  const double mean = sum / double(w.size()), sd = std::sqrt(sum_sq / double(w.size()) - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.001);
  EXPECT_NEAR(sd, 0.02, 0.001);
  float norm0;
  std::memcpy(&norm0, fa.get_tensor("output_norm.weight").data.data(), sizeof norm0);
  EXPECT_EQ(norm0, 1.0f);
}

// Each architecture's real shape, cut to one layer and a small vocabulary: loads and runs.
class SynthShapeTest : public ::testing::TestWithParam<const char*> {};

TEST_P(SynthShapeTest, OneLayerLoadsAndRuns) {
  synth::Options o;
  o.shape = *synth::find_shape(GetParam());
  o.shape.n_layer = 1;
  o.shape.n_vocab = 1024;
  if (o.shape.n_expert > 0) o.shape.n_expert = 16;  // 128 experts: 600M parameters in one layer
  o.type = *synth::find_file_type("Q4_0");  // the fastest to write; mixes: Llama1bQ4KMPlan
  TempPath out(std::string("synth-") + GetParam());
  synth::write_model(o, out.path);
  const Model model = Model::load(out.path);
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.arch_name, o.shape.arch);
  EXPECT_EQ(hp.n_embd, o.shape.n_embd);
  EXPECT_EQ(hp.n_head, o.shape.n_head);
  EXPECT_EQ(hp.n_head_kv, o.shape.n_head_kv);
  EXPECT_EQ(hp.head_dim_k, o.shape.head_size());
  EXPECT_EQ(hp.n_ff, o.shape.n_ff);
  EXPECT_EQ(hp.n_vocab, 1024);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, o.shape.rope_base);
  EXPECT_EQ(model.layers[0].bq.empty(), !o.shape.qkv_bias);
  EXPECT_EQ(model.layers[0].q_norm.empty(), !o.shape.qk_norm);
  EXPECT_EQ(model.layers[0].post_attn_norm.empty(), !o.shape.post_norms);
  EXPECT_EQ(hp.n_expert, o.shape.n_expert);
  EXPECT_EQ(hp.n_swa, o.shape.n_swa);
  EXPECT_EQ(model.output.data == model.tok_embd.data, o.shape.tied);
  expect_forward_runs(model, Tokenizer::from_gguf(model.file()));
}

INSTANTIATE_TEST_SUITE_P(Shapes, SynthShapeTest,
                         ::testing::Values("llama-1b", "tinyllama", "qwen2.5-0.5b", "qwen3-1.7b", "qwen3-30b-a3b",
                                           "gemma3-4b"),
                         [](const auto& p) {
                           std::string s = p.param;
                           for (char& ch : s) {
                             if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
                           }
                           return s;
                         });

// A shape cut down to `layers` layers of small matrices, its architecture's features kept.
synth::Options tiny(const char* shape, int64_t layers) {
  synth::Options o;
  o.shape = *synth::find_shape(shape);
  o.shape.n_layer = layers;
  o.shape.n_vocab = 1024;
  o.shape.n_embd = 256;
  o.shape.head_dim = 64;
  o.shape.n_ff = 512;
  o.type = *synth::find_file_type("Q8_0");
  return o;
}

// Every key of the MoE shape reaches ggufd's hyperparameters; the router is F32.
TEST(Synth, TinyQwen3MoeKeysAndRouter) {
  synth::Options o = tiny("qwen3-30b-a3b", 2);
  o.shape.n_ff_exp = 128;
  TempPath out("synth-tiny-moe");
  synth::write_model(o, out.path);
  const Model model = Model::load(out.path);
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.n_expert, 128);
  EXPECT_EQ(hp.n_expert_used, 8);
  EXPECT_EQ(hp.n_ff_exp, 128);
  EXPECT_TRUE(hp.expert_weights_norm);
  EXPECT_EQ(hp.n_swa, 0);
  EXPECT_EQ(model.layers[1].ffn_gate_inp.type, TensorType::F32);
  EXPECT_EQ(model.layers[1].gate_exps.size(), 128u);
  EXPECT_EQ(model.layers[1].down_exps[127].rows, 256);
  EXPECT_EQ(model.layers[1].down_exps[127].cols, 128);
  EXPECT_TRUE(model.layers[0].ffn_gate.data == nullptr);
  expect_forward_runs(model, Tokenizer::from_gguf(model.file()));
}

// Gemma 3's sliding-window keys: five local layers with their own RoPE base, then a global one
// with linear RoPE scaling.
TEST(Synth, TinyGemma3SlidingWindowKeys) {
  const synth::Options o = tiny("gemma3-4b", 6);
  TempPath out("synth-tiny-gemma3");
  synth::write_model(o, out.path);
  const Model model = Model::load(out.path);
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.n_swa, 1024);
  EXPECT_EQ(hp.swa_layer, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, 1e4f);
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 0.125f);
  EXPECT_FLOAT_EQ(hp.rms_eps, 1e-6f);
  EXPECT_FLOAT_EQ(hp.embd_scale, 16.0f);  // sqrt(256)
  EXPECT_EQ(hp.ffn_act, FfnAct::kGeluTanh);
  EXPECT_EQ(model.output.data, model.tok_embd.data);
  EXPECT_FALSE(model.layers[5].post_ffn_norm.empty());
  expect_forward_runs(model, Tokenizer::from_gguf(model.file()));
}

// The hybrid shapes cut to small widths (tiny()) with their features: a DeltaNet and gated
// attention stack with its MTP block, experts beside a shared expert, gemma4's sliding heads,
// per-layer inputs and shared-KV layers. Every key reaches ggufd's hyperparameters and the pass
// gives finite logits (DeltaNet's ssm_a decays).
synth::Options tiny_hybrid(const char* shape, int64_t layers) {
  synth::Options o = tiny(shape, 1);
  o.shape = synth::with_layers(o.shape, layers);
  o.shape.ssm_state = 32;
  o.shape.ssm_k_heads = 2;
  o.shape.ssm_v_heads = 4;
  if (o.shape.n_rot > 0) o.shape.n_rot = 16;  // (qwen35: a quarter of the head turns)
  o.shape.rope_sections = {3, 3, 2, 0};
  o.shape.head_dim_swa = 32;
  o.shape.n_embd_per_layer = 32;
  if (o.shape.n_expert > 0) {
    o.shape.n_expert = 8;
    o.shape.n_ff_exp = 64;
    o.shape.n_ff_shexp = 64;
    o.shape.n_ff = 0;
  }
  return o;
}

TEST(Synth, TinyQwen35StackAndMtpBlock) {
  for (const char* shape : {"qwen3.5-4b", "qwen3.5-35b-a3b"}) {
    SCOPED_TRACE(shape);
    const synth::Options o = tiny_hybrid(shape, 4);
    TempPath out("synth-tiny-qwen35");
    synth::write_model(o, out.path);
    const Model model = Model::load(out.path);
    const HParams& hp = model.hparams();
    EXPECT_EQ(hp.n_layer, 4);
    EXPECT_EQ(hp.n_layer_nextn, 1);
    EXPECT_EQ(hp.recurrent_layer, (std::vector<uint8_t>{1, 1, 1, 0}));
    EXPECT_EQ(hp.ssm.n_v_heads, 4);
    EXPECT_EQ(hp.ssm.d_state, 32);
    EXPECT_EQ(hp.n_rot, 16);
    EXPECT_EQ(hp.n_expert, o.shape.n_expert);
    EXPECT_EQ(hp.n_ff_shexp, o.shape.n_ff_shexp);
    EXPECT_EQ(model.nextn.size(), 1u);
    EXPECT_EQ(model.output.data == model.tok_embd.data, o.shape.tied);
    expect_forward_runs(model, Tokenizer::from_gguf(model.file()));
  }
}

TEST(Synth, TinyGemma4SharedKvAndPerLayerInputs) {
  const synth::Options o = tiny_hybrid("gemma4-e4b", 12);
  EXPECT_EQ(o.shape.n_kv_shared, 6);
  TempPath out("synth-tiny-gemma4");
  synth::write_model(o, out.path);
  const Model model = Model::load(out.path);
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.swa_layer, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(hp.head_k(0), 32);
  EXPECT_EQ(hp.head_k(5), 64);
  EXPECT_EQ(hp.kv_layer[6], 4);   // sliding: the last sliding layer with K/V
  EXPECT_EQ(hp.kv_layer[11], 5);  // global: the last global one
  EXPECT_EQ(hp.n_embd_per_layer, 32);
  EXPECT_FLOAT_EQ(hp.final_softcap, 30.0f);
  EXPECT_EQ(model.per_layer_model_proj.type, TensorType::F16);
  expect_forward_runs(model, Tokenizer::from_gguf(model.file()));
}

TEST(Synth, VocabFromAnotherFile) {
  TempPath src("synth-src"), out("synth-copy");
  synth::Options o = synth::demo_options();
  o.shape.n_vocab = 777;
  synth::write_model(o, src.path);
  synth::Options c = synth::demo_options();
  c.vocab_from = src.path;
  const synth::Result r = synth::write_model(c, out.path);
  EXPECT_EQ(r.n_vocab, 777);
  const Model model = Model::load(out.path);
  EXPECT_EQ(model.hparams().n_vocab, 777);
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  EXPECT_EQ(tok.decode(tok.encode("Hello, world! 123", false, false)), "Hello, world! 123");
}

}  // namespace
}  // namespace engine
