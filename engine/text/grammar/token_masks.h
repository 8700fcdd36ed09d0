// Which tokens of a vocabulary a grammar allows next: the per-step cost of constrained decoding.
//
// Checking all n_vocab tokens against the grammar at every step is too slow (150k tokens of a few
// bytes each). As XGrammar does, most of the work is done once per grammar x vocabulary:
//
//  - TokenVocab: every token's bytes, sorted into a trie laid out in preorder, so a walk over all
//    tokens shares their common prefixes and skips a whole subtree when its prefix is refused.
//  - CompiledGrammar: for every class element p of the grammar (every possible stack top), one
//    walk of the trie from the stack [p] alone. A token that stays inside the rule p is in is
//    accepted or refused whatever lies below on the stack: "accepted" / refused. A token that
//    runs past the end of that rule depends on the rest of the stack: "uncertain".
//  - At run time (TokenConstraint::allowed) the mask is the union, over the live stacks, of their
//    top's accepted set plus the uncertain tokens that the full stack accepts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/grammar/matcher.h"

namespace engine {
class Tokenizer;
}

namespace engine::grammar {

using TokenBits = std::vector<uint64_t>;  // one bit per token id
inline bool test_bit(const TokenBits& b, int32_t id) { return (b[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1; }
inline void set_bit(TokenBits& b, int32_t id) { b[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63); }

// The bytes of every token and the trie over them. End-of-generation tokens and tokens with no
// bytes (control tokens) are not in the trie: the grammar never produces them; TokenConstraint
// allows the end-of-generation ones exactly when the grammar is complete.
// Thread-safety: immutable after construction.
class TokenVocab {
 public:
  TokenVocab(std::vector<std::string> token_bytes, std::vector<int32_t> eog_ids);
  // Every token but the control tokens (which have no text in the output), except those in
  // `shown` (sorted): control tokens the output renders (tool-call markers such as [TOOL_CALLS]).
  static std::shared_ptr<const TokenVocab> from_tokenizer(const Tokenizer& tokenizer,
                                                          const std::vector<int32_t>& shown = {});

  // One trie node, in preorder: the byte that leads to it from its parent, its depth (1 for the
  // root's children), where its subtree ends in the node array, and the range of sorted tokens:
  // [first, here_end) end exactly at this node, [first, sub_end) are in its subtree.
  struct Node {
    uint32_t end;
    uint32_t first;
    uint32_t here_end;
    uint32_t sub_end;
    uint16_t depth;
    uint8_t byte;
  };

  int32_t n_vocab() const { return static_cast<int32_t>(bytes_.size()); }
  std::string_view bytes(int32_t id) const { return bytes_[static_cast<size_t>(id)]; }
  const std::vector<int32_t>& eog_ids() const { return eog_; }
  const std::vector<Node>& nodes() const { return nodes_; }
  // The code points whose UTF-8 bytes some sequence of tokens writes exactly, and whether that is
  // every code point (a byte-level or byte-fallback vocabulary: every byte a token of its own).
  const CharClass& writable() const { return writable_; }
  bool writes_everything() const { return writes_everything_; }
  int32_t sorted_id(uint32_t i) const { return sorted_[i]; }
  size_t n_sorted() const { return sorted_.size(); }
  size_t max_depth() const { return max_depth_; }

 private:
  std::vector<std::string> bytes_;
  std::vector<int32_t> eog_;
  std::vector<int32_t> sorted_;  // ids of tokens with bytes, by bytes
  std::vector<Node> nodes_;
  size_t max_depth_ = 0;
  CharClass writable_;
  bool writes_everything_ = false;
};

// A grammar prepared for one vocabulary. Thread-safety: immutable after construction.
class CompiledGrammar {
 public:
  // What a stack whose top is one class element allows, regardless of the rest of the stack.
  struct PositionMask {
    std::vector<int32_t> accepted;  // ids, when few
    TokenBits accepted_bits;        // when many (then `accepted` is empty)
    std::vector<int32_t> uncertain; // ids to check against the full stack, in byte order
  };

  // Trie nodes the position walks of one compilation may visit before the grammar is refused, so
  // no request makes the server compile for minutes. Measured with Qwen3's 151,936 tokens (333k
  // trie nodes; Zen 5, release): a walk visits about 94k nodes on average and a JSON string costs
  // about 3.3 positions per character of maxLength (maxLength 84: 277 positions, 0.6-0.7 s), so
  // the budget admits a maxLength of about 3,000 and tens of seconds of one core at worst.
  static constexpr size_t kDefaultMaxVisits = size_t{1} << 30;

  // Precomputes every position's mask. When the vocabulary cannot write every character, the
  // grammar is first restricted to those it can (Grammar::restricted), so no state is reached
  // that no token can leave: grammar() is that restricted grammar. Throws GrammarError when
  // nothing the grammar allows can be written, from the automaton's limits, or when the walks
  // visit more than `max_visits` trie nodes.
  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocab> vocab,
                  size_t max_visits = kDefaultMaxVisits);

  const std::shared_ptr<const Grammar>& grammar() const { return grammar_; }
  const TokenVocab& vocab() const { return *vocab_; }
  const PositionMask* at(uint32_t position) const {
    return position < masks_.size() && masks_[position] ? masks_[position].get() : nullptr;
  }
  size_t n_positions() const { return n_positions_; }

 private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocab> vocab_;
  std::vector<std::unique_ptr<PositionMask>> masks_;  // by element index; null: not a class
  size_t n_positions_ = 0;
};

// Walks the vocabulary trie from `start` and sets the bit of every token the stacks accept in
// full (a stack that empties can take no more bytes). `local`: stacks are rule-local (an empty
// stack means "left the rule"); tokens that run past such an end go to `uncertain` instead.
// The exact, slow path: used for precomputation, for stacks whose top is inside a character,
// and by tests as the reference for TokenConstraint.
// Returns the number of trie nodes visited.
size_t walk_vocab(Automaton& automaton, const TokenVocab& vocab, const StackSet& start, bool local,
                  TokenBits& accepted, std::vector<int32_t>* uncertain);

// The constraint of one sequence: which tokens may come next, and the state after one has.
// Ownership: shares the CompiledGrammar. Thread-safety: none; one per sequence.
class TokenConstraint {
 public:
  explicit TokenConstraint(std::shared_ptr<const CompiledGrammar> compiled);

  // The tokens allowed next (n_vocab bits): those the grammar can continue with, and the
  // end-of-generation tokens when the text so far is complete. Empty set: nothing can follow.
  const TokenBits& allowed();
  // Advances over a token. False (and no change) when the grammar does not allow it.
  bool accept(int32_t token);
  // Advances over text that did not come as one token of this vocabulary (a lazy grammar's
  // trigger and what followed it). False (and no change) when the grammar does not allow it.
  bool accept_text(std::string_view bytes);
  // Nothing but the end can follow.
  bool complete() const { return matcher_.complete(); }
  bool can_end() const { return matcher_.can_end(); }
  const Matcher& matcher() const { return matcher_; }

 private:
  std::shared_ptr<const CompiledGrammar> compiled_;
  Matcher matcher_;
  Automaton automaton_;
  TokenBits mask_;
  TokenBits grouped_bits_;           // allowed(), many stacks: the union of their uncertain tokens
  std::vector<int32_t> grouped_ids_;  // the same, in byte order
  StackSet one_, group_;
  std::vector<uint32_t> tops_done_;  // allowed(): stack tops whose accepted set is in the mask
  std::vector<StackSet> walk_;       // add_uncertain(): the states after each prefix of a token

  // Sets the bits of the uncertain `ids` (in byte order) that the stacks in `start` accept.
  void add_uncertain(const StackSet& start, const std::vector<int32_t>& ids);
};

}  // namespace engine::grammar
