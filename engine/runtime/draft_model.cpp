// Greedy drafts from a small model of the same vocabulary. See draft_model.h.
#include "engine/runtime/draft_model.h"

#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

namespace {

std::string quoted(std::string_view s) { return "'" + std::string(s) + "'"; }

}  // namespace

void DraftModel::check_compatible(const Tokenizer& target, const Tokenizer& draft) {
  if (draft.n_vocab() != target.n_vocab()) {
    throw std::invalid_argument("the draft model's vocabulary has " + std::to_string(draft.n_vocab()) +
                                " tokens, the model's " + std::to_string(target.n_vocab()) +
                                ": a draft model must have the same vocabulary");
  }
  const std::pair<const char*, int32_t (Tokenizer::*)() const> specials[] = {
      {"BOS", &Tokenizer::bos}, {"EOS", &Tokenizer::eos}, {"EOT", &Tokenizer::eot}, {"EOM", &Tokenizer::eom}};
  for (const auto& [name, id] : specials) {
    if ((draft.*id)() != (target.*id)()) {
      throw std::invalid_argument(std::string("the draft model's ") + name + " token is " +
                                  std::to_string((draft.*id)()) + ", the model's " + std::to_string((target.*id)()) +
                                  " (-1: none): a draft model must have the same special tokens");
    }
  }
  for (int32_t i = 0; i < target.n_vocab(); ++i) {
    if (draft.token_text(i) != target.token_text(i)) {
      throw std::invalid_argument("token " + std::to_string(i) + " is " + quoted(draft.token_text(i)) +
                                  " in the draft model's vocabulary and " + quoted(target.token_text(i)) +
                                  " in the model's: a draft model must have the same vocabulary");
    }
  }
}

DraftModel::DraftModel(const Model& draft, const Tokenizer& target_tokenizer, int64_t target_n_vocab, int64_t n_ctx,
                       int64_t n_seq, KvType kv_type, int64_t catch_up, ThreadPool& pool)
    : pool_(pool),
      n_vocab_(std::min(target_n_vocab, draft.hparams().n_vocab)),
      catch_up_(std::max<int64_t>(catch_up, 1)),
      cache_(draft.hparams(), n_seq * n_ctx, kv_type,
             KvCache::window_cells(draft.hparams(), n_seq * n_ctx, n_seq, catch_up_ + n_seq)),
      forward_(draft, catch_up_ + n_seq, n_ctx),
      cached_(static_cast<size_t>(n_seq)) {
  check_compatible(target_tokenizer, Tokenizer::from_gguf(draft.file()));
}

void DraftModel::propose(std::span<DraftSlot> slots) {
  try {
    run(slots);
  } catch (...) {
    cache_.clear();  // what the failed pass wrote is unknown: start every sequence over
    for (std::vector<int32_t>& c : cached_) c.clear();
    throw;
  }
}

bool DraftModel::catch_up(const DraftSlot& slot) {
  std::vector<int32_t>& have = cached_.at(static_cast<size_t>(slot.seq));
  const std::span<const int32_t> tokens = slot.tokens;
  // Keep the common prefix but for the last token, whose logits give the first draft.
  size_t keep = 0;
  const size_t limit = std::min(have.size(), tokens.size() - 1);
  while (keep < limit && have[keep] == tokens[keep]) ++keep;
  keep = static_cast<size_t>(cache_.truncate(slot.seq, static_cast<int32_t>(keep)));  // a ring may keep less
  have.resize(keep);
  const size_t end = std::min(tokens.size(), keep + static_cast<size_t>(catch_up_));
  for (size_t i = keep; i < end; ++i) {
    batch_.add(tokens[i], slot.seq, static_cast<int32_t>(i), i + 1 == tokens.size());
    have.push_back(tokens[i]);
  }
  return end == tokens.size();
}

int32_t DraftModel::argmax(const float* logits) const {
  return static_cast<int32_t>(std::max_element(logits, logits + n_vocab_) - logits);
}

// Pass 0 catches every slot up and gives each its first draft's logits; pass i feeds draft i - 1
// of the slots that want more and gives draft i.
void DraftModel::run(std::span<DraftSlot> slots) {
  batch_.clear();
  rows_.clear();
  for (size_t i = 0; i < slots.size(); ++i) {
    if (slots[i].tokens.empty() || slots[i].max <= 0) continue;
    if (catch_up(slots[i])) rows_.push_back(i);
  }
  if (batch_.size() == 0) return;
  forward_.eval(batch_, cache_, pool_);
  while (!rows_.empty()) {
    batch_.clear();
    next_rows_.clear();
    for (size_t r = 0; r < rows_.size(); ++r) {
      DraftSlot& s = slots[rows_[r]];
      const int32_t t = argmax(forward_.logits(static_cast<int64_t>(r)));
      s.draft.push_back(t);
      if (static_cast<int32_t>(s.draft.size()) >= s.max) continue;
      std::vector<int32_t>& have = cached_[static_cast<size_t>(s.seq)];
      batch_.add(t, s.seq, static_cast<int32_t>(have.size()), true);
      have.push_back(t);
      next_rows_.push_back(rows_[r]);
    }
    if (batch_.size() > 0) forward_.eval(batch_, cache_, pool_);
    rows_.swap(next_rows_);
  }
}

}  // namespace engine
