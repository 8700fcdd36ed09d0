// SentencePiece BPE (tokenizer.ggml.model = "llama"): spaces become U+2581, characters are
// merged greedily by the score of the token they form, and what does not form a token falls
// back to <0xXX> byte tokens.
#pragma once

#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer/vocab.h"

namespace engine::tokenizer {

// Thread-safety: immutable after construction; encode() keeps its state on the stack.
class SpmEncoder {
 public:
  explicit SpmEncoder(const Vocab& vocab);

  // Appends the ids for `text`, which must already have its spaces escaped to U+2581. Any bytes
  // are accepted: text is cut into characters by lead-byte length, as the reference does.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

  // The "<0xXX>" token for a byte (or the one-character token, or unk); kNoToken if none.
  int32_t byte_token(uint8_t byte) const { return byte_tokens_[byte]; }

 private:
  struct Symbol {
    uint32_t start;
    uint32_t length;  // 0 once merged into its left neighbour
    int32_t prev;
    int32_t next;
  };
  struct Candidate {
    float score;
    int32_t left;
    int32_t right;
    uint32_t length;
  };
  void emit_symbol(std::string_view text, const Symbol& symbol, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  std::array<int32_t, 256> byte_tokens_{};
};

// Replaces every ' ' with U+2581 ("▁").
std::string escape_spaces(std::string_view text);

}  // namespace engine::tokenizer
