// Tokenizers built from GGUF metadata alone: SentencePiece ("llama") and byte-level BPE ("gpt2"),
// matching the reference implementation (llama.cpp) id for id.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tokenizer/decoder.h"
#include "engine/text/tokenizer/vocab.h"

namespace gguf {
class File;
}

namespace engine {

using TokenType = tokenizer::TokenType;

// Text <-> token ids for one model.
//
// Load with from_gguf(); the result is independent of the gguf::File (everything is copied).
// encode() cuts special tokens out of the raw text first (user-defined tokens always, control and
// unknown tokens only with parse_special), then tokenizes the text in between. decode() renders
// tokens to bytes; control tokens are empty unless render_special.
// Errors: from_gguf throws std::runtime_error naming the problem (unknown tokenizer model or
// pre-tokenizer, malformed metadata); decode/piece throw std::out_of_range for an invalid id.
// encode() accepts any bytes (invalid UTF-8 included) and never throws for its input.
// Thread-safety: immutable after load; all const methods may run concurrently. Copies are cheap
// and share the loaded data.
class Tokenizer {
 public:
  static Tokenizer from_gguf(const gguf::File& file);

  // add_special: add BOS/EOS as the model asks (tokenizer.ggml.add_bos_token / add_eos_token,
  // with the reference per-model defaults). parse_special: recognize control tokens in `text`.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special) const;
  // As above, but no special token is taken whose text covers a byte at one of the sorted
  // positions `guarded` (see special_starts): how text assembled from trusted and untrusted
  // pieces is tokenized with the trusted pieces' control tokens and none of the others'.
  std::vector<int32_t> encode(std::string_view text, bool add_special, bool parse_special,
                              std::span<const size_t> guarded) const;
  // Positions in `text` that must be guarded so that it forms no control or unknown token when
  // embedded in other text: where such a token's text starts, where one's beginning ends the
  // text, and 0 when the text starts inside one. Sorted.
  std::vector<size_t> special_starts(std::string_view text) const;

  // Concatenated bytes of the tokens (not necessarily valid UTF-8 when cut mid-character). On
  // space-prefixed models the first word-start piece loses its leading space, so
  // decode(encode(x)) == x for text without special-token strings (and, for BPE, valid UTF-8).
  std::string decode(std::span<const int32_t> ids, bool render_special = false) const;

  // Bytes one token decodes to (control tokens: their text when render_special, else empty).
  std::string_view piece(int32_t id, bool render_special = true) const;
  // The token's text as stored in the vocabulary (e.g. "Ġhello", "▁hello", "<0x0A>").
  std::string_view token_text(int32_t id) const;
  TokenType token_type(int32_t id) const;
  bool is_control(int32_t id) const;  // control tokens (incl. those promoted by EOG rules)
  // Id of an exact vocabulary text, or -1.
  int32_t find_token(std::string_view text) const;
  // Whether StreamDecoder/decode drop the leading space of this token when it comes first.
  bool strips_leading_space(int32_t id) const;

  int32_t n_vocab() const;
  int32_t bos() const;  // -1 when the model has none
  int32_t eos() const;
  int32_t eot() const;
  int32_t eom() const;
  int32_t unk() const;
  int32_t pad() const;
  int32_t sep() const;
  bool add_bos() const;
  bool add_eos() const;
  // End of generation: eos, eot, eom and the control tokens the reference treats as such
  // (<|im_end|>, <|eot_id|>, <end_of_turn>, <|endoftext|>, ...).
  bool is_eog(int32_t id) const;
  const std::vector<int32_t>& eog_ids() const;

  std::string_view model() const;           // tokenizer.ggml.model
  std::string_view pre_tokenizer() const;   // tokenizer.ggml.pre (BPE), else ""
  const tokenizer::Vocab& vocab() const;

 private:
  struct Impl;
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace engine
