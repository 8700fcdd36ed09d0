// An expression intersected with a small deterministic automaton: how one constraint is enforced
// on top of another when both must hold at once (maxLength on a format or pattern, multipleOf on
// a range of numbers).
//
// The product is built as rules of the GrammarBuilder, one per (piece of the expression still to
// match, automaton state): the rule for (k, q) matches what k matches from state q and what
// follows it, ending in an accepting state. Pieces are continuations (the rest of a sequence,
// what is left of a repetition, then whatever follows those), so the product of an expression of
// n pieces with an automaton of m states has at most n * m rules however they nest.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// A deterministic automaton over code points. Thread-safety: implementations are immutable.
class Dfa {
 public:
  virtual ~Dfa() = default;
  virtual uint32_t start() const = 0;
  // The parts of `c` that lead from `state` to each next state, appended to `out` (parts that lead
  // nowhere are left out; the parts are disjoint).
  virtual void split(uint32_t state, const CharClass& c, std::vector<std::pair<CharClass, uint32_t>>& out) const = 0;
  virtual bool accepting(uint32_t state) const = 0;
};

// The strings of `e` that `dfa` accepts, as an expression over new rules of `b`. `e` may reference
// rules of `b` (defined, not recursive: they are inlined). Throws GrammarError when `e` is
// recursive or the product needs more than `max_rules` rules. The result may match nothing (its
// rules are then dead and build() drops them).
Expr intersect(const Expr& e, const Dfa& dfa, GrammarBuilder& b, size_t max_rules);

// Counts the characters of a JSON string's contents as written (an escape such as \n or \u00e9 is
// one character), accepting counts in [min, max] (max Expr::kUnbounded: no upper bound).
class JsonLengthDfa : public Dfa {
 public:
  JsonLengthDfa(uint32_t min, uint32_t max) : min_(min), max_(max) {}
  uint32_t start() const override { return 0; }
  void split(uint32_t state, const CharClass& c, std::vector<std::pair<CharClass, uint32_t>>& out) const override;
  bool accepting(uint32_t state) const override;

 private:
  // state = count * kPhases + phase; counts stop growing at min when there is no max.
  enum Phase : uint32_t { kPlain, kEscape, kHex1, kHex2, kHex3, kHex4, kPhases };
  uint32_t count_after(uint32_t count) const;
  uint32_t min_, max_;
};

}  // namespace engine::grammar
