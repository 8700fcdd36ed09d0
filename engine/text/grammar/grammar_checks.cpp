// What build() checks and mends in a lowered grammar: dead alternatives removed (so the matcher
// never reaches a state it cannot finish from), left recursion refused; and the restriction of a
// grammar to the characters a vocabulary can write.
//
// An alternative is live when each of its symbols can match some text: a class with a code point
// in it (or a star, which may match nothing), a rule with a live alternative. Live rules are found
// by a work list over "how many of an alternative's rules are not known live yet", in time linear
// in the grammar. Keeping only live alternatives leaves every rule that is still referenced live,
// so from any stack the matcher can build, each pending symbol can still be completed.
#include <functional>
#include <limits>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

class GrammarPruner {
 public:
  // Removes dead alternatives from `g` (and star classes that can match nothing). `why(c)` says
  // why empty class c matches nothing (empty: no reason known). Throws GrammarError when rule 0 is
  // dead, with the reason found along its first dead path.
  static void prune(Grammar& g, const std::function<std::string(uint32_t)>& why);
  static void check_left_recursion(const Grammar& g);

 private:
  static std::vector<char> live_rules(const Grammar& g);
  static std::string dead_reason(const Grammar& g, const std::vector<char>& live,
                                 const std::function<std::string(uint32_t)>& why);
  static bool dead_class(const Grammar& g, const Element& el) {
    return el.kind == Element::Kind::kClass && !el.star && g.classes_[el.arg].empty();
  }
};

std::vector<char> GrammarPruner::live_rules(const Grammar& g) {
  const size_t n = g.n_rules();
  std::vector<char> live(n, 0);
  constexpr uint32_t kDead = std::numeric_limits<uint32_t>::max();
  std::vector<uint32_t> unknown, owner, queue;
  std::vector<std::vector<uint32_t>> users(n);
  auto mark = [&](uint32_t r) {
    if (!live[r]) live[r] = 1, queue.push_back(r);
  };
  for (uint32_t r = 0; r < n; ++r) {
    for (uint32_t start : g.alternatives(r)) {
      const auto a = static_cast<uint32_t>(unknown.size());
      uint32_t count = 0;
      for (uint32_t i = start; g.element(i).kind != Element::Kind::kEnd && count != kDead; ++i) {
        if (dead_class(g, g.element(i))) count = kDead;
        if (g.element(i).kind == Element::Kind::kRule) ++count;
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
  return live;
}

// Follows the first dead symbol of the first alternative down to a never() or an empty class.
std::string GrammarPruner::dead_reason(const Grammar& g, const std::vector<char>& live,
                                       const std::function<std::string(uint32_t)>& why) {
  std::vector<char> seen(g.n_rules(), 0);
  uint32_t r = 0;
  for (;;) {
    seen[r] = 1;
    const auto& alts = g.alternatives(r);
    if (alts.empty()) return "rule '" + g.rule_name(r) + "' has no alternative";
    // Prefer an alternative whose dead symbol says why (a never() or an empty class).
    uint32_t next = std::numeric_limits<uint32_t>::max();
    for (uint32_t start : alts) {
      for (uint32_t i = start; g.element(i).kind != Element::Kind::kEnd; ++i) {
        const Element& el = g.element(i);
        if (dead_class(g, el)) {
          const std::string reason = why(el.arg);
          return reason.empty() ? "rule '" + g.rule_name(r) + "' holds a class that matches no character" : reason;
        }
        if (el.kind == Element::Kind::kRule && !live[el.arg]) {
          if (!seen[el.arg] && next == std::numeric_limits<uint32_t>::max()) next = el.arg;
          break;
        }
      }
    }
    if (next == std::numeric_limits<uint32_t>::max()) {
      return "rule '" + g.rule_name(r) + "' can never end: each of its alternatives leads back into itself";
    }
    r = next;
  }
}

void GrammarPruner::prune(Grammar& g, const std::function<std::string(uint32_t)>& why) {
  const std::vector<char> live = live_rules(g);
  if (!live[0]) throw GrammarError("the grammar admits no text: " + dead_reason(g, live, why));
  std::vector<Element> elements;
  elements.reserve(g.elements_.size());
  for (uint32_t r = 0; r < g.n_rules(); ++r) {
    std::vector<uint32_t> kept;
    for (uint32_t start : g.rules_[r]) {
      bool ok = true;
      for (uint32_t i = start; ok && g.element(i).kind != Element::Kind::kEnd; ++i) {
        const Element& el = g.element(i);
        ok = !dead_class(g, el) && (el.kind != Element::Kind::kRule || live[el.arg]);
      }
      if (!ok) continue;
      kept.push_back(static_cast<uint32_t>(elements.size()));
      for (uint32_t i = start; g.element(i).kind != Element::Kind::kEnd; ++i) {
        const Element& el = g.element(i);
        if (el.kind == Element::Kind::kClass && g.classes_[el.arg].empty()) continue;  // a star of nothing
        elements.push_back(el);
      }
      elements.push_back(Element{Element::Kind::kEnd, false, 0});
    }
    g.rules_[r] = std::move(kept);
  }
  g.elements_ = std::move(elements);
}

// Refuses left recursion: a rule that can reach itself without consuming a code point would make
// the matcher's expansion loop forever.
void GrammarPruner::check_left_recursion(const Grammar& g) {
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

void prune_and_check(Grammar& g, const std::function<std::string(uint32_t)>& why) {
  GrammarPruner::check_left_recursion(g);  // first: a rule that only recurses is also dead
  GrammarPruner::prune(g, why);
}

std::shared_ptr<const Grammar> Grammar::restricted(const Grammar& g, const CharClass& allowed) {
  auto out = std::make_shared<Grammar>(g);
  std::vector<std::string> lost(out->classes_.size());
  for (size_t c = 0; c < out->classes_.size(); ++c) {
    CharClass& cls = out->classes_[c];
    if (cls.empty()) continue;
    CharClass kept = cls.intersect(allowed);
    if (kept == cls) continue;
    if (kept.empty()) lost[c] = "this model's vocabulary cannot write " + cls.describe();
    cls = std::move(kept);
    for (uint32_t cp = 0; cp < 128; ++cp) {
      if (!cls.contains(cp)) out->ascii_[c][cp >> 6] &= ~(uint64_t{1} << (cp & 63));
    }
  }
  GrammarPruner::prune(*out, [&](uint32_t c) { return lost[c]; });
  return out;
}

}  // namespace engine::grammar
