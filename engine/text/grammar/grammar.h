// Grammars for constrained decoding: what every front end (JSON Schema, GBNF, regex, "any JSON")
// compiles to, and what the matcher (matcher.h) runs as a pushdown automaton over bytes.
//
// A front end describes the language as expressions (Expr: literals, code-point classes, rule
// references, sequences, alternatives, repetitions) attached to named rules of a GrammarBuilder;
// build() lowers them to the flat program the matcher walks:
//
//   elements_  [ C C R C END | C END | END | ... ]   one entry per symbol, each alternative ends in END
//   rules_[r]  the element index where each alternative of rule r starts
//
// A symbol is either a class (one code point from a set of ranges, optionally repeated: `star`
// means zero or more) or a reference to a rule. Terminals are code points; the matcher feeds them
// UTF-8 bytes one at a time, so a token may end or begin in the middle of a character.
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace engine::grammar {

// Refusal of a grammar, schema or pattern. `what()` names where and why ("line 3, column 7:
// expected ::=", "/properties/age: minimum must be a number"). `offset` is the byte offset in the
// source text when there is one, else npos.
class GrammarError : public std::invalid_argument {
 public:
  explicit GrammarError(const std::string& message, size_t offset = std::string::npos)
      : std::invalid_argument(message), offset_(offset) {}
  size_t offset() const { return offset_; }

 private:
  size_t offset_;
};

inline constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A set of Unicode code points as sorted, disjoint, non-adjacent inclusive ranges.
class CharClass {
 public:
  struct Range {
    uint32_t lo, hi;
  };
  CharClass() = default;
  static CharClass of(uint32_t cp) { return range(cp, cp); }
  static CharClass range(uint32_t lo, uint32_t hi);
  static CharClass any();  // every code point except the UTF-16 surrogates
  // From sorted, disjoint ranges without surrogates (adjacent ones are merged).
  static CharClass from_sorted(const std::vector<Range>& ranges);

  CharClass& add(uint32_t lo, uint32_t hi);
  CharClass& add(const CharClass& other);
  CharClass complement() const;  // within any()
  CharClass intersect(const CharClass& other) const;
  bool contains(uint32_t cp) const;
  bool empty() const { return ranges_.empty(); }
  const std::vector<Range>& ranges() const { return ranges_; }
  bool operator==(const CharClass& o) const;
  std::string describe() const;  // "[a-z0-9]" for messages and dumps

 private:
  std::vector<Range> ranges_;
};

// An expression over code points. Build with the helpers below; a front end hands one expression
// per rule to GrammarBuilder::define().
struct Expr {
  enum class Kind { kEmpty, kLiteral, kClass, kRef, kSeq, kAlt, kRepeat };
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();

  Kind kind = Kind::kEmpty;
  std::string text;         // kLiteral: UTF-8; an empty kClass (never()): why it matches nothing
  CharClass cls;            // kClass
  uint32_t rule = 0;        // kRef: a GrammarBuilder rule id
  std::vector<Expr> items;  // kSeq, kAlt; kRepeat: exactly one
  uint32_t min = 0, max = 0;  // kRepeat: between min and max (kUnbounded) times
};

Expr empty();
Expr lit(std::string_view utf8);  // throws GrammarError for invalid UTF-8
Expr cls(CharClass c);
// Matches nothing: an alternative that holds it is dropped when the grammar is built. `why` is
// what a grammar with nothing left says (GrammarBuilder::build).
Expr never(std::string why);
// `e`, and `why` as the reason when `e` turns out to match nothing.
Expr explain(Expr e, std::string why);
Expr ref(uint32_t rule);
Expr seq(std::vector<Expr> items);
Expr alt(std::vector<Expr> items);
Expr repeat(Expr e, uint32_t min, uint32_t max);
inline Expr star(Expr e) { return repeat(std::move(e), 0, Expr::kUnbounded); }
inline Expr plus(Expr e) { return repeat(std::move(e), 1, Expr::kUnbounded); }
inline Expr opt(Expr e) { return repeat(std::move(e), 0, 1); }

// One symbol of the flat program.
struct Element {
  enum class Kind : uint8_t { kClass, kRule, kEnd };
  Kind kind = Kind::kEnd;
  bool star = false;  // kClass: zero or more code points of the class
  uint32_t arg = 0;   // kClass: index into classes(); kRule: rule id
};

// Limits that keep a hostile grammar from exhausting memory at compile time.
struct GrammarLimits {
  size_t max_elements = 1 << 20;
  size_t max_rules = 1 << 16;
  uint32_t max_repeat = 10000;  // bounded repetition {m,n} with n above this: refused
};

// The compiled, immutable program. Rule 0 is the root. Thread-safety: immutable; share freely.
class Grammar {
 public:
  // A copy of `g` whose classes keep only the code points of `allowed`, without the alternatives
  // that can then never complete. Throws GrammarError naming what can no longer be written when
  // nothing is left.
  static std::shared_ptr<const Grammar> restricted(const Grammar& g, const CharClass& allowed);

  const std::vector<Element>& elements() const { return elements_; }
  const Element& element(uint32_t i) const { return elements_[i]; }
  // Start element of each alternative of rule r.
  const std::vector<uint32_t>& alternatives(uint32_t r) const { return rules_[r]; }
  size_t n_rules() const { return rules_.size(); }
  const CharClass& char_class(uint32_t i) const { return classes_[i]; }
  // Whether class i contains code point cp; ASCII through a bitmap.
  bool class_contains(uint32_t i, uint32_t cp) const {
    if (cp < 128) return (ascii_[i][cp >> 6] >> (cp & 63)) & 1;
    return classes_[i].contains(cp);
  }
  const std::string& rule_name(uint32_t r) const { return names_[r]; }
  // The grammar as GBNF-like text, for debugging and tests.
  std::string dump() const;

 private:
  friend class GrammarBuilder;
  friend class GrammarPruner;
  std::vector<Element> elements_;
  std::vector<std::vector<uint32_t>> rules_;
  std::vector<std::string> names_;
  std::vector<CharClass> classes_;
  std::vector<std::array<uint64_t, 2>> ascii_;  // per class: ASCII membership bitmap
};

// Collects rules, then lowers them into a Grammar. Rules may be referenced before they are defined
// (GBNF allows it); build() refuses undefined rules, left recursion (the matcher would expand it
// forever) and a grammar larger than the limits.
//
// Alternatives that share a first symbol are factored (a trie of their common prefixes), so an
// enum of 20,000 strings or many patterns behind one prefix stay one parse, not thousands. And the
// built grammar has no dead ends: alternatives that can never complete (they hold never(), an
// empty class, or a rule that cannot complete) are removed, so every state the matcher reaches
// can still reach the end. A grammar left with nothing is refused with the reason never() gave.
class GrammarBuilder {
 public:
  explicit GrammarBuilder(GrammarLimits limits = {}) : limits_(limits) {}
  // Id of the rule named `name`, declaring it if new.
  uint32_t rule(std::string_view name);
  // A new rule with a unique name derived from `hint`.
  uint32_t fresh_rule(std::string_view hint);
  bool defined(uint32_t rule) const { return rules_[rule].defined; }
  bool has_rule(std::string_view name) const;
  const std::string& name(uint32_t rule) const { return rules_[rule].name; }
  // The expression of a defined rule, or null.
  const Expr* expr(uint32_t rule) const { return rules_.at(rule).defined ? &rules_[rule].expr : nullptr; }
  size_t n_rules() const { return rules_.size(); }
  const GrammarLimits& limits() const { return limits_; }
  // Gives `rule` its expression; throws GrammarError if already defined.
  void define(uint32_t rule, Expr e);
  // Lowers everything reachable from `root` (which becomes rule 0 of the result).
  std::shared_ptr<const Grammar> build(uint32_t root);

 private:
  struct RuleDef {
    std::string name;
    bool defined = false;
    Expr expr;
  };
  class Lowering;
  GrammarLimits limits_;
  std::vector<RuleDef> rules_;
  std::map<std::string, uint32_t, std::less<>> by_name_;
};

}  // namespace engine::grammar
