// Drafting with a second, small model of the target's vocabulary.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/batch.h"
#include "engine/model/forward.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/runtime/speculation.h"

namespace engine {

class Tokenizer;

// A small model that proposes each sequence's next tokens greedily (its argmax, k passes of one
// token per sequence, all sequences batched), for the target to verify. It keeps its own KV cache
// with one sequence per scheduler slot, holding the tokens it last saw: at each propose() a slot's
// sequence is cut back to what it has in common with the slot's tokens (rejected drafts go) and
// caught up with the rest -- at most `catch_up` tokens per slot and step, so a long new prompt
// does not stall the other slots; a slot still catching up gets no drafts in that step.
//
// Vocabulary: both models must have the same tokens (count, text of every token, and BOS, EOS,
// EOT, EOM ids), since draft ids go straight to the target. The argmax runs over the tokens both
// output heads have (their widths may differ by padding).
// Errors: the constructor throws std::invalid_argument naming the first difference; propose()
// passes on the forward pass's exceptions after forgetting every cached sequence (the next call
// starts over), so a failure costs speed, never output.
// Ownership: borrows the draft Model and the target's ThreadPool (both must outlive it); owns its
// KV cache and scratch. Thread-safety: none; the scheduler's thread, between the target's passes.
class DraftModel final : public DraftSource {
 public:
  // n_ctx, n_seq, kv_type: as the target's cache; target_n_vocab: the target's logits width.
  DraftModel(const Model& draft, const Tokenizer& target_tokenizer, int64_t target_n_vocab, int64_t n_ctx,
             int64_t n_seq, KvType kv_type, int64_t catch_up, ThreadPool& pool);

  void propose(std::span<DraftSlot> slots) override;

  // Throws std::invalid_argument when the two vocabularies differ ("the draft model's ...").
  static void check_compatible(const Tokenizer& target, const Tokenizer& draft);

 private:
  void run(std::span<DraftSlot> slots);
  // Cuts slot's cached sequence back to its common prefix with `tokens` and queues the rest (at
  // most catch_up_) into batch_; whether all of it fit (then its last token has logits).
  bool catch_up(const DraftSlot& slot);
  int32_t argmax(const float* logits) const;

  ThreadPool& pool_;
  int64_t n_vocab_;   // tokens a draft may name: both models' logits have them
  int64_t catch_up_;
  KvCache cache_;
  Forward forward_;
  std::vector<std::vector<int32_t>> cached_;  // per sequence: the tokens whose K/V cache_ holds
  Batch batch_;
  std::vector<size_t> rows_, next_rows_;      // the slot behind each logits row of the last pass
};

}  // namespace engine
