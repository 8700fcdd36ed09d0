// WordPiece (tokenizer.ggml.model = "bert"), as the reference implementation (llama.cpp's WPM)
// does it: BERT normalization, a whitespace / punctuation split, then a greedy longest match of
// word pieces.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer/vocab.h"

namespace engine::tokenizer {

// Text (between special tokens) -> ids, without [CLS]/[SEP] (the Tokenizer adds those).
//
// Normalization, per code point: with strip_accents, the code point becomes the first code point
// of its canonical decomposition ("é" -> "e") and combining marks are dropped; U+0000, U+FFFD,
// invalid UTF-8 and control characters (Cc Cf Co Cs) are dropped; with lowercase, the simple
// lowercase mapping. Whitespace ends a word; punctuation, ASCII symbols and CJK ideographs are
// words of one character. Each word gets the "▁" (U+2581) word-start prefix the GGUF vocabulary
// stores ("##" continuation pieces are stored bare) and is cut greedily into the longest
// vocabulary pieces, on bytes; a word with any part that matches no piece becomes [UNK] as a
// whole (nothing when the vocabulary has no unknown token).
//
// Ownership: keeps a reference to `vocab`, which must outlive the encoder.
// Thread-safety: immutable after construction; encode() may run concurrently.
class WordPieceEncoder {
 public:
  explicit WordPieceEncoder(const Vocab& vocab);

  // Appends the ids for `text`. Accepts any bytes and never throws for its input.
  void encode(std::string_view text, std::vector<int32_t>& out) const;

 private:
  // What a code point does to the words being built.
  enum class Action : uint8_t { kDrop, kBreak, kAlone, kAppend };

  Action classify(uint32_t& cp) const;  // normalizes cp in place
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  bool lowercase_;
  bool strip_accents_;
  std::array<Action, 128> ascii_actions_{};
  std::array<char, 128> ascii_normalized_{};
};

// CJK ideographs that WordPiece splits into words of their own (the reference's ranges).
bool is_cjk_ideograph(uint32_t cp);

}  // namespace engine::tokenizer
