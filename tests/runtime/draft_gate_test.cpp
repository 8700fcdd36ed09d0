// --spec auto's draft gate (DraftGate): a sequence whose drafts are not accepted stops drafting
// after its warm-up, probes again after a pause that doubles up to its bound, and resumes when a
// probe's drafts are accepted; one whose drafts are accepted drafts on. Then the scheduler on its
// fake model with the gate: wrong drafts pause (and the output is plain decoding's), right drafts
// never do, and drafts that turn right come back.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "engine/runtime/speculation.h"
#include "tests/runtime/scheduler_fakes.h"

namespace engine {
namespace {

using namespace engine::test;

const DraftGateParams kParams;  // the defaults, which --spec auto uses

// Steps of one draft each, none accepted, until the gate pauses: how many it took.
int drafted_until_paused(DraftGate& g, int limit = 1000) {
  for (int i = 1; i <= limit; ++i) {
    EXPECT_TRUE(g.drafting());
    g.drafted(1, 0);
    if (g.paused()) return i;
  }
  return -1;
}

// Plain steps until the gate lets a probe draft: how many it took.
int plain_until_probe(DraftGate& g, int limit = 1000) {
  for (int i = 1; i <= limit; ++i) {
    EXPECT_TRUE(g.paused());
    g.plain_step();
    if (g.drafting()) return i;
  }
  return -1;
}

TEST(DraftGate, NothingAcceptedPausesAfterTheWarmUpAndProbesEverLessOften) {
  DraftGate g(kParams);
  ASSERT_TRUE(g.drafting());
  g.drafted(3, 0);  // the first step drafts the slot's starting length
  EXPECT_EQ(drafted_until_paused(g), kParams.warmup - 1);
  EXPECT_EQ(g.rate(), 0);
  int pause = kParams.probe_after;
  for (int probe = 0; probe < 6; ++probe) {
    EXPECT_EQ(plain_until_probe(g), pause) << "probe " << probe;
    g.drafted(1, 0);  // the probe fails: a longer pause
    EXPECT_TRUE(g.paused());
    pause = std::min(2 * pause, kParams.probe_after_max);
  }
  EXPECT_EQ(pause, kParams.probe_after_max) << "the pause is bounded";
}

TEST(DraftGate, AcceptedDraftsKeepDrafting) {
  DraftGate g(kParams);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(g.drafting()) << "step " << i;
    g.drafted(4, 3);  // 0.75 of the drafts accepted
  }
  EXPECT_NEAR(g.rate(), 0.75, 1e-9);
  // Over the break-even (0.55) it drafts; under, it does not.
  DraftGate over(kParams);
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(over.drafting()) << "step " << i;
    over.drafted(20, 12);
  }
  DraftGate under(kParams);
  for (int i = 0; i < kParams.warmup; ++i) under.drafted(20, 10);
  EXPECT_TRUE(under.paused());
}

TEST(DraftGate, ASuccessfulProbeResumesWithAFreshWarmUp) {
  DraftGate g(kParams);
  drafted_until_paused(g);
  plain_until_probe(g);
  g.drafted(1, 1);  // the text turned predictable
  EXPECT_TRUE(g.drafting());
  EXPECT_EQ(g.rate(), 1);
  for (int i = 0; i < 100; ++i) {
    ASSERT_TRUE(g.drafting());
    g.drafted(2, 2);
  }
  // Unpredictable again: it pauses once the recent rate falls under the break-even (the decay
  // forgets the good run), and the next pause is the first pause's length again.
  const int steps = drafted_until_paused(g);
  EXPECT_GT(steps, 1);
  EXPECT_LT(steps, 20);
  EXPECT_EQ(plain_until_probe(g), kParams.probe_after);
}

TEST(DraftGate, AResumeAfterLongPausesStartsTheirLengthOver) {
  DraftGate g(kParams);
  drafted_until_paused(g);
  for (int probe = 0; probe < 4; ++probe) {
    plain_until_probe(g);
    g.drafted(1, 0);
  }
  plain_until_probe(g);
  g.drafted(3, 2);
  EXPECT_TRUE(g.drafting());
  EXPECT_EQ(drafted_until_paused(g), kParams.warmup - 1);  // the probe was the warm-up's first step
  EXPECT_EQ(plain_until_probe(g), kParams.probe_after);
}

// Proposes after each token either the fake's greedy continuation (right) or a token greedy
// decoding never picks there (wrong), as `right(n)` says for a sequence of n tokens.
class SwitchDrafter : public DraftSource {
 public:
  explicit SwitchDrafter(std::function<bool(size_t)> right) : right_(std::move(right)) {}
  void propose(std::span<DraftSlot> slots) override {
    for (DraftSlot& s : slots) {
      const bool right = right_(s.tokens.size());
      for (int32_t i = 1; i <= s.max; ++i) s.draft.push_back((s.tokens.back() + (right ? i : 5)) % kLetters);
    }
  }

 private:
  std::function<bool(size_t)> right_;
};

struct GateRun {
  std::vector<std::string> texts;
  SpecStats spec;
};

// Two greedy requests of 300 tokens on the fake, drafted by `drafter` (null: plain decoding).
GateRun run_on_fake(DraftSource* drafter, bool gated) {
  FakeEvaluator fake;
  const Tokenizer tokenizer = letters_tokenizer();
  SchedulerOptions o{.n_slots = 2, .n_ctx = 512, .max_queue = 4, .prefill_chunk = 8, .n_threads = 1};
  o.spec = drafter != nullptr ? SpecMode::kDraft : SpecMode::kNone;
  o.draft_max = 4;
  o.spec_auto = gated;
  GateRun r;
  std::vector<std::shared_ptr<RecordingSink>> sinks;
  {
    Scheduler scheduler(fake, tokenizer, o, drafter);
    for (const std::vector<int32_t>& prompt : {std::vector<int32_t>{0, 1, 2}, std::vector<int32_t>{7, 3}}) {
      GenerationRequest q;
      q.prompt = prompt;
      q.sampling.temperature = 0.0f;
      q.max_tokens = 300;
      sinks.push_back(std::make_shared<RecordingSink>());
      q.sink = sinks.back();
      EXPECT_EQ(scheduler.submit(std::move(q)), SubmitStatus::kAccepted);
    }
    for (auto& s : sinks) {
      EXPECT_EQ(s->wait(), FinishReason::kLength) << s->error();
      r.texts.push_back(s->text());
    }
    r.spec = scheduler.stats().spec;
  }
  return r;
}

TEST(DraftGate, TheSchedulerPausesWrongDraftsAndKeepsRightOnesWithPlainOutput) {
  const GateRun plain = run_on_fake(nullptr, false);
  ASSERT_EQ(plain.texts[0].size(), 300u);

  SwitchDrafter wrong([](size_t) { return false; });
  const GateRun always = run_on_fake(&wrong, false);
  const GateRun gated = run_on_fake(&wrong, true);
  EXPECT_EQ(always.texts, plain.texts);
  EXPECT_EQ(gated.texts, plain.texts);
  EXPECT_FALSE(always.spec.gated);
  EXPECT_EQ(always.spec.paused_steps, 0);
  EXPECT_GE(always.spec.draft_tokens, 2 * 298) << "a draft in every step";
  EXPECT_TRUE(gated.spec.gated);
  EXPECT_EQ(gated.spec.accepted_tokens, 0);
  // Per request: the warm-up (8 steps) and a probe after 16, 32, 64, 64, ... plain steps.
  EXPECT_LE(gated.spec.draft_tokens, 2 * (4 + 7 + 6)) << "at most the warm-up's drafts and the probes'";
  EXPECT_GE(gated.spec.paused_steps, 2 * (298 - 8 - 6));
  EXPECT_EQ(gated.spec.paused_steps + gated.spec.draft_tokens - 2 * 3, 2 * 298)
      << "each step after the warm-up's first either drafted one token or paused";

  SwitchDrafter right([](size_t) { return true; });
  const GateRun good = run_on_fake(&right, true);
  EXPECT_EQ(good.texts, plain.texts);
  EXPECT_EQ(good.spec.paused_steps, 0);
  EXPECT_EQ(good.spec.accepted_tokens, good.spec.draft_tokens);
  EXPECT_EQ(good.spec.draft_tokens, run_on_fake(&right, false).spec.draft_tokens);
}

TEST(DraftGate, DraftsThatTurnRightComeBackAtAProbe) {
  // Wrong for the first 100 tokens of each sequence, right after.
  SwitchDrafter turning([](size_t n) { return n > 100; });
  const GateRun gated = run_on_fake(&turning, true);
  EXPECT_EQ(gated.texts, run_on_fake(nullptr, false).texts);
  EXPECT_GT(gated.spec.paused_steps, 2 * 50);
  // Right from about token 100 on; a probe comes within 64 plain steps, and from there on most
  // tokens are accepted drafts (up to 4 of every 5).
  EXPECT_GE(gated.spec.accepted_tokens, 2 * 120);
}

}  // namespace
}  // namespace engine
