// Speculative decoding: draft tokens proposed for the generating sequences, which the target model
// verifies in the same batched forward pass as everything else.
//
// How the scheduler verifies (scheduler_output.cpp): a generating slot's next token goes into the
// batch followed by its k drafts d_0..d_{k-1}, each with logits. Row j's logits are the target's
// distribution for the token after d_{j-1}, given every token before it -- the very row plain
// decoding would compute at that point. The request's own sampler (temperature, top-k/p, min-p,
// penalties, logit bias, grammar: everything) draws t_j from row j exactly as plain decoding
// would; t_j is emitted, and when t_j == d_j the next row (computed with d_j in place) is still
// valid and is used next. At the first t_j != d_j, or after the last draft, the step ends for that
// slot: t_j is its next token and the K/V of drafts after d_{j-1} are dropped.
//
// Why that is exact: at temperature 0, t_j is the argmax plain decoding would pick, so the output
// is the same token for token. Otherwise it is speculative sampling's rule for a point-mass draft
// (q = the draft with probability 1): P(accept d_j) = p(d_j), and on rejection t_j is distributed
// as p with d_j removed and renormalized -- here because t_j ~ p conditioned on t_j != d_j is
// exactly that. The sampler draws one random number per emitted token, as without drafts, so a
// seeded request gives the same tokens with or without speculation (same distribution, and the
// same sample too). The emitted tokens' logprobs are those of their own rows: the same as without.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/kv_cache.h"

namespace engine {

class NgramIndex;

// What proposes drafts. kNgram: prompt lookup over the sequence's own tokens (NgramIndex);
// kDraft: a small model of the same vocabulary (DraftModel); kMtp: the model's own NextN / MTP
// block (MtpDrafter).
enum class SpecMode { kNone, kNgram, kDraft, kMtp };
const char* spec_mode_name(SpecMode m);  // "none", "ngram", "draft", "mtp"

// One generating sequence that may draft in this step.
struct DraftSlot {
  SeqId seq;                        // the scheduler's slot (the evaluator's sequence id)
  std::span<const int32_t> tokens;  // the sequence so far: prompt, generated, the token going in now
  int32_t max = 0;                  // drafts that could be used at most (>= 1)
  NgramIndex* ngram = nullptr;      // the request's own index (prompt lookup)
  std::vector<int32_t> draft;       // out: at most `max` proposed tokens (empty: none)
};

// Proposes drafts for many sequences at once (a draft model batches them). The scheduler checks
// what comes back (length, token ids) and uses none of it when propose() throws: a failure in
// drafting never reaches a request. Thread-safety: the scheduler's thread only.
class DraftSource {
 public:
  virtual ~DraftSource() = default;
  virtual void propose(std::span<DraftSlot> slots) = 0;
};

// Prompt lookup: each slot's NgramIndex is brought up to date with its new tokens, then asked.
// Stateless (the indexes live in the requests). Thread-safety: none needed beyond the slots'.
class NgramDrafter final : public DraftSource {
 public:
  void propose(std::span<DraftSlot> slots) override;
};

// --spec auto's rule for MTP drafting (DraftGate). A draft costs `break_even` of a plain decode step
// and an accepted one saves a whole step: a step with k drafts, a of them accepted, emits 1 + a tokens
// for 1 + k * break_even steps' time, a gain exactly when a / k >= break_even.
// The default is measured (README, Performance: qwen3.5-4b with its NextN block, one slot, acceptance
// 0): 15.6 tokens/s plain, 9.96 with one draft per step, so a draft (the NextN block, the output head
// once more, the verification row) costs 15.6 / 9.96 - 1 = 0.57 of a plain step. It is a constant,
// not timed at run time, so that which steps draft depends only on the tokens (deterministic); a
// CPU or model where drafts cost otherwise moves the break-even, not the output.
struct DraftGateParams {
  double break_even = 0.55;  // accepted per draft below which drafting loses time
  int warmup = 8;            // drafted steps before the rate is judged (after a start or a resume)
  double decay = 0.9375;     // per drafted step, of the rate's sums: the last ~16 drafted steps count
  int probe_after = 16;      // plain steps of a pause before a probe (a step that drafts again)
  int probe_after_max = 64;  // the pause doubles after each failed probe, up to this
};

// Whether one sequence drafts in this step (--spec auto, MTP). The rate accepted / drafted is kept
// over the sequence's recent drafted steps (sums decaying by `decay` per drafted step). After
// `warmup` drafted steps, a rate under break_even pauses drafting: the sequence decodes plainly for
// `probe_after` steps, then drafts once more (a probe, as many drafts as its length control allows).
// A probe with at least break_even of its drafts accepted resumes drafting, warm-up and rate afresh
// (text that turned predictable: code, repetition); otherwise the pause starts again, twice as long,
// up to probe_after_max. Bounded: a paused sequence drafts once per probe_after_max + 1 steps at
// least. It sees only counts, so at temperature 0 the same prompt pauses at the same steps.
// Thread-safety: none (the scheduler's thread).
class DraftGate {
 public:
  explicit DraftGate(DraftGateParams p = {}) : p_(p) {}

  bool drafting() const { return wait_ == 0; }  // drafts may go into this step
  bool paused() const { return wait_ > 0; }
  // After a step whose `proposed` (> 0) drafts were verified and `accepted` of them sampled too.
  void drafted(int32_t proposed, int32_t accepted);
  // After a step decoded without drafts because paused() was true.
  void plain_step();
  double rate() const { return drafts_ > 0 ? accepted_ / drafts_ : 0; }

 private:
  void pause(int steps);

  DraftGateParams p_;
  double drafts_ = 0, accepted_ = 0;  // decayed sums over drafted steps since the last (re)start
  int steps_ = 0;                     // drafted steps since the last (re)start
  int wait_ = 0;                      // plain steps left in the pause (0: drafting)
  int pause_ = 0;                     // the current pause's length (0: never paused)
  bool probing_ = false;              // the next drafted step is a probe
};

// Drafts proposed and accepted since the scheduler started (acceptance rate: accepted / proposed).
struct SpecStats {
  SpecMode mode = SpecMode::kNone;
  bool gated = false;           // --spec auto: slots pause drafting while it does not pay (DraftGate)
  int64_t draft_tokens = 0;     // drafts verified by the target
  int64_t accepted_tokens = 0;  // of them, tokens the request sampled too (emitted)
  int64_t paused_steps = 0;     // slot steps decoded without drafts because DraftGate paused them
};

}  // namespace engine
