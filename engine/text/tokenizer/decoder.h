// Token ids back to text: the bytes each token stands for, and a streaming decoder that only
// ever emits whole UTF-8 characters.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer/vocab.h"

namespace engine {
class Tokenizer;
}

namespace engine::tokenizer {

// The output bytes of every token, computed once at load:
//  - SentencePiece: U+2581 -> ' ', <0xXX> byte tokens -> that byte;
//  - WordPiece: the same U+2581 -> ' ' (word starts carry it, continuation pieces are bare);
//  - byte-level BPE: each code point -> its byte through the GPT-2 byte map (a code point outside
//    the map is kept as UTF-8); SentencePiece-style BPE (gemma4) as SentencePiece;
//  - user-defined tokens: their text; control and unknown tokens: their text, but only when
//    special tokens are rendered (empty otherwise); unused/undefined tokens: empty.
// Thread-safety: immutable after construction.
class PieceTable {
 public:
  explicit PieceTable(const Vocab& vocab);

  // Throws std::out_of_range naming the id and the vocabulary size when id is not a token.
  std::string_view piece(int32_t id, bool render_special) const;
  // True for tokens that carry a word-start space the tokenizer added (SentencePiece with a space
  // prefix, WordPiece): a leading ' ' of the first such piece in a decoded text is dropped.
  // (llama.cpp keeps it for WordPiece: " hello world"; we give "hello world".)
  bool strips_leading_space(int32_t id) const { return strip_space_ && normal_[id]; }
  int32_t size() const { return static_cast<int32_t>(hidden_.size()); }

 private:
  std::string arena_;
  std::vector<size_t> offsets_;
  std::vector<bool> hidden_;  // control / unknown: empty unless special tokens are rendered
  std::vector<bool> normal_;
  bool strip_space_ = false;
};

// Throws std::out_of_range with a clear message for an id outside [0, n_vocab).
void check_token_id(int32_t id, int32_t n_vocab);

}  // namespace engine::tokenizer

namespace engine {

// Turns generated ids into text incrementally. Each push() returns the text that became final:
// bytes of a UTF-8 character split across tokens are held back until the character completes,
// and flush() returns what is left at the end. The output is always valid UTF-8: bytes that
// cannot form a character become U+FFFD (an incomplete character at flush() too).
//
// With strip_leading_space, on models that prefix words with a space (SentencePiece, e.g. Llama 2,
// and WordPiece) the leading space of the first piece is dropped when that piece is a word-start
// token, so decoding an encoded prompt gives the prompt back (WordPiece: lower-cased, punctuation
// spaced). Pass false when continuing a text whose start was already decoded. Other models are
// unaffected.
// Thread-safety: one StreamDecoder per sequence; the Tokenizer must outlive it.
class StreamDecoder {
 public:
  struct Options {
    bool render_special = false;
    bool strip_leading_space = true;
    // Control tokens rendered as their text even without render_special (sorted ids; e.g. a
    // model's tool-call marker [TOOL_CALLS], which the output parser must see).
    std::vector<int32_t> shown;
  };
  explicit StreamDecoder(const Tokenizer& tokenizer);
  StreamDecoder(const Tokenizer& tokenizer, Options options);

  // Throws std::out_of_range for an id outside the vocabulary (state is left unchanged).
  std::string push(int32_t id);
  std::string flush();
  // Bytes held back waiting for the rest of a character (0..3).
  size_t pending() const { return pending_.size(); }

 private:
  std::string take_complete();

  const Tokenizer* tokenizer_;
  bool render_special_;
  std::vector<int32_t> shown_;
  bool strip_pending_;
  std::string pending_;
};

}  // namespace engine
