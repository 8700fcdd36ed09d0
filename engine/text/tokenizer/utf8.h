// UTF-8 helpers shared by the tokenizers: lenient decoding the way the reference tokenizers do it,
// sanitizing arbitrary bytes into valid UTF-8, and finding where complete characters end.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace engine::tokenizer {

inline constexpr uint32_t kReplacementChar = 0xFFFD;

// Length of the UTF-8 sequence announced by a lead byte: 1 for ASCII and for stray continuation
// bytes, 2/3/4 for lead bytes (0xF8..0xFF count as 4). Used to cut text into "characters" exactly
// as SentencePiece-style tokenizers do, even when the text is not valid UTF-8.
inline size_t utf8_sequence_length(uint8_t lead) {
  static constexpr uint8_t kLengths[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLengths[lead >> 4];
}

// Appends the UTF-8 encoding of a code point (which must be <= 0x10FFFF).
void append_utf8(std::string& out, uint32_t code_point);

// Decodes one code point at `offset` with the lenient rules of the reference implementation
// (lead byte + the right number of continuation bytes; overlong forms are accepted).
// Returns false, leaving `offset` unchanged, when the bytes there do not form such a sequence.
bool decode_utf8(std::string_view text, size_t& offset, uint32_t& code_point);

// Returns `text` as valid UTF-8: each byte that does not start a decodable sequence (and each
// sequence that decodes to a surrogate or a value above U+10FFFF) becomes U+FFFD; overlong forms
// are re-encoded in their shortest form. Valid UTF-8 comes back unchanged.
// With keep_surrogates, a surrogate (U+D800..U+DFFF as three bytes) stays as it is: the
// reference BPE tokenizers decode and re-encode it like any other code point.
std::string sanitize_utf8(std::string_view text, bool keep_surrogates = false);

// True when a surrogate's three-byte form (0xED 0xA0..0xBF ..) starts at text[i] (i < size).
inline bool surrogate_at(std::string_view text, size_t i) {
  return static_cast<uint8_t>(text[i]) == 0xED && i + 1 < text.size() &&
         static_cast<uint8_t>(text[i + 1]) >= 0xA0;
}
// True when `text` holds one.
bool has_surrogate(std::string_view text);

// True when `text` is valid UTF-8 in the strict sense (what PCRE2 accepts).
bool is_valid_utf8(std::string_view text);

// Length of the longest prefix of `bytes` that does not end inside a UTF-8 sequence which the
// following bytes could still complete: the bytes after it (at most 3) are the beginning of a
// character whose remaining bytes have not arrived yet.
size_t complete_utf8_prefix(std::string_view bytes);

}  // namespace engine::tokenizer
