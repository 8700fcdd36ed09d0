// Cutting raw text around special tokens before any pre-tokenization.
//
// Control, unknown and user-defined tokens are found in the raw text and taken out whole; only
// the text between them goes through the model's tokenizer. User-defined tokens are always
// recognized; control and unknown tokens only when the caller asks to parse special tokens.
// Matching follows the reference implementation exactly: candidate tokens are tried longest
// first (ties: lowest id), each one splitting every remaining text fragment at its leftmost
// non-overlapping occurrences.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "engine/tokenizer/vocab.h"

namespace engine::tokenizer {

// A piece of the input: raw text [offset, offset + length) or one special token.
struct Fragment {
  size_t offset = 0;
  size_t length = 0;
  int32_t token = kNoToken;  // kNoToken for raw text
  bool is_text() const { return token == kNoToken; }
};

// Thread-safety: immutable after construction.
class SpecialTokenMatcher {
 public:
  explicit SpecialTokenMatcher(const Vocab& vocab);

  // Splits `text` into raw-text fragments and special tokens, in order.
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;

 private:
  // A byte trie over the texts of the candidate tokens (flattened; edges sorted by byte).
  struct Trie {
    struct Node {
      int32_t token = kNoToken;
      uint32_t first_edge = 0;
      uint32_t edge_count = 0;
    };
    struct Edge {
      uint8_t byte;
      uint32_t child;
    };
    std::vector<Node> nodes;
    std::vector<Edge> edges;
    bool first_byte[256] = {};

    void build(const Vocab& vocab, const std::vector<int32_t>& ids);
    int32_t child(uint32_t node, uint8_t byte) const;
  };

  struct Occurrence {
    uint32_t rank;  // position of the token in longest-first order
    size_t offset;
    bool operator<(const Occurrence& o) const {
      return rank != o.rank ? rank < o.rank : offset < o.offset;
    }
  };

  std::vector<Occurrence> find_occurrences(std::string_view text, const Trie& trie) const;
  void split_by_token(std::string_view text, int32_t token, const size_t* positions,
                      size_t n_positions, std::vector<Fragment>& fragments) const;

  const Vocab& vocab_;
  std::vector<int32_t> order_;  // candidate ids, longest text first, then lowest id
  std::vector<uint32_t> rank_;  // id -> index in order_ (for candidates)
  Trie always_;                 // user-defined tokens
  Trie with_special_;           // user-defined, control and unknown tokens
};

}  // namespace engine::tokenizer
