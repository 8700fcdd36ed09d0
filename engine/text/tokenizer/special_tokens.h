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
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/text/tokenizer/vocab.h"

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

  // Splits `text` into raw-text fragments and special tokens, in order. No special token is
  // taken whose text would cover a byte at one of the sorted positions `guarded`.
  std::vector<Fragment> partition(std::string_view text, bool parse_special,
                                  std::span<const size_t> guarded = {}) const;

  // Where in `text` a control or unknown token's text starts (every occurrence, overlapping ones
  // too), where its tail runs into the end of `text` (a prefix of such a token), and 0 when
  // `text` starts inside one (with a proper suffix of such a token, or as a part of one). Sorted.
  // Guarding these positions in a string that is later embedded in other text keeps it from
  // forming any control token, alone or together with what surrounds it.
  std::vector<size_t> special_starts(std::string_view text) const;

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

  std::vector<Occurrence> find_occurrences(std::string_view text, const Trie& trie,
                                           std::span<const size_t> guarded) const;
  bool starts_inside_control(std::string_view text) const;
  void split_by_token(std::string_view text, int32_t token, const size_t* positions,
                      size_t n_positions, std::vector<Fragment>& fragments) const;

  const Vocab& vocab_;
  std::vector<int32_t> order_;  // candidate ids, longest text first, then lowest id
  std::vector<uint32_t> rank_;  // id -> index in order_ (for candidates)
  Trie always_;                 // user-defined tokens
  Trie with_special_;           // user-defined, control and unknown tokens
  Trie control_;                // control and unknown tokens (what parse_special adds)
  // For each byte b, (id, k) for every control/unknown token whose text has b at k >= 1.
  std::vector<std::pair<int32_t, uint32_t>> inner_[256];
};

}  // namespace engine::tokenizer
