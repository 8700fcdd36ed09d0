// Model loading: hyperparameters from metadata, weight views, and refusals that name the problem.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "gguf/writer.h"
#include "tests/support/load_error.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::load_error;

using ggufd::test::shared_path;

// A tiny llama-family model written in memory: embedding 8, 2 heads / 1 kv head, ffn 16, vocab 10.
// `edit` may change the writer before tensors are added (metadata) and `skip` names a tensor to
// leave out.
struct TinyModel {
  std::string arch = "llama";
  std::string skip;
  bool big_endian = false;
  std::function<void(gguf::Writer&)> edit;
  std::vector<uint8_t> bytes;

  gguf::File build() {
    gguf::Writer w(3, big_endian);
    w.set("general.architecture", gguf::OwnedValue::string(arch));
    const std::string p = arch + ".";
    w.set(p + "context_length", gguf::OwnedValue::u32(64));
    w.set(p + "embedding_length", gguf::OwnedValue::u32(8));
    w.set(p + "block_count", gguf::OwnedValue::u32(1));
    w.set(p + "feed_forward_length", gguf::OwnedValue::u32(16));
    w.set(p + "attention.head_count", gguf::OwnedValue::u32(2));
    w.set(p + "attention.head_count_kv", gguf::OwnedValue::u32(1));
    w.set(p + "attention.layer_norm_rms_epsilon", gguf::OwnedValue::f32(1e-5f));
    if (edit) edit(w);
    auto add = [&](const std::string& name, std::vector<uint64_t> ne) {
      if (name == skip) return;
      uint64_t n = 1;
      for (uint64_t d : ne) n *= d;
      w.add_tensor(name, gguf::TensorType::F32, ne, std::vector<uint8_t>(n * 4, 0));
    };
    add("token_embd.weight", {8, 10});
    add("output_norm.weight", {8});
    add("blk.0.attn_norm.weight", {8});
    add("blk.0.attn_q.weight", {8, 8});
    add("blk.0.attn_k.weight", {8, 4});
    add("blk.0.attn_v.weight", {8, 4});
    add("blk.0.attn_output.weight", {8, 8});
    if (arch == "qwen2") {
      add("blk.0.attn_q.bias", {8});
      add("blk.0.attn_k.bias", {4});
      add("blk.0.attn_v.bias", {4});
    }
    if (arch == "qwen3") {
      add("blk.0.attn_q_norm.weight", {4});
      add("blk.0.attn_k_norm.weight", {4});
    }
    add("blk.0.ffn_norm.weight", {8});
    add("blk.0.ffn_gate.weight", {8, 16});
    add("blk.0.ffn_up.weight", {8, 16});
    add("blk.0.ffn_down.weight", {16, 8});
    bytes = w.to_bytes();
    return gguf::File::parse(bytes, "tiny.gguf");
  }
};

TEST(Model, TinyLlamaLoadsWithDefaults) {
  TinyModel m;
  const Model model = Model::from_file(m.build());
  const HParams& hp = model.hparams();
  EXPECT_EQ(hp.arch, Arch::kLlama);
  EXPECT_EQ(hp.n_vocab, 10);
  EXPECT_EQ(hp.head_dim_k, 4);
  EXPECT_EQ(hp.head_dim_v, 4);
  EXPECT_EQ(hp.n_rot, 4);
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 10000.0f);
  EXPECT_FLOAT_EQ(hp.rope_freq_scale, 1.0f);
  EXPECT_EQ(hp.rope_style, RopeStyle::kNormal);
  EXPECT_EQ(model.output.data, model.tok_embd.data) << "no output.weight: tied embeddings";
  EXPECT_TRUE(model.layers[0].bq.empty());
}

TEST(Model, RopeScalingKeys) {
  TinyModel m;
  m.edit = [](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::OwnedValue::string("linear"));
    w.set("llama.rope.scaling.factor", gguf::OwnedValue::f32(4.0f));
  };
  EXPECT_FLOAT_EQ(Model::from_file(m.build()).hparams().rope_freq_scale, 0.25f);

  TinyModel old;
  old.edit = [](gguf::Writer& w) { w.set("llama.rope.scale_linear", gguf::OwnedValue::f32(2.0f)); };
  EXPECT_FLOAT_EQ(Model::from_file(old.build()).hparams().rope_freq_scale, 0.5f);

  // YaRN: factor 4, so the kernel's 1 + 0.1 ln 4 is cancelled by the attention factor (1 here).
  TinyModel yarn;
  yarn.edit = [](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::OwnedValue::string("yarn"));
    w.set("llama.rope.scaling.factor", gguf::OwnedValue::f32(4.0f));
    w.set("llama.rope.scaling.original_context_length", gguf::OwnedValue::u32(256));
  };
  const HParams y = Model::from_file(yarn.build()).hparams();
  EXPECT_FLOAT_EQ(y.rope_freq_scale, 0.25f);
  EXPECT_EQ(y.yarn_ext_factor, 1.0f);
  EXPECT_EQ(y.n_ctx_orig, 256);
  EXPECT_NEAR(y.rope_attn_factor, 1.0f, 1e-6f);

  TinyModel dynamic;
  dynamic.edit = [](gguf::Writer& w) {
    w.set("llama.rope.scaling.type", gguf::OwnedValue::string("dynamic"));
  };
  EXPECT_CONTAINS(load_error(dynamic.build()), "rope scaling type 'dynamic'");
}

TEST(Model, RefusesUnsupportedArchitecture) {
  TinyModel m;
  m.arch = "mamba";
  EXPECT_CONTAINS(load_error(m.build()), "architecture 'mamba' is not supported");
}

TEST(Model, RefusesMissingTensorByName) {
  TinyModel m;
  m.skip = "blk.0.ffn_up.weight";
  EXPECT_CONTAINS(load_error(m.build()), "tensor 'blk.0.ffn_up.weight' is missing");

  TinyModel q2;
  q2.arch = "qwen2";
  q2.skip = "blk.0.attn_k.bias";
  EXPECT_CONTAINS(load_error(q2.build()), "tensor 'blk.0.attn_k.bias' is missing");

  TinyModel q3;
  q3.arch = "qwen3";
  q3.skip = "blk.0.attn_q_norm.weight";
  EXPECT_CONTAINS(load_error(q3.build()), "tensor 'blk.0.attn_q_norm.weight' is missing");
}

TEST(Model, RefusesIllShapedTensor) {
  TinyModel m;
  m.arch = "qwen2";
  m.edit = [](gguf::Writer& w) {  // head_count_kv 2 but K is (4, 8): the shapes disagree
    w.set("qwen2.attention.head_count_kv", gguf::OwnedValue::u32(2));
  };
  EXPECT_CONTAINS(load_error(m.build()), "tensor 'blk.0.attn_k.weight' has shape [8, 4], expected [8, 8]");
}

// attention.head_count_kv may be given per layer; a 0 (a layer without attention) is lfm2's alone,
// and the other layers must agree.
TEST(Model, PerLayerKvHeadsAreChecked) {
  auto with_kv = [](std::vector<int32_t> heads) {
    TinyModel m;
    m.edit = [heads](gguf::Writer& w) { w.set("llama.attention.head_count_kv", gguf::OwnedValue::i32_array(heads)); };
    return m;
  };
  TinyModel one = with_kv({1});
  EXPECT_EQ(Model::from_file(one.build()).hparams().n_head_kv, 1);
  TinyModel zero = with_kv({0});
  EXPECT_CONTAINS(load_error(zero.build()), "llama.attention.head_count_kv entry 0 is 0: layers without attention are supported for lfm2 and lfm2moe only");
  TinyModel wrong_size = with_kv({1, 1});
  EXPECT_CONTAINS(load_error(wrong_size.build()), "llama.attention.head_count_kv has 2 entries, expected 1 (one per layer)");
  TinyModel too_many = with_kv({3});
  EXPECT_CONTAINS(load_error(too_many.build()), "llama.attention.head_count_kv entry 0 = 3 is out of range [0, 2]");
}

TEST(Model, RefusesBigEndianFiles) {
  TinyModel m;
  m.big_endian = true;
  EXPECT_CONTAINS(load_error(m.build()), "big-endian");
}

TEST(Model, Stories260KHyperparameters) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const Model m = Model::load(shared_path("models/stories260K.gguf"));
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch_name, "llama");
  EXPECT_EQ(hp.n_layer, 5);
  EXPECT_EQ(hp.n_embd, 64);
  EXPECT_EQ(hp.n_head, 8);
  EXPECT_EQ(hp.n_head_kv, 4);
  EXPECT_EQ(hp.n_ff, 172);
  EXPECT_EQ(hp.n_vocab, 512);
  EXPECT_EQ(hp.n_ctx_train, 2048);
  EXPECT_EQ(hp.n_rot, 8);
  EXPECT_NEAR(hp.rms_eps, 1e-5f, 1e-9f);
  EXPECT_NE(m.output.data, m.tok_embd.data);
  EXPECT_EQ(m.layers.size(), 5u);
}

TEST(Model, Qwen2AndQwen3Specifics) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-qwen2-Q8_0.gguf");
  GGUFD_REQUIRE_SHARED("models/synth/synth-qwen3-Q8_0.gguf");
  const Model q2 = Model::load(shared_path("models/synth/synth-qwen2-Q8_0.gguf"));
  EXPECT_EQ(q2.hparams().arch, Arch::kQwen2);
  EXPECT_EQ(q2.hparams().rope_style, RopeStyle::kNeox);
  EXPECT_FLOAT_EQ(q2.hparams().rope_freq_base, 1e6f);
  EXPECT_EQ(q2.output.data, q2.tok_embd.data);
  EXPECT_EQ(q2.layers[0].bk.size(), 128u);

  const Model q3 = Model::load(shared_path("models/synth/synth-qwen3-Q8_0.gguf"));
  EXPECT_EQ(q3.hparams().head_dim_k, 128);
  EXPECT_EQ(q3.hparams().q_dim(), 512);
  EXPECT_EQ(q3.layers[1].q_norm.size(), 128u);
  EXPECT_EQ(q3.layers[1].wo.cols, 512);
}

}  // namespace
}  // namespace engine

namespace engine {
namespace {

// page_in reads the file bytes matmul reads: every matrix but the embedding, minus packed rows.
uint64_t unpacked_matmul_bytes(const Model& m) {
  uint64_t n = 0;
  for (const Matrix* w : m.matmul_weights()) n += static_cast<uint64_t>(w->rows - w->packed_rows) * w->row_bytes;
  return n;
}

TEST(Model, PageInReportsProgressUpToTheBytesMatmulReadsFromTheFile) {
  for (const char* path : {"models/stories260K.gguf", "models/synth/synth-llama-Q4_0.gguf"}) {
    GGUFD_REQUIRE_SHARED(path);
    const Model m = Model::load(ggufd::test::shared_path(path));
    EXPECT_EQ(m.weight_bytes(), m.file().file_size() - m.file().data_offset());
    const uint64_t expected = unpacked_matmul_bytes(m);
    EXPECT_LT(expected + m.packed_bytes(), m.weight_bytes()) << path;  // the embedding is left out
    std::vector<std::pair<uint64_t, uint64_t>> calls;
    m.page_in([&](uint64_t done, uint64_t total) { calls.emplace_back(done, total); });
    ASSERT_FALSE(calls.empty());
    EXPECT_EQ(calls.back(), std::make_pair(expected, expected)) << path;
    for (size_t i = 1; i < calls.size(); ++i) EXPECT_LE(calls[i - 1].first, calls[i].first);
  }
}

}  // namespace
}  // namespace engine

namespace engine {
namespace {

Model load_synth(const std::string& name, bool repack = true) {
  return Model::load(ggufd::test::shared_path("models/synth/" + name + ".gguf"), repack);
}

// The hyperparameters each architecture's keys (and llama.cpp's defaults) give, per
// ../shared/golden/README.md's description of the synthetic models.
TEST(Model, ArchitectureSpecifics) {
  for (const char* f : {"gemma3-Q8_0", "gemma2-Q8_0", "qwen3moe-Q8_0", "phi3-Q8_0", "granite-Q8_0", "smollm3-Q8_0"}) {
    GGUFD_REQUIRE_SHARED(std::string("models/synth/synth-") + f + ".gguf");
  }
  const Model g3 = load_synth("synth-gemma3-Q8_0");
  EXPECT_EQ(g3.hparams().swa_layer, (std::vector<uint8_t>{1, 1, 1, 1, 1, 0}));
  EXPECT_EQ(g3.hparams().n_swa, 8);
  EXPECT_FLOAT_EQ(g3.hparams().rope_freq_base_swa, 1e4f);
  EXPECT_FLOAT_EQ(g3.hparams().embd_scale, 16.0f);   // sqrt(256)
  EXPECT_FLOAT_EQ(g3.hparams().q_scale, 0.125f);     // 1/sqrt(64), scores then unscaled
  EXPECT_FLOAT_EQ(g3.hparams().kq_scale, 1.0f);
  EXPECT_EQ(g3.hparams().ffn_act, FfnAct::kGeluTanh);
  EXPECT_EQ(g3.layers[0].post_ffn_norm.size(), 256u);

  const Model g2 = load_synth("synth-gemma2-Q8_0");
  EXPECT_EQ(g2.hparams().swa_layer, (std::vector<uint8_t>{1, 0, 1, 0}));
  EXPECT_FLOAT_EQ(g2.hparams().attn_softcap, 50.0f);
  EXPECT_FLOAT_EQ(g2.hparams().final_softcap, 30.0f);

  const Model moe = load_synth("synth-qwen3moe-Q8_0");
  EXPECT_EQ(moe.hparams().n_expert, 8);
  EXPECT_EQ(moe.hparams().n_expert_used, 2);
  EXPECT_EQ(moe.hparams().n_ff_exp, 128);
  EXPECT_TRUE(moe.hparams().expert_weights_norm);
  ASSERT_EQ(moe.layers[1].down_exps.size(), 8u);
  EXPECT_EQ(moe.layers[1].down_exps[7].rows, 256);
  EXPECT_EQ(moe.layers[1].down_exps[7].cols, 128);
  EXPECT_EQ(moe.layers[1].ffn_down.data, nullptr);  // no dense FFN

  const Model phi = load_synth("synth-phi3-Q8_0", /*repack=*/false);
  // Q, K, V and gate, up are consecutive row ranges of the fused tensors.
  EXPECT_EQ(static_cast<const uint8_t*>(phi.layers[0].wk.data),
            static_cast<const uint8_t*>(phi.layers[0].wq.data) + 256 * phi.layers[0].wq.row_bytes);
  EXPECT_EQ(phi.layers[0].ffn_up.rows, 512);
  EXPECT_EQ(static_cast<const uint8_t*>(phi.layers[0].ffn_up.data),
            static_cast<const uint8_t*>(phi.layers[0].ffn_gate.data) + 512 * phi.layers[0].ffn_gate.row_bytes);

  const Model gr = load_synth("synth-granite-Q8_0");
  EXPECT_FLOAT_EQ(gr.hparams().embd_scale, 12.0f);
  EXPECT_FLOAT_EQ(gr.hparams().residual_scale, 0.22f);
  EXPECT_FLOAT_EQ(gr.hparams().kq_scale, 0.015625f);
  EXPECT_FLOAT_EQ(gr.hparams().logit_scale, 8.0f);

  const Model sm = load_synth("synth-smollm3-Q8_0");
  EXPECT_EQ(sm.hparams().rope_layer, (std::vector<uint8_t>{1, 1, 1, 0}));
}

// gemma4: global layers 3 and 5 (head 64), sliding ones head 32; layers 4 and 5 keep no K/V and
// read layer 2's and 3's; the MoE file adds experts beside the dense FFN.
TEST(Model, Gemma4Specifics) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-gemma4-Q8_0.gguf");
  GGUFD_REQUIRE_SHARED("models/synth/synth-gemma4moe-F32.gguf");
  const Model g = load_synth("synth-gemma4-Q8_0");
  const HParams& hp = g.hparams();
  EXPECT_EQ(hp.swa_layer, (std::vector<uint8_t>{1, 1, 1, 0, 1, 0}));
  EXPECT_EQ(hp.n_swa, 8);
  EXPECT_EQ(hp.head_k(0), 32);
  EXPECT_EQ(hp.head_k(3), 64);
  EXPECT_EQ(hp.rot(0), 32);
  EXPECT_EQ(hp.rot(3), 64);
  EXPECT_EQ(hp.kv_layer, (std::vector<int32_t>{0, 1, 2, 3, 2, 3}));
  EXPECT_FALSE(hp.own_kv(4));
  EXPECT_FLOAT_EQ(hp.rope_freq_base, 1e6f);
  EXPECT_FLOAT_EQ(hp.rope_freq_base_swa, 1e4f);
  EXPECT_FLOAT_EQ(hp.kq_scale, 1.0f);
  EXPECT_FLOAT_EQ(hp.q_scale, 1.0f);
  EXPECT_FLOAT_EQ(hp.embd_scale, 16.0f);
  EXPECT_FLOAT_EQ(hp.final_softcap, 30.0f);
  EXPECT_EQ(hp.n_embd_per_layer, 32);
  EXPECT_EQ(g.layers[4].wk.data, nullptr);
  EXPECT_EQ(g.layers[5].wq.rows, 256);
  EXPECT_EQ(g.rope_freqs.size(), 32u);
  // Rows for layers 0-3 only: 3 sliding (2 heads of 32) and 1 global (2 heads of 64), f16 K and V.
  KvCache cache(hp, 16);
  EXPECT_EQ(cache.cell_bytes(), 2u * 2 * (3 * 64 + 128));
  EXPECT_EQ(cache.k_row(4, 5), cache.k_row(2, 5));
  EXPECT_EQ(cache.v_row(5, 7), cache.v_row(3, 7));
  bool described = false;
  for (const HParamField& f : describe_hparams(hp)) described |= f.name == "shared_kv_layers" && f.value == "4 <- 2, 5 <- 3";
  EXPECT_TRUE(described);

  const Model moe = load_synth("synth-gemma4moe-F32");
  EXPECT_EQ(moe.hparams().n_expert, 8);
  EXPECT_TRUE(moe.hparams().experts_beside_ffn);
  EXPECT_NE(moe.layers[0].ffn_gate.data, nullptr);
  EXPECT_EQ(moe.layers[0].gate_exps.size(), 8u);
  EXPECT_EQ(moe.layers[0].post_ffn_norm_2.size(), 128u);
  EXPECT_EQ(moe.hparams().kv_layer, (std::vector<int32_t>{0, 1, 0, 1}));
}

// Every matrix of every architecture is a real view (a MoE layer's absent dense FFN is not
// listed), and page_in reads them all, packed or not.
TEST(Model, EveryArchitecturePagesIn) {
  for (const char* name : {"synth-gemma3-Q8_0", "synth-gemma2-Q8_0", "synth-qwen3moe-Q4_K_M",
                           "synth-phi3-Q8_0", "synth-granite-Q8_0", "synth-smollm3-Q8_0", "synth-gemma4moe-Q4_K_M"}) {
    GGUFD_REQUIRE_SHARED(std::string("models/synth/") + name + ".gguf");
    for (bool repack : {true, false}) {
      const Model m = load_synth(name, repack);
      for (const Matrix* w : m.matmul_weights()) ASSERT_NE(w->data, nullptr) << name;
      uint64_t total = 0;
      m.page_in([&](uint64_t, uint64_t t) { total = t; });
      EXPECT_EQ(total, unpacked_matmul_bytes(m)) << name << (repack ? " packed" : "");
    }
  }
}

TEST(Model, RefusesExpertsWhereTheArchitectureHasNone) {
  TinyModel m;
  m.arch = "qwen3moe";
  EXPECT_CONTAINS(load_error(m.build()), "expert_count is missing");
}

}  // namespace
}  // namespace engine

namespace engine {
namespace {

// YaRN's correction range and angles, against values computed by hand from ggml's formulas:
// n_rot 64, original context 256, base 1e4 -> pairs [0, 13]; pair 0 keeps its unscaled angle,
// pairs from 13 on are interpolated (x freq_scale), magnitude 1 + 0.1 ln 4.
TEST(Rope, YarnRampsBetweenExtrapolationAndInterpolation) {
  RopeParams rp;
  rp.n_rot = 64;
  rp.freq_base = 10000.0f;
  rp.freq_scale = 0.25f;
  rp.ext_factor = 1.0f;
  yarn_corr_dims(rp, 256, 32.0f, 1.0f);
  EXPECT_EQ(rp.corr_low, 0.0f);
  EXPECT_EQ(rp.corr_high, 13.0f);
  std::vector<float> cs(64);
  rope_angles(cs.data(), 100, rp);
  const float m = 1.0f + 0.1f * std::log(4.0f);
  EXPECT_NEAR(cs[0], std::cos(100.0f) * m, 1e-5f);   // pair 0: extrapolated (theta = pos)
  const float theta20 = 100.0f * std::pow(10000.0f, -40.0f / 64.0f);
  EXPECT_NEAR(cs[2 * 20 + 1], std::sin(0.25f * theta20) * m, 1e-5f);  // pair 20: interpolated
}

}  // namespace
}  // namespace engine
