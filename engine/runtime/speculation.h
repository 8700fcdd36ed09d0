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

// Drafts proposed and accepted since the scheduler started (acceptance rate: accepted / proposed).
struct SpecStats {
  SpecMode mode = SpecMode::kNone;
  int64_t draft_tokens = 0;     // drafts verified by the target
  int64_t accepted_tokens = 0;  // of them, tokens the request sampled too (emitted)
};

}  // namespace engine
