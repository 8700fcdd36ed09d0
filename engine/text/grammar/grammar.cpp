// Character classes, expression helpers, and lowering expressions to the flat program.
#include "engine/text/grammar/grammar.h"

#include <algorithm>
#include <cstdio>
#include <map>

#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

// ---- CharClass ----

CharClass CharClass::range(uint32_t lo, uint32_t hi) {
  CharClass c;
  c.add(lo, hi);
  return c;
}

CharClass CharClass::any() {
  CharClass c;
  c.add(0, 0xD7FF);
  c.add(0xE000, kMaxCodePoint);
  return c;
}

CharClass& CharClass::add(uint32_t lo, uint32_t hi) {
  hi = std::min(hi, kMaxCodePoint);
  if (lo > hi) return *this;
  // Surrogates are never characters: a class holding them would let UTF-8 prefixes of them live.
  if (lo <= 0xDFFF && hi >= 0xD800) {
    if (lo < 0xD800) add(lo, 0xD7FF);
    if (hi > 0xDFFF) add(0xE000, hi);
    return *this;
  }
  ranges_.push_back({lo, hi});
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  std::vector<Range> merged;
  for (const Range& r : ranges_) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  ranges_ = std::move(merged);
  return *this;
}

CharClass& CharClass::add(const CharClass& other) {
  for (const Range& r : other.ranges_) add(r.lo, r.hi);
  return *this;
}

CharClass CharClass::complement() const {
  CharClass out;
  uint32_t next = 0;
  for (const Range& r : ranges_) {
    if (r.lo > next) out.add(next, r.lo - 1);
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.add(next, kMaxCodePoint);
  // Surrogates are never characters.
  CharClass clean;
  for (const Range& r : out.ranges_) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      clean.ranges_.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) clean.ranges_.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) clean.ranges_.push_back({0xE000, r.hi});
  }
  return clean;
}

bool CharClass::contains(uint32_t cp) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), cp, [](uint32_t x, const Range& r) { return x < r.lo; });
  return it != ranges_.begin() && cp <= std::prev(it)->hi;
}

bool CharClass::operator==(const CharClass& o) const {
  return ranges_.size() == o.ranges_.size() &&
         std::equal(ranges_.begin(), ranges_.end(), o.ranges_.begin(),
                    [](const Range& a, const Range& b) { return a.lo == b.lo && a.hi == b.hi; });
}

namespace {

std::string describe_cp(uint32_t cp) {
  if (cp >= 0x21 && cp < 0x7F && cp != '\\' && cp != ']' && cp != '-' && cp != '^' && cp != '"') {
    return std::string(1, static_cast<char>(cp));
  }
  char buf[16];
  std::snprintf(buf, sizeof buf, cp < 0x100 ? "\\x%02X" : (cp < 0x10000 ? "\\u%04X" : "\\U%08X"), cp);
  return buf;
}

}  // namespace

std::string CharClass::describe() const {
  if (ranges_.size() == 1 && ranges_[0].lo == ranges_[0].hi) {
    return "\"" + describe_cp(ranges_[0].lo) + "\"";
  }
  std::string s = "[";
  for (const Range& r : ranges_) {
    s += describe_cp(r.lo);
    if (r.hi != r.lo) s += "-" + describe_cp(r.hi);
  }
  return s + "]";
}

// ---- Expr helpers ----

Expr empty() { return Expr{}; }

Expr lit(std::string_view utf8) {
  if (!tokenizer::is_valid_utf8(utf8)) throw GrammarError("literal is not valid UTF-8");
  Expr e;
  e.kind = Expr::Kind::kLiteral;
  e.text = std::string(utf8);
  return e;
}

Expr cls(CharClass c) {
  Expr e;
  e.kind = Expr::Kind::kClass;
  e.cls = std::move(c);
  return e;
}

Expr ref(uint32_t rule) {
  Expr e;
  e.kind = Expr::Kind::kRef;
  e.rule = rule;
  return e;
}

Expr seq(std::vector<Expr> items) {
  if (items.size() == 1) return std::move(items[0]);
  Expr e;
  e.kind = Expr::Kind::kSeq;
  e.items = std::move(items);
  return e;
}

Expr alt(std::vector<Expr> items) {
  if (items.size() == 1) return std::move(items[0]);
  Expr e;
  e.kind = Expr::Kind::kAlt;
  e.items = std::move(items);
  return e;
}

Expr repeat(Expr x, uint32_t min, uint32_t max) {
  Expr e;
  e.kind = Expr::Kind::kRepeat;
  e.items.push_back(std::move(x));
  e.min = min;
  e.max = max;
  return e;
}

// ---- GrammarBuilder ----

uint32_t GrammarBuilder::rule(std::string_view name) {
  if (auto it = by_name_.find(name); it != by_name_.end()) return it->second;
  if (rules_.size() >= limits_.max_rules) {
    throw GrammarError("the grammar has more than " + std::to_string(limits_.max_rules) + " rules");
  }
  rules_.push_back({std::string(name), false, {}});
  by_name_.emplace(std::string(name), static_cast<uint32_t>(rules_.size() - 1));
  return static_cast<uint32_t>(rules_.size() - 1);
}

bool GrammarBuilder::has_rule(std::string_view name) const { return by_name_.find(name) != by_name_.end(); }

uint32_t GrammarBuilder::fresh_rule(std::string_view hint) {
  std::string name(hint);
  for (size_t i = rules_.size(); has_rule(name); ++i) name = std::string(hint) + "-" + std::to_string(i);
  return rule(name);
}

void GrammarBuilder::define(uint32_t r, Expr e) {
  if (rules_.at(r).defined) throw GrammarError("rule '" + rules_[r].name + "' is defined twice");
  rules_[r].defined = true;
  rules_[r].expr = std::move(e);
}

// Lowers the builder's rules into a Grammar, creating auxiliary rules for nested alternatives and
// repetitions. Builder rule ids map to grammar rule ids on first reference.
class GrammarBuilder::Lowering {
 public:
  Lowering(const GrammarBuilder& b, Grammar& g) : b_(b), g_(g) {}

  void run(uint32_t root) {
    map(root);
    // Lower rules in order of first reference; lowering may reference (append) more.
    for (size_t i = 0; i < pending_.size(); ++i) {
      const uint32_t src = pending_[i];
      const RuleDef& def = b_.rules_[src];
      if (!def.defined) throw GrammarError("rule '" + def.name + "' is used but never defined");
      define_alternatives(mapped_.at(src), def.expr);
    }
  }

 private:
  using Seq = std::vector<Element>;

  // The grammar rule for builder rule `src`.
  uint32_t map(uint32_t src) {
    auto it = mapped_.find(src);
    if (it != mapped_.end()) return it->second;
    const uint32_t id = new_rule(b_.rules_[src].name);
    mapped_[src] = id;
    pending_.push_back(src);
    return id;
  }

  uint32_t new_rule(const std::string& name) {
    if (g_.rules_.size() >= b_.limits_.max_rules) {
      throw GrammarError("the grammar has more than " + std::to_string(b_.limits_.max_rules) + " rules");
    }
    g_.rules_.emplace_back();
    g_.names_.push_back(name);
    return static_cast<uint32_t>(g_.rules_.size() - 1);
  }

  uint32_t aux_rule(uint32_t parent, const char* what) {
    return new_rule(g_.names_[parent] + "-" + what + std::to_string(++aux_count_));
  }

  void define_alternatives(uint32_t rule, const Expr& e) {
    if (e.kind == Expr::Kind::kAlt) {
      for (const Expr& item : e.items) add_alternative(rule, lower_seq(rule, item));
    } else {
      add_alternative(rule, lower_seq(rule, e));
    }
  }

  void add_alternative(uint32_t rule, const Seq& seq) {
    if (g_.elements_.size() + seq.size() + 1 > b_.limits_.max_elements) {
      throw GrammarError("the grammar is too large (more than " + std::to_string(b_.limits_.max_elements) +
                         " symbols)");
    }
    g_.rules_[rule].push_back(static_cast<uint32_t>(g_.elements_.size()));
    g_.elements_.insert(g_.elements_.end(), seq.begin(), seq.end());
    g_.elements_.push_back(Element{Element::Kind::kEnd, false, 0});
  }

  uint32_t class_id(const CharClass& c) {
    std::vector<uint32_t> key;
    for (const auto& r : c.ranges()) key.insert(key.end(), {r.lo, r.hi});
    auto it = classes_.find(key);
    if (it != classes_.end()) return it->second;
    const auto id = static_cast<uint32_t>(g_.classes_.size());
    g_.classes_.push_back(c);
    std::array<uint64_t, 2> ascii{0, 0};
    for (uint32_t cp = 0; cp < 128; ++cp) {
      if (c.contains(cp)) ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
    }
    g_.ascii_.push_back(ascii);
    classes_[key] = id;
    return id;
  }

  Element class_element(const CharClass& c, bool star) { return Element{Element::Kind::kClass, star, class_id(c)}; }
  static Element rule_element(uint32_t r) { return Element{Element::Kind::kRule, false, r}; }

  Seq lower_seq(uint32_t rule, const Expr& e) {
    Seq out;
    append(rule, e, out);
    return out;
  }

  void append(uint32_t rule, const Expr& e, Seq& out) {
    if (out.size() > b_.limits_.max_elements) throw GrammarError("the grammar is too large");
    switch (e.kind) {
      case Expr::Kind::kEmpty: return;
      case Expr::Kind::kLiteral: {
        size_t i = 0;
        uint32_t cp = 0;
        while (i < e.text.size() && tokenizer::decode_utf8(e.text, i, cp)) out.push_back(class_element(CharClass::of(cp), false));
        return;
      }
      case Expr::Kind::kClass: out.push_back(class_element(e.cls, false)); return;
      case Expr::Kind::kRef: out.push_back(rule_element(map(e.rule))); return;
      case Expr::Kind::kSeq:
        for (const Expr& item : e.items) append(rule, item, out);
        return;
      case Expr::Kind::kAlt: {
        const uint32_t a = aux_rule(rule, "alt");
        define_alternatives(a, e);
        out.push_back(rule_element(a));
        return;
      }
      case Expr::Kind::kRepeat: append_repeat(rule, e, out); return;
    }
  }

  // x{min,max}: min copies of x, then either a star (a class: one looping element; otherwise a
  // right-recursive rule R ::= x R | "") or max-min nested optional rules O ::= x O' | "".
  void append_repeat(uint32_t rule, const Expr& e, Seq& out) {
    const Expr& x = e.items.at(0);
    if (e.min > e.max) throw GrammarError("repetition {" + std::to_string(e.min) + "," + std::to_string(e.max) + "}: min exceeds max");
    const uint32_t bound = e.max == Expr::kUnbounded ? e.min : e.max;
    if (bound > b_.limits_.max_repeat) {
      throw GrammarError("repetition count " + std::to_string(bound) + " exceeds the limit of " +
                         std::to_string(b_.limits_.max_repeat));
    }
    const bool is_class = x.kind == Expr::Kind::kClass;
    const bool simple = is_class || x.kind == Expr::Kind::kRef || x.kind == Expr::Kind::kLiteral;
    // The loop rules below repeat x through a tail call after each of x's alternatives, inlined
    // (R ::= x1 R | x2 R | ""), not through a rule of its own (R ::= X R, X ::= x1 | x2): then a
    // token spanning several repetitions stays inside one rule, which is what makes the masks
    // of ( [^"\\] | "\\" escape )* cheap (token_masks.h).
    std::vector<Seq> bodies;
    if (x.kind == Expr::Kind::kAlt) {
      for (const Expr& a : x.items) bodies.push_back(lower_seq(rule, a));
    } else {
      bodies.push_back(lower_seq(rule, x));
    }
    if (e.min > 0) {
      // A sequence is copied in place (so what follows it stays in this rule); an alternation, or
      // a long sequence repeated often, is lowered once as its own rule that each copy references.
      Seq item = bodies[0];
      if (!simple && (bodies.size() > 1 || bodies[0].size() * e.min > 256)) {
        const uint32_t r = aux_rule(rule, "item");
        for (const Seq& b : bodies) add_alternative(r, b);
        item = {rule_element(r)};
      }
      for (uint32_t i = 0; i < e.min; ++i) {
        out.insert(out.end(), item.begin(), item.end());
        if (out.size() > b_.limits_.max_elements) throw GrammarError("the grammar is too large");
      }
    }
    if (e.max == Expr::kUnbounded) {
      if (is_class) {
        out.push_back(class_element(x.cls, true));
        return;
      }
      const uint32_t r = aux_rule(rule, "star");
      add_loop(r, bodies, r, true);
      out.push_back(rule_element(r));
      return;
    }
    if (e.max == e.min) return;
    // Build the optional chain from the innermost: O_k ::= x1 O_{k+1} | x2 O_{k+1} | "".
    uint32_t next = 0;
    bool has_next = false;
    for (uint32_t k = e.max - e.min; k > 0; --k) {
      const uint32_t r = aux_rule(rule, "opt");
      add_loop(r, bodies, next, has_next);
      next = r;
      has_next = true;
    }
    out.push_back(rule_element(next));
  }

  // r ::= body_1 tail | body_2 tail | ... | ""   (tail omitted when !with_tail)
  void add_loop(uint32_t r, const std::vector<Seq>& bodies, uint32_t tail, bool with_tail) {
    for (const Seq& b : bodies) {
      Seq body = b;
      if (with_tail) body.push_back(rule_element(tail));
      add_alternative(r, body);
    }
    add_alternative(r, {});
  }

  const GrammarBuilder& b_;
  Grammar& g_;
  std::map<uint32_t, uint32_t> mapped_;
  std::vector<uint32_t> pending_;
  std::map<std::vector<uint32_t>, uint32_t> classes_;
  uint32_t aux_count_ = 0;
};

namespace {

// Refuses left recursion: a rule that can reach itself without consuming a code point would make
// the matcher's expansion loop forever.
void check_left_recursion(const Grammar& g) {
  const size_t n = g.n_rules();
  std::vector<char> nullable(n, 0);
  auto element_nullable = [&](const Element& el) {
    if (el.kind == Element::Kind::kClass) return el.star;
    return el.kind == Element::Kind::kRule ? nullable[el.arg] != 0 : true;
  };
  // Nullable rules by a work list, in time linear in the grammar (a fixpoint of passes over all
  // rules takes one pass per link of a chain r1 ::= r2, r2 ::= r3, ..., rn ::= "": quadratic).
  // Per alternative: how many of its rule references are not known nullable yet (kDead: it has a
  // class that must match a code point); per rule: the alternatives that reference it.
  constexpr uint32_t kDead = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> unknown, owner, queue;
  std::vector<std::vector<uint32_t>> users(n);
  auto mark = [&](uint32_t r) {
    if (!nullable[r]) nullable[r] = 1, queue.push_back(r);
  };
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t start : g.alternatives(r)) {
      const auto a = static_cast<uint32_t>(unknown.size());
      uint32_t count = 0;
      for (uint32_t i = start; g.element(i).kind != Element::Kind::kEnd && count != kDead; ++i) {
        const Element& el = g.element(i);
        if (el.kind == Element::Kind::kClass && !el.star) count = kDead;
        if (el.kind == Element::Kind::kRule) ++count;
      }
      unknown.push_back(count);
      owner.push_back(r);
      if (count == 0) mark(r);
      if (count == 0 || count == kDead) continue;
      for (uint32_t i = start; g.element(i).kind != Element::Kind::kEnd; ++i) {
        if (g.element(i).kind == Element::Kind::kRule) users[g.element(i).arg].push_back(a);
      }
    }
  }
  while (!queue.empty()) {
    const uint32_t s = queue.back();
    queue.pop_back();
    for (uint32_t a : users[s]) {
      if (--unknown[a] == 0) mark(owner[a]);
    }
  }
  // Edges r -> s: s can come first in r. Iterative DFS for a cycle.
  std::vector<std::vector<uint32_t>> first(n);
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t start : g.alternatives(r)) {
      for (uint32_t i = start; g.element(i).kind != Element::Kind::kEnd; ++i) {
        const Element& el = g.element(i);
        if (el.kind == Element::Kind::kRule) first[r].push_back(el.arg);
        if (!element_nullable(el)) break;
      }
    }
  }
  std::vector<char> color(n, 0);  // 0 new, 1 on the path, 2 done
  for (uint32_t s = 0; s < n; ++s) {
    if (color[s]) continue;
    std::vector<std::pair<uint32_t, size_t>> stack{{s, 0}};
    color[s] = 1;
    while (!stack.empty()) {
      auto& [r, next] = stack.back();
      if (next == first[r].size()) {
        color[r] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t t = first[r][next++];
      if (color[t] == 1) {
        throw GrammarError("rule '" + g.rule_name(t) +
                           "' is left-recursive: it can reach itself without consuming a character");
      }
      if (color[t] == 0) {
        color[t] = 1;
        stack.emplace_back(t, 0);
      }
    }
  }
}

}  // namespace

std::shared_ptr<const Grammar> GrammarBuilder::build(uint32_t root) {
  auto g = std::make_shared<Grammar>();
  if (root >= rules_.size()) throw GrammarError("the grammar has no root rule");
  Lowering(*this, *g).run(root);
  check_left_recursion(*g);
  return g;
}

std::string Grammar::dump() const {
  std::string s;
  for (uint32_t r = 0; r < rules_.size(); ++r) {
    s += names_[r] + " ::=";
    for (size_t a = 0; a < rules_[r].size(); ++a) {
      if (a > 0) s += " |";
      for (uint32_t i = rules_[r][a]; elements_[i].kind != Element::Kind::kEnd; ++i) {
        const Element& el = elements_[i];
        s += " ";
        s += el.kind == Element::Kind::kRule ? names_[el.arg] : classes_[el.arg].describe() + (el.star ? "*" : "");
      }
      if (elements_[rules_[r][a]].kind == Element::Kind::kEnd) s += " \"\"";
    }
    s += "\n";
  }
  return s;
}

}  // namespace engine::grammar
