// Draft sources of the n-gram kind, and --spec auto's gate. See speculation.h.
#include "engine/runtime/speculation.h"

#include <algorithm>

#include "engine/runtime/ngram_index.h"

namespace engine {

const char* spec_mode_name(SpecMode m) {
  switch (m) {
    case SpecMode::kNone: return "none";
    case SpecMode::kNgram: return "ngram";
    case SpecMode::kDraft: return "draft";
    case SpecMode::kMtp: return "mtp";
  }
  return "none";
}

void NgramDrafter::propose(std::span<DraftSlot> slots) {
  for (DraftSlot& s : slots) {
    if (s.ngram == nullptr) continue;
    s.ngram->extend(s.tokens);
    s.draft = s.ngram->propose(s.max);
  }
}

void DraftGate::drafted(int32_t proposed, int32_t accepted) {
  if (proposed <= 0) return;
  if (probing_) {
    probing_ = false;
    if (accepted < p_.break_even * proposed) {
      pause(std::min(2 * pause_, p_.probe_after_max));
      return;
    }
    drafts_ = accepted_ = 0;  // resumed: judged afresh, the probe being its first step
    steps_ = 0;
    pause_ = 0;
  }
  drafts_ = p_.decay * drafts_ + proposed;
  accepted_ = p_.decay * accepted_ + accepted;
  if (++steps_ >= p_.warmup && accepted_ < p_.break_even * drafts_) pause(p_.probe_after);
}

void DraftGate::plain_step() {
  if (wait_ > 0 && --wait_ == 0) probing_ = true;
}

void DraftGate::pause(int steps) {
  pause_ = std::max(steps, 1);
  wait_ = pause_;
}

}  // namespace engine
