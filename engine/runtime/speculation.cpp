// Draft sources of the n-gram kind. See speculation.h.
#include "engine/runtime/speculation.h"

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

}  // namespace engine
