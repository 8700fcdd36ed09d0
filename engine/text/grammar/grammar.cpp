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

CharClass CharClass::from_sorted(const std::vector<Range>& ranges) {
  CharClass c;
  for (const Range& r : ranges) {
    if (!c.ranges_.empty() && r.lo <= c.ranges_.back().hi + 1) {
      c.ranges_.back().hi = std::max(c.ranges_.back().hi, r.hi);
    } else {
      c.ranges_.push_back(r);
    }
  }
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

CharClass CharClass::intersect(const CharClass& other) const {
  CharClass out;
  size_t j = 0;
  for (const Range& r : ranges_) {
    while (j < other.ranges_.size() && other.ranges_[j].hi < r.lo) ++j;
    for (size_t k = j; k < other.ranges_.size() && other.ranges_[k].lo <= r.hi; ++k) {
      out.ranges_.push_back({std::max(r.lo, other.ranges_[k].lo), std::min(r.hi, other.ranges_[k].hi)});
    }
  }
  return out;  // sorted, disjoint and non-adjacent, as both inputs are
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

Expr never(std::string why) {
  Expr e;
  e.kind = Expr::Kind::kClass;
  e.text = std::move(why);
  return e;
}

Expr explain(Expr e, std::string why) {
  // An alternation whose first branch is never(why): build() reports the first dead branch of a
  // rule with no live one, so `why` is what a dead `e` says; a live `e` drops the never().
  return alt({never(std::move(why)), std::move(e)});
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
