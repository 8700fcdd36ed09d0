// Drafting with the model's own NextN / multi-token-prediction block (`--spec mtp`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "engine/model/batch.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/speculation.h"

namespace engine {

// Proposes each sequence's next tokens with the NextN block of the model being served (qwen35
// files with nextn_predict_layers), greedily, all sequences batched, as llama.cpp's draft-mtp
// does for a single MTP head:
//   pass 0: the token going in now (position P) with the stack's final hidden state at P - 1
//           (kept by the evaluator from the pass that computed it) -> draft d_0 (argmax);
//   pass i: d_{i-1} at P + i with the NextN block's own output hidden state of pass i - 1
//           (after its head norm) -> d_i; up to the slot's `max`.
// The NextN block's K/V of the sequence's positions before P are in the evaluator's cache, made
// by the evaluator's own passes (ModelEvaluator with nextn): they follow acceptance, rejection,
// prefix sharing and truncation with the stack's rows. What the drafting passes write at P and
// beyond is dropped when propose() returns (the sequences are truncated back to P), so the
// stack's pass that verifies the drafts computes those positions itself.
// A sequence with no kept hidden state at P - 1 gets no drafts (it cannot happen after a pass of
// the stack over P - 1, which every generating sequence has had).
// Errors: propose() passes on the NextN pass's exceptions, after truncating the sequences back.
// Ownership: borrows the evaluator (built with nextn), which must outlive it. Thread-safety: none;
// the scheduler's thread, between the evaluator's passes.
class MtpDrafter final : public DraftSource {
 public:
  explicit MtpDrafter(ModelEvaluator& evaluator);

  void propose(std::span<DraftSlot> slots) override;

 private:
  void run(std::span<DraftSlot> slots);
  int32_t argmax(const float* logits) const;

  ModelEvaluator& ev_;
  int64_t n_vocab_;
  int64_t n_embd_;
  Batch batch_;
  std::vector<float> h_, next_h_;             // (batch rows, n_embd) each row's input hidden state
  std::vector<size_t> rows_, next_rows_;      // the slot behind each row of the pass
  std::vector<std::pair<SeqId, int32_t>> touched_;  // sequences drafted for, and their P
};

}  // namespace engine
