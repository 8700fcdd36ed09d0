// BPE vocabularies, merges applied by rank to the words of a regex pre-tokenizer:
//  - byte-level (tokenizer.ggml.model = "gpt2"): bytes are mapped to printable code points;
//  - SentencePiece-style (model "gemma4", PreTokenizerSpec::spm_style): spaces become U+2581,
//    merges run over UTF-8 characters, and a character that is no token falls back to <0xXX>
//    byte tokens.
#pragma once

#include <array>
#include <deque>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "engine/text/tokenizer/pre_tokenizer.h"
#include "engine/text/tokenizer/vocab.h"

namespace engine::tokenizer {

// GPT-2's reversible byte <-> code point mapping: printable Latin-1 bytes map to themselves, the
// rest to U+0100 upwards.
uint32_t byte_to_code_point(uint8_t byte);
// Inverse mapping; returns -1 for a code point that no byte maps to.
int byte_from_code_point(uint32_t code_point);

// Open-addressing table: (left id, right id) -> (rank, merged id).
class MergeTable {
 public:
  struct Merge {
    int32_t rank;
    int32_t merged;
  };
  void build(const Vocab& vocab);
  const Merge* find(int32_t left, int32_t right) const;

 private:
  struct Bucket {  // of the open-addressing table
    uint64_t key = kEmpty;
    Merge merge{};
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
  }
  size_t bucket_of(uint64_t key) const { return (key * 0x9E3779B97F4A7C15ull) >> shift_; }
  std::vector<Bucket> buckets_;
  unsigned shift_ = 64;
};

// Per-call scratch memory and the word cache (word bytes -> ids) of one encode() call.
struct BpeScratch {
  struct Span {
    uint32_t begin, size;
  };
  std::unordered_map<std::string_view, Span> cache;
  std::vector<int32_t> cached_ids;
  std::vector<std::string_view> words;
  std::deque<std::string> sanitized;  // repaired copies of invalid UTF-8 (stable addresses)
  std::string encoded;                 // byte-level form of the current word
  std::vector<uint32_t> char_starts;   // SentencePiece-style: byte offset of each symbol's character
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
  };
  std::vector<Symbol> symbols;
  struct Candidate {
    int32_t rank, left, right, left_id, right_id;
  };
  std::vector<Candidate> heap;
};

// Thread-safety: immutable after construction; encode() may run concurrently with distinct
// scratch objects.
class BpeEncoder {
 public:
  // Throws std::runtime_error for an unknown pre-tokenizer.
  explicit BpeEncoder(const Vocab& vocab);

  // Appends the ids of one raw text fragment (any bytes; invalid UTF-8 is repaired with U+FFFD
  // first, as the reference implementation does, which keeps surrogates).
  void encode(std::string_view fragment, BpeScratch& scratch, std::vector<int32_t>& out) const;

 private:
  void encode_word(std::string_view word, BpeScratch& scratch, std::vector<int32_t>& out) const;
  void encode_spm_word(std::string_view word, BpeScratch& scratch, std::vector<int32_t>& out) const;
  void merge_symbols(BpeScratch& scratch) const;
  void emit_unmapped_byte(uint8_t byte, std::vector<int32_t>& out) const;

  const Vocab& vocab_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  MergeTable merges_;
  // Byte-level: the token of each byte's code point; SentencePiece-style: each byte's "<0xXX>"
  // token. kNoToken where the vocabulary has none.
  std::array<int32_t, 256> byte_tokens_{};
  bool ignore_merges_ = false;
  bool spm_style_ = false;
};

}  // namespace engine::tokenizer
