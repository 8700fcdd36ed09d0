// WordPiece (tokenizer.ggml.model = "bert"): BERT normalization, whitespace/punctuation split,
// then greedy longest-match of word pieces.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer/vocab.h"

namespace engine::tokenizer {

// Not implemented yet (needs Unicode lower-casing and NFD accent stripping): constructing one
// throws, so "bert" vocabularies are refused at load time with a clear message.
class WordPieceEncoder {
 public:
  // Throws std::runtime_error naming the unsupported model.
  explicit WordPieceEncoder(const Vocab& vocab);
  void encode(std::string_view text, std::vector<int32_t>& out) const;
};

}  // namespace engine::tokenizer
