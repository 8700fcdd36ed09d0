// Expression x automaton products (see intersect.h).
#include "engine/text/grammar/intersect.h"

#include <map>
#include <memory>
#include <tuple>

#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

namespace {

constexpr int kMaxInlineDepth = 64;

// Builds the product. A continuation is what remains after the piece being matched: the items of
// a sequence from `next` on, or a repetition with `must` more copies required and `may` more
// allowed, each followed by its `parent` continuation (kFinal: the end of the whole expression).
class Product {
 public:
  Product(const Dfa& dfa, GrammarBuilder& b, size_t max_rules) : dfa_(dfa), b_(b), max_rules_(max_rules) {}

  Expr run(const Expr& e) {
    Expr out = go(e, dfa_.start(), kFinal, 0);
    // Rules are defined here, not where they are first referenced, so loops need no recursion.
    while (!pending_.empty()) {
      const auto [cont, state, rule] = pending_.back();
      pending_.pop_back();
      b_.define(rule, body(cont, state));
    }
    return out;
  }

 private:
  static constexpr uint32_t kFinal = 0;
  struct Cont {
    const Expr* e = nullptr;  // a kSeq, or a kRepeat
    uint32_t next = 0;        // kSeq: the first item still to match
    uint32_t must = 0;        // kRepeat: copies still required
    uint32_t may = 0;         // kRepeat: optional copies left (Expr::kUnbounded: any number)
    uint32_t parent = kFinal;
  };
  using ContKey = std::tuple<const Expr*, uint32_t, uint32_t, uint32_t, uint32_t>;
  static ContKey key(const Cont& c) { return {c.e, c.next, c.must, c.may, c.parent}; }

  uint32_t cont(Cont c) {
    // The empty rest of a sequence, or a repetition with nothing left, is its parent.
    if (c.e->kind == Expr::Kind::kSeq && c.next >= c.e->items.size()) return c.parent;
    if (c.e->kind == Expr::Kind::kRepeat && c.must == 0 && c.may == 0) return c.parent;
    auto [it, added] = conts_index_.emplace(key(c), static_cast<uint32_t>(conts_.size() + 1));
    if (added) conts_.push_back(c);
    return it->second;
  }
  const Cont& at(uint32_t id) const { return conts_[id - 1]; }

  // What continuation `k` matches from `state`: a rule, or for the end, "" or nothing.
  Expr then(uint32_t k, uint32_t state) {
    if (k == kFinal) return dfa_.accepting(state) ? empty() : never("");
    auto [it, added] = rules_.emplace(std::make_pair(k, state), 0);
    if (added) {
      if (rules_.size() > max_rules_) {
        throw GrammarError("enforcing both constraints needs more than " + std::to_string(max_rules_) + " rules");
      }
      it->second = b_.fresh_rule("both");
      pending_.emplace_back(k, state, it->second);
    }
    return ref(it->second);
  }

  Expr body(uint32_t k, uint32_t state) {
    const Cont c = at(k);
    if (c.e->kind == Expr::Kind::kSeq) {
      return go(c.e->items[c.next], state, cont({c.e, c.next + 1, 0, 0, c.parent}), 0);
    }
    const Expr& x = c.e->items.at(0);
    if (c.must > 0) return go(x, state, cont({c.e, 0, c.must - 1, c.may, c.parent}), 0);
    const uint32_t may = c.may == Expr::kUnbounded ? c.may : c.may - 1;
    return alt({then(c.parent, state), go(x, state, cont({c.e, 0, 0, may, c.parent}), 0)});
  }

  // A copy of a rule's expression that stays put (continuations point into it) while new rules
  // grow the builder's.
  const Expr& inlined(uint32_t rule) {
    auto it = inlined_.find(rule);
    if (it != inlined_.end()) return *it->second;
    const Expr* def = b_.expr(rule);
    if (def == nullptr) throw GrammarError("rule '" + b_.name(rule) + "' is used but never defined");
    return *inlined_.emplace(rule, std::make_unique<Expr>(*def)).first->second;
  }

  Expr go(const Expr& e, uint32_t state, uint32_t k, int depth) {
    switch (e.kind) {
      case Expr::Kind::kEmpty: return then(k, state);
      case Expr::Kind::kLiteral: {
        size_t i = 0;
        uint32_t cp = 0;
        while (i < e.text.size() && tokenizer::decode_utf8(e.text, i, cp)) {
          parts_.clear();
          dfa_.split(state, CharClass::of(cp), parts_);
          if (parts_.empty()) return never("");
          state = parts_[0].second;
        }
        return seq({lit(e.text), then(k, state)});
      }
      case Expr::Kind::kClass: {
        if (e.cls.empty()) return e;  // a never() keeps its reason
        parts_.clear();
        dfa_.split(state, e.cls, parts_);
        const std::vector<std::pair<CharClass, uint32_t>> parts = parts_;
        std::vector<Expr> alts;
        for (const auto& [part, next] : parts) alts.push_back(seq({cls(part), then(k, next)}));
        return alts.empty() ? never("") : alt(std::move(alts));
      }
      case Expr::Kind::kRef: {
        if (depth >= kMaxInlineDepth) throw GrammarError("rule '" + b_.name(e.rule) + "' is recursive");
        return go(inlined(e.rule), state, k, depth + 1);
      }
      case Expr::Kind::kSeq:
        if (e.items.empty()) return then(k, state);
        return go(e.items[0], state, cont({&e, 1, 0, 0, k}), depth);
      case Expr::Kind::kAlt: {
        std::vector<Expr> alts;
        for (const Expr& item : e.items) alts.push_back(go(item, state, k, depth));
        return alt(std::move(alts));
      }
      case Expr::Kind::kRepeat: {
        const uint32_t may = e.max == Expr::kUnbounded ? Expr::kUnbounded : e.max - std::min(e.min, e.max);
        const uint32_t c = cont({&e, 0, e.min, may, k});
        return c == k ? then(k, state) : body(c, state);
      }
    }
    return never("");
  }

  const Dfa& dfa_;
  GrammarBuilder& b_;
  size_t max_rules_;
  std::vector<Cont> conts_;  // continuation id - 1
  std::map<ContKey, uint32_t> conts_index_;
  std::map<std::pair<uint32_t, uint32_t>, uint32_t> rules_;  // (continuation, state) -> rule
  std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> pending_;
  std::vector<std::pair<CharClass, uint32_t>> parts_;
  std::map<uint32_t, std::unique_ptr<Expr>> inlined_;
};

}  // namespace

Expr intersect(const Expr& e, const Dfa& dfa, GrammarBuilder& b, size_t max_rules) {
  return Product(dfa, b, max_rules).run(e);
}

// ---- JsonLengthDfa ----

uint32_t JsonLengthDfa::count_after(uint32_t count) const {
  return max_ == Expr::kUnbounded ? std::min(count + 1, min_) : count + 1;
}

void JsonLengthDfa::split(uint32_t state, const CharClass& c, std::vector<std::pair<CharClass, uint32_t>>& out) const {
  const uint32_t count = state / kPhases, phase = state % kPhases;
  const uint32_t done = count_after(count);
  const bool room = max_ == Expr::kUnbounded || count < max_;
  auto to = [&](const CharClass& part, uint32_t n, uint32_t ph) {
    if (!part.empty()) out.emplace_back(part, n * kPhases + ph);
  };
  if (!room && phase == kPlain) return;
  switch (phase) {
    case kPlain:
      to(c.intersect(CharClass().add('\\', '\\').complement()), done, kPlain);
      to(c.intersect(CharClass::of('\\')), count, kEscape);
      return;
    case kEscape:
      to(c.intersect(CharClass::of('u')), count, kHex1);
      to(c.intersect(CharClass::of('u').complement()), done, kPlain);
      return;
    case kHex4: to(c, done, kPlain); return;
    default: to(c, count, phase + 1); return;
  }
}

bool JsonLengthDfa::accepting(uint32_t state) const {
  return state % kPhases == kPlain && state / kPhases >= min_;
}

}  // namespace engine::grammar
