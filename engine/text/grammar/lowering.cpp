// Lowering the builder's expressions to the flat program (grammar.h), factoring alternatives
// that share a first symbol, then build()'s checks (grammar_checks.h).
#include <functional>
#include <unordered_map>

#include "engine/text/grammar/grammar.h"
#include "engine/text/grammar/grammar_checks.h"
#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

namespace {

// One symbol of an alternative being factored: a code point of a literal (e == null), or any
// other expression that is not a sequence.
struct Atom {
  const Expr* e = nullptr;
  uint32_t cp = 0;
};
using Atoms = std::vector<Atom>;

// `e` as a flat list of atoms: sequences spliced in, literals split into code points.
void flatten(const Expr& e, Atoms& out) {
  switch (e.kind) {
    case Expr::Kind::kEmpty: return;
    case Expr::Kind::kSeq:
      for (const Expr& item : e.items) flatten(item, out);
      return;
    case Expr::Kind::kLiteral: {
      size_t i = 0;
      uint32_t cp = 0;
      while (i < e.text.size() && tokenizer::decode_utf8(e.text, i, cp)) out.push_back({nullptr, cp});
      return;
    }
    case Expr::Kind::kAlt:
      if (e.items.size() == 1) return flatten(e.items[0], out);
      out.push_back({&e, 0});
      return;
    default: out.push_back({&e, 0});
  }
}

bool same_expr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.text != b.text || a.rule != b.rule || a.min != b.min || a.max != b.max ||
      !(a.cls == b.cls) || a.items.size() != b.items.size()) {
    return false;
  }
  for (size_t i = 0; i < a.items.size(); ++i) {
    if (!same_expr(a.items[i], b.items[i])) return false;
  }
  return true;
}

uint64_t hash_expr(const Expr& e) {
  uint64_t h = 0x9E3779B97F4A7C15ull * (static_cast<uint64_t>(e.kind) + 1);
  auto mix = [&](uint64_t x) { h = (h ^ x) * 0x100000001B3ull; };
  mix(e.rule);
  mix(e.min);
  mix(e.max);
  for (unsigned char c : e.text) mix(c);
  for (const auto& r : e.cls.ranges()) mix((uint64_t{r.lo} << 32) | r.hi);
  for (const Expr& item : e.items) mix(hash_expr(item));
  return h;
}

// A never() (an empty class) factors with nothing: each keeps its own reason.
bool is_never(const Atom& a) { return a.e != nullptr && a.e->kind == Expr::Kind::kClass && a.e->cls.empty(); }

bool same_atom(const Atom& a, const Atom& b) {
  if ((a.e == nullptr) != (b.e == nullptr)) return false;
  if (a.e == nullptr) return a.cp == b.cp;
  return !is_never(a) && !is_never(b) && (a.e == b.e || same_expr(*a.e, *b.e));
}

}  // namespace

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

  // Why class c matches nothing (never()'s reason), or "".
  std::string why(uint32_t c) const {
    auto it = why_.find(c);
    return it == why_.end() ? std::string() : it->second;
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

  // rule ::= e's alternatives, those sharing leading symbols factored: alternatives that begin
  // with the same atoms become that common prefix followed by one new rule of what differs (a
  // trie, when the alternatives are literals), level by level through a work list.
  void define_alternatives(uint32_t rule, const Expr& e) {
    std::vector<const Expr*> items;
    std::vector<const Expr*> todo{&e};
    while (!todo.empty()) {  // nested alternations spliced in, in order
      const Expr* x = todo.back();
      todo.pop_back();
      if (x->kind != Expr::Kind::kAlt) {
        items.push_back(x);
        continue;
      }
      for (size_t i = x->items.size(); i-- > 0;) todo.push_back(&x->items[i]);
    }
    if (items.size() == 1) {
      add_alternative(rule, lower_seq(rule, *items[0]));
      return;
    }
    std::vector<Atoms> atoms(items.size());
    for (size_t i = 0; i < items.size(); ++i) flatten(*items[i], atoms[i]);
    struct Job {
      uint32_t rule;
      size_t depth;                // atoms already written by the rules above
      std::vector<uint32_t> alts;  // indexes into `atoms`
    };
    std::vector<Job> jobs;
    jobs.push_back({rule, 0, {}});
    for (uint32_t i = 0; i < atoms.size(); ++i) jobs.back().alts.push_back(i);
    while (!jobs.empty()) {
      Job job = std::move(jobs.back());
      jobs.pop_back();
      // Groups by first atom, in order of first appearance; the ones that end here: one "".
      std::vector<std::vector<uint32_t>> groups;
      std::unordered_multimap<uint64_t, size_t> by_key;
      bool ends = false;
      for (uint32_t a : job.alts) {
        if (atoms[a].size() == job.depth) {
          if (!ends) add_alternative(job.rule, {});
          ends = true;
          continue;
        }
        const Atom& first = atoms[a][job.depth];
        const uint64_t key = first.e == nullptr ? first.cp : hash_expr(*first.e) ^ 0x8000000000000000ull;
        size_t group = groups.size();
        auto [lo, hi] = by_key.equal_range(key);
        for (auto it = lo; it != hi; ++it) {
          if (same_atom(atoms[groups[it->second][0]][job.depth], first)) group = it->second;
        }
        if (group == groups.size()) {
          groups.emplace_back();
          by_key.emplace(key, group);
        }
        groups[group].push_back(a);
      }
      for (std::vector<uint32_t>& members : groups) {
        const Atoms& lead = atoms[members[0]];
        if (members.size() == 1) {
          add_alternative(job.rule, lower_atoms(job.rule, lead, job.depth, lead.size()));
          continue;
        }
        size_t common = lead.size();
        for (uint32_t m : members) {
          size_t k = job.depth + 1;
          while (k < common && k < atoms[m].size() && same_atom(atoms[m][k], lead[k])) ++k;
          common = std::min(common, k);
        }
        const uint32_t rest = aux_rule(job.rule, "alt");
        Seq s = lower_atoms(job.rule, lead, job.depth, common);
        s.push_back(rule_element(rest));
        add_alternative(job.rule, s);
        jobs.push_back({rest, common, std::move(members)});
      }
    }
  }

  Seq lower_atoms(uint32_t rule, const Atoms& atoms, size_t from, size_t to) {
    Seq out;
    for (size_t i = from; i < to; ++i) {
      if (atoms[i].e == nullptr) {
        out.push_back(class_element(CharClass::of(atoms[i].cp), false));
      } else {
        append(rule, *atoms[i].e, out);
      }
    }
    return out;
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

  uint32_t add_class(const CharClass& c) {
    const auto id = static_cast<uint32_t>(g_.classes_.size());
    g_.classes_.push_back(c);
    std::array<uint64_t, 2> ascii{0, 0};
    for (uint32_t cp = 0; cp < 128; ++cp) {
      if (c.contains(cp)) ascii[cp >> 6] |= uint64_t{1} << (cp & 63);
    }
    g_.ascii_.push_back(ascii);
    return id;
  }

  uint32_t class_id(const CharClass& c) {
    std::vector<uint32_t> key;
    for (const auto& r : c.ranges()) key.insert(key.end(), {r.lo, r.hi});
    auto it = classes_.find(key);
    if (it != classes_.end()) return it->second;
    const uint32_t id = add_class(c);
    classes_[key] = id;
    return id;
  }

  // A never(): an empty class of its own, so build() can say why its alternative died.
  Element never_element(const std::string& why) {
    const uint32_t id = add_class(CharClass());
    if (!why.empty()) why_[id] = why;
    return Element{Element::Kind::kClass, false, id};
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
      case Expr::Kind::kClass:
        out.push_back(e.cls.empty() ? never_element(e.text) : class_element(e.cls, false));
        return;
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
    if (is_class && x.cls.empty()) {  // never() repeated: nothing, or (min > 0) dead
      if (e.min > 0) out.push_back(never_element(x.text));
      return;
    }
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
  std::unordered_map<uint32_t, std::string> why_;  // never() classes: their reasons
  uint32_t aux_count_ = 0;
};

std::shared_ptr<const Grammar> GrammarBuilder::build(uint32_t root) {
  auto g = std::make_shared<Grammar>();
  if (root >= rules_.size()) throw GrammarError("the grammar has no root rule");
  Lowering lowering(*this, *g);
  lowering.run(root);
  prune_and_check(*g, [&](uint32_t c) { return lowering.why(c); });
  return g;
}

}  // namespace engine::grammar
