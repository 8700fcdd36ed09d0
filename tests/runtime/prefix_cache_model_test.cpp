// Prefix sharing on real models (../shared): a sequence that attaches another's cached blocks gets
// exactly the logits, tokens and logprobs it gets computing everything itself; models whose
// sliding-window layers keep a ring share nothing.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "engine/model/batch.h"
#include "engine/model/model.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/prefix_cache.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "tests/runtime/model_eval.h"
#include "tests/runtime/scheduler_fakes.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;
using engine::test::RecordingSink;
using engine::test::eval_tokens;
using engine::test::spread_tokens;

constexpr int32_t kBlock = PrefixCache::kBlockTokens;

struct Case {
  std::string file;
  int64_t n_ctx;
  int64_t max_batch;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.file; }

class SharedBlocks : public ::testing::TestWithParam<Case> {};

// Q shares 70 tokens with P: attaching P's first two blocks and computing Q's other 36 tokens gives
// Q's logits bit for bit, though they are computed in other batches and chunks.
TEST_P(SharedBlocks, GiveTheLogitsOfComputingEverything) {
  const auto& [file, n_ctx, max_batch] = GetParam();
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const int64_t V = model.hparams().n_vocab;
  const std::vector<int32_t> p = spread_tokens(100, V);
  std::vector<int32_t> q(p.begin(), p.begin() + 70);
  const std::vector<int32_t> tail = spread_tokens(31, V, 5);
  q.insert(q.end(), tail.begin() + 1, tail.end());

  ModelEvaluator shared(model, n_ctx, 2, KvType::kF16, max_batch, ComputeShare::make(2), 1 << 20);
  ASSERT_EQ(shared.cache_use().window_cells, 0) << "every layer in the full pool";
  ASSERT_EQ(shared.prefix_block(), kBlock);
  eval_tokens(shared, 0, p, 0);
  shared.publish_prefix(0, p);
  ASSERT_EQ(shared.share_prefix(1, q, 0, static_cast<int32_t>(q.size()) - 1), 2 * kBlock);
  const std::vector<float> got = eval_tokens(shared, 1, q, 2 * kBlock);
  const BatchEvaluator::CacheUse use = shared.cache_use();
  EXPECT_EQ(use.prefix.hit_tokens, 2 * kBlock);
  EXPECT_EQ(use.cells_used, 100 + 36) << "q's first 64 positions are p's cells";
  EXPECT_GT(use.prefix.reserved_cells, 0);
  EXPECT_EQ(use.cells_total, 2 * n_ctx + use.prefix.reserved_cells);

  ModelEvaluator plain(model, n_ctx, 2, KvType::kF16, max_batch, ComputeShare::make(2), 0);
  EXPECT_EQ(plain.prefix_block(), 0);
  std::vector<float> want = eval_tokens(plain, 0, q, 0);
  want.erase(want.begin(), want.begin() + 2 * kBlock * V);
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "logits differ at " << (std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin());
}

// A dense llama (max_batch 48: chunks of 48), a quantized one, a mixture of experts, and gemma3,
// whose sliding layers stay in the full pool when the ring would not be smaller (2 x 128 cells
// against 2 x (window 8 - 1 + 64) + 160).
INSTANTIATE_TEST_SUITE_P(Models, SharedBlocks,
                         ::testing::Values(Case{"models/stories260K.gguf", 256, 48},
                                           Case{"models/synth/synth-llama-Q8_0.gguf", 256, 48},
                                           Case{"models/synth/synth-qwen3moe-Q8_0.gguf", 256, 48},
                                           Case{"models/synth/synth-gemma3-Q8_0.gguf", 128, 160},
                                           Case{"models/synth/synth-gemma4-Q8_0.gguf", 128, 160},
                                           // hybrid: the recurrent state resumes from the snapshot at block 2's end
                                           Case{"models/synth/synth-qwen35-Q8_0.gguf", 256, 48},
                                           Case{"models/synth/synth-qwen35moe-Q8_0.gguf", 256, 48}),
                         [](const auto& p) {
                           std::string s = p.param.file.substr(p.param.file.find_last_of('/') + 1);
                           s = s.substr(0, s.find('.'));
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// A ring holds only each sequence's last positions: nothing can be attached from it.
TEST(SharedBlocks, NotWithASlidingWindowRing) {
  const std::string file = "models/synth/synth-gemma3-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  ModelEvaluator ev(model, 4096, 2, KvType::kF16, 48, ComputeShare::make(2), 1 << 20);
  ASSERT_GT(ev.cache_use().window_cells, 0);
  EXPECT_EQ(ev.prefix_block(), 0);
  EXPECT_EQ(ev.cache_use().prefix.block_tokens, 0);
  EXPECT_EQ(ev.cache_use().cells_total, 2 * 4096) << "no cells beyond the slots'";
  const std::vector<int32_t> p = spread_tokens(100, model.hparams().n_vocab);
  eval_tokens(ev, 0, p, 0);
  ev.publish_prefix(0, p);
  EXPECT_EQ(ev.share_prefix(1, p, 0, 99), 0);
}

// Through the scheduler: request kBlock shares 70 prompt tokens with A, which ran before on the same
// slot, since overwritten by another request. With the prefix cache kBlock starts after A's first two
// blocks; without it, after the one token the other request left. Tokens and logprobs agree.
// A llama, and a hybrid stack (its recurrent state restored from a snapshot at block 2's end).
class SchedulerPrefix : public ::testing::TestWithParam<std::string> {};

TEST_P(SchedulerPrefix, OutputIsTheSameWithAndWithout) {
  const std::string file = GetParam();
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  const int64_t V = model.hparams().n_vocab;
  const std::vector<int32_t> a = spread_tokens(100, V);
  std::vector<int32_t> b(a.begin(), a.begin() + 70);
  const std::vector<int32_t> tail = spread_tokens(11, V, 3);
  b.insert(b.end(), tail.begin() + 1, tail.end());

  auto run = [&](int64_t prefix_cache_bytes) {
    SchedulerOptions opt{.n_slots = 2, .n_ctx = 256, .max_queue = 4, .prefill_chunk = 24, .n_threads = 2};
    opt.prefix_cache_bytes = prefix_cache_bytes;
    Scheduler s(model, tok, opt);
    auto submit = [&](std::vector<int32_t> prompt, int64_t max_tokens) {
      auto sink = std::make_shared<RecordingSink>();
      GenerationRequest r;
      r.prompt = std::move(prompt);
      r.sampling.temperature = 0.0f;
      r.sampling.logprobs = true;
      r.sampling.n_logprobs = 3;
      r.max_tokens = max_tokens;
      r.ignore_eos = true;  // (random weights: an end token may come early)
      r.sink = sink;
      EXPECT_EQ(s.submit(std::move(r)), SubmitStatus::kAccepted);
      EXPECT_EQ(sink->wait(), FinishReason::kLength) << sink->error();
      return sink;
    };
    submit(a, 8);
    submit({a[0], a[5], a[3]}, 2);  // the same slot (it shares a's first token), now holding 1 of a's
    return submit(b, 16);
  };
  const auto with = run(1 << 20), without = run(0);
  EXPECT_EQ(with->usage().cached_tokens, 2 * kBlock);
  EXPECT_EQ(without->usage().cached_tokens, 1);
  const std::vector<TokenEvent> x = with->events(), y = without->events();
  ASSERT_EQ(x.size(), y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(x[i].token, y[i].token) << i;
    EXPECT_EQ(x[i].text, y[i].text) << i;
    EXPECT_EQ(x[i].logprob, y[i].logprob) << i;
    ASSERT_EQ(x[i].top.size(), y[i].top.size()) << i;
    for (size_t k = 0; k < x[i].top.size(); ++k) {
      EXPECT_EQ(x[i].top[k].id, y[i].top[k].id) << i;
      EXPECT_EQ(x[i].top[k].logprob, y[i].top[k].logprob) << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SchedulerPrefix,
                         ::testing::Values("models/stories260K.gguf", "models/synth/synth-qwen35-Q8_0.gguf"),
                         [](const auto& p) {
                           std::string s = p.param.substr(p.param.find_last_of('/') + 1);
                           s = s.substr(0, s.find('.'));
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace engine
