// Greedy drafts from the model's own NextN block. See mtp_drafter.h.
#include "engine/runtime/mtp_drafter.h"

#include <algorithm>

namespace engine {

MtpDrafter::MtpDrafter(ModelEvaluator& evaluator)
    : ev_(evaluator), n_vocab_(evaluator.n_vocab()), n_embd_(evaluator.n_embd()) {}

void MtpDrafter::propose(std::span<DraftSlot> slots) {
  touched_.clear();
  try {
    run(slots);
  } catch (...) {
    for (const auto& [seq, p] : touched_) ev_.truncate(seq, p);
    throw;
  }
  for (const auto& [seq, p] : touched_) ev_.truncate(seq, p);  // the drafts' NextN rows go
}

int32_t MtpDrafter::argmax(const float* logits) const {
  return static_cast<int32_t>(std::max_element(logits, logits + n_vocab_) - logits);
}

void MtpDrafter::run(std::span<DraftSlot> slots) {
  const auto E = static_cast<size_t>(n_embd_);
  batch_.clear();
  h_.clear();
  rows_.clear();
  for (size_t i = 0; i < slots.size(); ++i) {
    const DraftSlot& s = slots[i];
    if (s.tokens.size() < 2 || s.max <= 0) continue;
    const auto p = static_cast<int32_t>(s.tokens.size() - 1);
    const float* h = ev_.kept_hidden(s.seq, p - 1);
    if (h == nullptr) continue;
    touched_.emplace_back(s.seq, p);
    batch_.add(s.tokens.back(), s.seq, p, true);
    h_.insert(h_.end(), h, h + E);
    rows_.push_back(i);
  }
  while (!rows_.empty()) {
    ev_.eval_nextn(batch_, h_.data());
    next_h_.clear();
    next_rows_.clear();
    Batch next;
    for (size_t r = 0; r < rows_.size(); ++r) {
      DraftSlot& s = slots[rows_[r]];
      const int32_t t = argmax(ev_.logits(static_cast<int64_t>(r)));
      s.draft.push_back(t);
      if (static_cast<int32_t>(s.draft.size()) >= s.max) continue;
      next.add(t, s.seq, batch_.pos[r] + 1, true);
      const float* h = ev_.nextn_hidden(static_cast<int64_t>(r));
      next_h_.insert(next_h_.end(), h, h + E);
      next_rows_.push_back(rows_[r]);
    }
    batch_ = std::move(next);
    h_.swap(next_h_);
    rows_.swap(next_rows_);
  }
}

}  // namespace engine
