// lfm2moe (LFM2-8B-A1B, LFM2-24B-A2B): lfm2's stack with experts past the leading dense layers,
// sigmoid-gated and chosen with a selection bias. Loading, what `inspect` says, the routing's
// contract, and the load errors of hostile metadata (each naming the key or tensor). The logits
// against llama.cpp's are golden_test.cpp's (repo/synth-lfm2moe-*).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/support/load_error.h"

namespace engine {
namespace {

using ggufd::test::load_error;

const std::string kModel = std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/synth-lfm2moe-F32.gguf";

// The repository's synth-lfm2moe-F32 (5 layers, layer 0 dense, 8 experts, 2 used) rewritten:
// `kv` may change or drop (return false) each key, `tensor` each tensor (its ne and f32 data). The
// result is written to a temporary file and opened (the File owns its mapping).
using KeyEdit = std::function<bool(const std::string& key, gguf::OwnedValue& v)>;
using TensorEdit = std::function<bool(const std::string& name, std::vector<uint64_t>& ne, std::vector<uint8_t>& data)>;
gguf::File rewritten(const KeyEdit& kv, const TensorEdit& tensor) {
  const gguf::File f = gguf::File::open(kModel);
  gguf::Writer w;
  for (const gguf::KeyValue& e : f.metadata()) {
    gguf::OwnedValue v = gguf::OwnedValue::from(e.value);
    if (kv(std::string(e.key), v)) w.set(std::string(e.key), std::move(v));
  }
  for (const gguf::TensorInfo& t : f.tensors()) {
    std::vector<uint64_t> ne(t.ne.begin(), t.ne.begin() + t.n_dims);
    std::vector<uint8_t> data(t.data.begin(), t.data.end());
    if (tensor(std::string(t.name), ne, data)) w.add_tensor(std::string(t.name), t.type, ne, std::move(data));
  }
  const std::string path = ::testing::TempDir() + "hostile-lfm2moe-" + std::to_string(::getpid()) + ".gguf";
  w.write(path);
  gguf::File out = gguf::File::open(path);
  std::remove(path.c_str());  // (the mapping stays)
  return out;
}
bool keep_key(const std::string&, gguf::OwnedValue&) { return true; }
bool keep_tensor(const std::string&, std::vector<uint64_t>&, std::vector<uint8_t>&) { return true; }
KeyEdit set_key(const std::string& key, gguf::OwnedValue value) {
  return [key, value](const std::string& k, gguf::OwnedValue& v) {
    if (k == key) v = value;
    return true;
  };
}

TEST(Lfm2Moe, HyperparametersAndLayers) {
  const Model m = Model::load(kModel);
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, Arch::kLfm2Moe);
  EXPECT_EQ(hp.recurrent_layer, (std::vector<uint8_t>{1, 1, 0, 1, 0}));
  EXPECT_TRUE(hp.ssm.short_conv);
  EXPECT_EQ(hp.n_layer_dense_lead, 1);
  EXPECT_EQ(hp.n_expert, 8);
  EXPECT_EQ(hp.n_expert_used, 2);
  EXPECT_EQ(hp.expert_gating, ExpertGating::kSigmoid);
  EXPECT_TRUE(hp.expert_weights_norm) << "llama.cpp's lfm2 graph renormalizes always";
  EXPECT_EQ(hp.expert_weights_scale, 0.0f);
  EXPECT_NE(m.layers[0].ffn_gate.data, nullptr);
  EXPECT_TRUE(m.layers[0].gate_exps.empty());
  EXPECT_TRUE(m.layers[0].ffn_exp_probs_b.empty());
  for (size_t il = 1; il < 5; ++il) {
    EXPECT_EQ(m.layers[il].ffn_gate.data, nullptr) << il;
    EXPECT_EQ(m.layers[il].gate_exps.size(), 8u) << il;
    EXPECT_EQ(m.layers[il].ffn_exp_probs_b.size(), 8u) << il;
  }
  std::string described;
  for (const HParamField& f : describe_hparams(hp)) described += f.name + "=" + f.value + ";";
  EXPECT_NE(described.find("expert_gating=sigmoid;"), std::string::npos) << described;
  EXPECT_NE(described.find("leading_dense_block_count=1;"), std::string::npos) << described;
  EXPECT_NE(described.find("selection bias"), std::string::npos) << described;
}

// The route margin is the gap in sigmoid + bias between the last chosen expert and the best one
// not chosen: positive, and below 1 + the spread of the biases; a model without the biases
// routes differently (they matter in this file).
TEST(Lfm2Moe, SelectionBiasChoosesAndMarginIsItsGap) {
  const Model m = Model::load(kModel);
  const Model unbiased = Model::from_file(rewritten(keep_key, [](const std::string& name, std::vector<uint64_t>&, std::vector<uint8_t>& data) {
    if (name.ends_with("exp_probs_b.bias")) std::fill(data.begin(), data.end(), uint8_t{0});
    return true;
  }));
  ThreadPool pool(1);
  std::vector<float> margins[2], logits[2];
  const Model* models[2] = {&m, &unbiased};
  for (int k = 0; k < 2; ++k) {
    KvCache cache(models[k]->hparams(), 64);
    Forward fwd(*models[k], 32);
    Batch b;
    for (int32_t i = 0; i < 24; ++i) b.add(3 + (i * 37) % 500, 0, i, true);
    fwd.eval(b, cache, pool);
    for (int64_t i = 0; i < b.size(); ++i) margins[k].push_back(fwd.route_margin(i));
    logits[k].assign(fwd.logits(0), fwd.logits(0) + b.size() * fwd.n_vocab());
  }
  for (float g : margins[0]) {
    EXPECT_GE(g, 0.0f);
    EXPECT_LT(g, 1.0f);
  }
  EXPECT_NE(margins[0], margins[1]);
  EXPECT_NE(logits[0], logits[1]) << "the selection bias changes no choice";
}

TEST(Lfm2Moe, HostileMetadataIsALoadErrorNamingIt) {
  const auto drop_tensor = [](const std::string& which) {
    return [which](const std::string& name, std::vector<uint64_t>&, std::vector<uint8_t>&) { return name != which; };
  };
  EXPECT_CONTAINS(load_error(rewritten(keep_key, drop_tensor("blk.2.exp_probs_b.bias"))),
                  "tensor 'blk.2.exp_probs_b.bias' is missing");
  const std::string wrong = load_error(rewritten(keep_key, [](const std::string& name, std::vector<uint64_t>& ne,
                                                              std::vector<uint8_t>& data) {
    if (name == "blk.1.exp_probs_b.bias") {  // 7 entries for 8 experts
      ne = {7};
      data.resize(7 * sizeof(float));
    }
    return true;
  }));
  EXPECT_CONTAINS(wrong, "tensor 'blk.1.exp_probs_b.bias' has shape [7], expected [8]");
  EXPECT_CONTAINS(load_error(rewritten(set_key("lfm2moe.leading_dense_block_count", gguf::OwnedValue::u32(6)), keep_tensor)),
                  "lfm2moe.leading_dense_block_count = 6 exceeds block_count (5)");
  EXPECT_CONTAINS(load_error(rewritten(set_key("lfm2moe.leading_dense_block_count", gguf::OwnedValue::u32(2)), keep_tensor)),
                  "tensor 'blk.1.ffn_gate.weight' is missing");
  EXPECT_CONTAINS(load_error(rewritten(set_key("lfm2moe.expert_gating_func", gguf::OwnedValue::u32(4)), keep_tensor)),
                  "lfm2moe.expert_gating_func = 4 is not supported");
  const auto drop_key = [](const std::string& which) {
    return [which](const std::string& k, gguf::OwnedValue&) { return k != which; };
  };
  EXPECT_CONTAINS(load_error(rewritten(drop_key("lfm2moe.expert_gating_func"), keep_tensor)), "lfm2moe.expert_gating_func");
  EXPECT_CONTAINS(load_error(rewritten(drop_key("lfm2moe.expert_feed_forward_length"), keep_tensor)),
                  "lfm2moe.expert_feed_forward_length is missing");
  EXPECT_CONTAINS(load_error(rewritten(drop_key("lfm2moe.feed_forward_length"), keep_tensor)),
                  "feed_forward_length is missing: the leading dense layers need it");
  // without leading dense layers every layer needs experts
  EXPECT_CONTAINS(load_error(rewritten(drop_key("lfm2moe.leading_dense_block_count"), keep_tensor)),
                  "tensor 'blk.0.ffn_gate_inp.weight' is missing");
}

}  // namespace
}  // namespace engine
