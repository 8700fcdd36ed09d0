// The model's attention (engine/model/attention.h) over a longer context than the golden prompts:
// a long prompt in one chunk (tiles of 64 rows) against the same prompt in short chunks (13
// tokens: chunks straddle the F16 cache's switch from f16 to f32 accumulation at position 128),
// and decode steps whose keys are split across threads (partial states merged) against one
// thread, for every cache type.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

constexpr int32_t kPrompt = 300;  // > 2 x 4 x kFlashKeys keys: a decode step splits in two runs
constexpr int32_t kDecode = 4;

// Logits (kPrompt + kDecode, n_vocab) of one sequence: the prompt in chunks of `chunk` tokens,
// then kDecode one-token steps.
std::vector<float> run(const Model& model, KvType kv_type, int64_t chunk, ThreadPool& pool) {
  const HParams& hp = model.hparams();
  KvCache cache(hp, kPrompt + kDecode, kv_type);
  Forward fwd(model, chunk);
  std::vector<float> out;
  Batch b;
  for (int32_t p = 0; p < kPrompt + kDecode; ++p) {
    b.add(static_cast<int32_t>((p * 7919 + 13) % hp.n_vocab), 0, p, true);
    if (p + 1 < kPrompt && static_cast<int64_t>(b.size()) < chunk) continue;
    fwd.eval(b, cache, pool);
    out.insert(out.end(), fwd.logits(0), fwd.logits(0) + b.size() * hp.n_vocab);
    b.clear();
  }
  return out;
}

// max |a - b| / (abs_tol + rel_tol |b|) over all logits: <= 1 passes.
double worst(const std::vector<float>& a, const std::vector<float>& b, double abs_tol, double rel_tol) {
  double w = 0.0;
  for (size_t i = 0; i < a.size(); ++i) w = std::max(w, std::abs(a[i] - b[i]) / (abs_tol + rel_tol * std::abs(b[i])));
  return w;
}

class LongContext : public ::testing::TestWithParam<KvType> {};

TEST_P(LongContext, ChunkingAndSplitKeysDoNotChangeLogits) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-llama-F32.gguf");
  const Model model = Model::load(shared_path("models/synth/synth-llama-F32.gguf"));
  const KvType kv_type = GetParam();
  ThreadPool one(1);
  // More threads than K/V heads: each decode step's keys are cut into runs on different threads.
  ThreadPool many(static_cast<int>(model.hparams().n_head_kv) + 1);
  const std::vector<float> whole = run(model, kv_type, 512, one);
  ASSERT_EQ(whole.size(), static_cast<size_t>((kPrompt + kDecode) * model.hparams().n_vocab));
  const std::vector<float> split = run(model, kv_type, 512, many);
  const std::vector<float> chunked = run(model, kv_type, 13, one);
  // A prompt row sees the same key blocks whatever chunk it is in, with the same accumulation.
  EXPECT_LE(worst(chunked, whole, 1e-4, 1e-4), 1.0);
  // The decode steps (positions >= 128) accumulate in f32 with every cache: split runs only
  // regroup their sums.
  EXPECT_LE(worst(split, whole, 1e-5, 1e-5), 1.0);
  if (kv_type != KvType::kF16) return;
  // An F16 cache rounds K, V and (below position 128) q and O after every key to f16; over 300
  // positions this random model amplifies that to about the golden tests' float tolerance
  // (0.01 + 0.004 |logit|) against an F32 cache. Judged against the F32 cache with twice that
  // tolerance: a wrong merge, mask or switch of accumulation is far beyond it.
  const std::vector<float> f32 = run(model, KvType::kF32, 512, one);
  EXPECT_LE(worst(whole, f32, 0.02, 0.008), 1.0);
}

INSTANTIATE_TEST_SUITE_P(Attention, LongContext, ::testing::Values(KvType::kF16, KvType::kF32, KvType::kQ8_0),
                         [](const ::testing::TestParamInfo<KvType>& p) { return kv_type_name(p.param); });

}  // namespace
}  // namespace engine
