// The vocabulary trie, per-position masks, and the per-step mask of a sequence.
#include "engine/text/grammar/token_masks.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>
#include <unordered_set>

#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

namespace {

// The code points that tokens can write (writable()). A token may end inside a character (its
// last bytes begin one: "a\xC3"); the matcher then needs tokens of continuation bytes to finish
// it. So a character counts when some tokens write it exactly (one token, or one that begins it and
// continuation tokens after), and when every incomplete beginning of it that a token can leave
// behind can still be finished with continuation tokens: then no token the grammar allows leads to
// a state without a way out.
CharClass writable_code_points(const std::vector<std::string>& bytes, const std::vector<int32_t>& ids,
                               bool& everything) {
  auto length_of = [](uint8_t lead) -> size_t {
    if (lead < 0x80) return 1;
    if (lead >= 0xC2 && lead <= 0xDF) return 2;
    if (lead >= 0xE0 && lead <= 0xEF) return 3;
    if (lead >= 0xF0 && lead <= 0xF4) return 4;
    return 0;
  };
  auto continuation = [](char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; };
  std::vector<char> single(256, 0);
  for (int32_t id : ids) {
    if (bytes[static_cast<size_t>(id)].size() == 1) single[static_cast<uint8_t>(bytes[static_cast<size_t>(id)][0])] = 1;
  }
  everything = true;
  for (unsigned b = 0; b < 256; ++b) everything &= single[b] || (b >= 0xC0 && b <= 0xC1) || b >= 0xF5;
  if (everything) return CharClass::any();

  std::unordered_set<std::string> conts;     // tokens of 1-3 continuation bytes
  std::unordered_set<std::string> partials;  // incomplete characters that tokens can leave
  std::vector<std::string> todo;
  std::vector<uint32_t> reached;
  // Shortest form only: an overlong "\xC0\x80" is not U+0000 to the matcher, so a vocabulary
  // with that token cannot write U+0000.
  auto whole = [&](std::string_view c) {
    size_t i = 0;
    uint32_t cp = 0;
    if (!tokenizer::decode_utf8(c, i, cp) || i != c.size()) return;
    const size_t shortest = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (c.size() == shortest) reached.push_back(cp);
  };
  for (int32_t id : ids) {
    const std::string& t = bytes[static_cast<size_t>(id)];
    whole(t);
    if (t.size() <= 3 && std::all_of(t.begin(), t.end(), continuation)) conts.insert(t);
    size_t i = t.size();
    while (i > 0 && continuation(t[i - 1])) --i;
    if (i == 0) continue;
    const size_t n = length_of(static_cast<uint8_t>(t[i - 1]));
    if (n > 1 && t.size() - (i - 1) < n && partials.insert(t.substr(i - 1)).second) todo.push_back(t.substr(i - 1));
  }
  while (!todo.empty()) {  // partials grow by continuation tokens
    const std::string p = std::move(todo.back());
    todo.pop_back();
    const size_t n = length_of(static_cast<uint8_t>(p[0]));
    for (const std::string& t : conts) {
      if (p.size() + t.size() == n) whole(p + t);
      if (p.size() + t.size() < n && partials.insert(p + t).second) todo.push_back(p + t);
    }
  }
  // Whether continuation tokens write c[k:].
  auto finishes = [&](const std::string& c, size_t k) {
    std::vector<char> at(c.size() + 1, 0);
    at[k] = 1;
    for (size_t i = k; i < c.size(); ++i) {
      for (size_t len = 1; at[i] && len <= 3 && i + len <= c.size(); ++len) {
        if (conts.count(c.substr(i, len))) at[i + len] = 1;
      }
    }
    return at[c.size()] != 0;
  };
  std::sort(reached.begin(), reached.end());
  reached.erase(std::unique(reached.begin(), reached.end()), reached.end());
  std::vector<CharClass::Range> ranges;
  for (uint32_t cp : reached) {
    std::string c;
    tokenizer::append_utf8(c, cp);
    bool ok = true;
    for (size_t k = 1; ok && k < c.size(); ++k) ok = !partials.count(c.substr(0, k)) || finishes(c, k);
    if (!ok || (cp >= 0xD800 && cp <= 0xDFFF)) continue;
    if (!ranges.empty() && ranges.back().hi + 1 == cp) ranges.back().hi = cp;
    else ranges.push_back({cp, cp});
  }
  return CharClass::from_sorted(ranges);
}

size_t bitmap_threshold(int32_t n_vocab) { return static_cast<size_t>(n_vocab) / 32 + 1; }

TokenBits zero_bits(int32_t n_vocab) { return TokenBits((static_cast<size_t>(n_vocab) + 63) / 64, 0); }

}  // namespace

// ---- TokenVocab ----

TokenVocab::TokenVocab(std::vector<std::string> token_bytes, std::vector<int32_t> eog_ids)
    : bytes_(std::move(token_bytes)), eog_(std::move(eog_ids)) {
  std::vector<char> is_eog(bytes_.size(), 0);
  for (int32_t id : eog_) {
    if (id >= 0 && static_cast<size_t>(id) < bytes_.size()) is_eog[static_cast<size_t>(id)] = 1;
  }
  for (size_t i = 0; i < bytes_.size(); ++i) {
    if (!bytes_[i].empty() && !is_eog[i]) sorted_.push_back(static_cast<int32_t>(i));
  }
  std::stable_sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) { return bytes_[a] < bytes_[b]; });
  // Preorder trie: `open` holds the node index of each depth on the current path.
  std::vector<uint32_t> open;
  std::string_view prev;
  auto close_to = [&](size_t depth, uint32_t token_end) {
    while (open.size() > depth) {
      Node& n = nodes_[open.back()];
      n.end = static_cast<uint32_t>(nodes_.size());
      n.sub_end = token_end;
      open.pop_back();
    }
  };
  for (uint32_t t = 0; t < sorted_.size(); ++t) {
    const std::string_view s = bytes_[sorted_[t]];
    size_t lcp = 0;
    while (lcp < s.size() && lcp < prev.size() && s[lcp] == prev[lcp]) ++lcp;
    close_to(lcp, t);
    for (size_t d = open.size(); d < s.size(); ++d) {
      open.push_back(static_cast<uint32_t>(nodes_.size()));
      nodes_.push_back(Node{0, t, t, 0, static_cast<uint16_t>(std::min<size_t>(d + 1, 0xFFFF)), static_cast<uint8_t>(s[d])});
    }
    nodes_[open.back()].here_end = t + 1;  // tokens ending here come first in sorted order
    max_depth_ = std::max(max_depth_, s.size());
    prev = s;
  }
  close_to(0, static_cast<uint32_t>(sorted_.size()));
  writable_ = writable_code_points(bytes_, sorted_, writes_everything_);
}

std::shared_ptr<const TokenVocab> TokenVocab::from_tokenizer(const Tokenizer& tokenizer, const std::vector<int32_t>& shown) {
  std::vector<std::string> bytes(static_cast<size_t>(tokenizer.n_vocab()));
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (!tokenizer.is_control(id)) bytes[static_cast<size_t>(id)] = std::string(tokenizer.piece(id, false));
  }
  for (int32_t id : shown) {
    if (id >= 0 && id < tokenizer.n_vocab() && !tokenizer.is_eog(id)) bytes[static_cast<size_t>(id)] = std::string(tokenizer.piece(id, true));
  }
  return std::make_shared<const TokenVocab>(std::move(bytes), tokenizer.eog_ids());
}

// ---- the trie walk ----

namespace {

// The states walks meet, interned, with their transitions cached: a walk over 150k tokens meets
// few distinct states (inside a string, every plain character leads back to the same one), so
// most trie nodes cost one table lookup instead of an automaton step. The walks of one
// compilation share a table: the walk from one position mostly meets the states of the positions
// after it (a string of maxLength n: the walk from character k meets those of k+1..n), so each
// transition is computed once per compilation, not once per walk.
class StateTable {
 public:
  static constexpr int32_t kUnknown = -2;
  static constexpr int32_t kDead = -1;
  static constexpr size_t kMaxStates = 4096;  // what one walk may meet

  explicit StateTable(Automaton& a, size_t capacity = kMaxStates) : automaton_(a), capacity_(capacity) {}

  // Forgets every state when fewer than kMaxStates slots are left, so the next walk has them.
  void make_room() {
    if (states_.size() + kMaxStates <= capacity_) return;
    states_.clear();
    next_.clear();
    by_hash_.clear();
  }

  int32_t intern(const StackSet& s) {
    const uint64_t h = s.hash();
    auto [lo, hi] = by_hash_.equal_range(h);
    for (auto it = lo; it != hi; ++it) {
      if (states_[static_cast<size_t>(it->second)].same(s)) return it->second;
    }
    if (states_.size() >= capacity_) return kUnknown;  // full: the caller steps without caching
    states_.push_back(s);
    next_.resize(states_.size() * 256, kUnknown);
    by_hash_.emplace(h, static_cast<int32_t>(states_.size() - 1));
    return static_cast<int32_t>(states_.size() - 1);
  }

  const StackSet& state(int32_t id) const { return states_[static_cast<size_t>(id)]; }

  // The state after `byte`, or kDead.
  int32_t next(int32_t id, uint8_t byte) {
    int32_t& slot = next_[static_cast<size_t>(id) * 256 + byte];
    if (slot != kUnknown) return slot;
    automaton_.advance(states_[static_cast<size_t>(id)], byte, tmp_);
    const int32_t to = tmp_.empty() ? kDead : intern(tmp_);
    if (to == kUnknown) throw GrammarError("the grammar has too many distinct states for token masking");
    next_[static_cast<size_t>(id) * 256 + byte] = to;  // (intern may have moved next_)
    return to;
  }

 private:
  Automaton& automaton_;
  size_t capacity_;
  std::vector<StackSet> states_;
  std::vector<int32_t> next_;  // [state * 256 + byte]
  std::unordered_multimap<uint64_t, int32_t> by_hash_;
  StackSet tmp_;
};

size_t walk_vocab(StateTable& table, const TokenVocab& vocab, const StackSet& start, bool local, TokenBits& accepted,
                  std::vector<int32_t>* uncertain) {
  size_t visited = 0;
  const auto& nodes = vocab.nodes();
  table.make_room();
  // state[d]: the state after the first d bytes of the current path; ended[d]: some state before
  // depth d had a rule-local stack that left its rule (only in `local` walks).
  std::vector<int32_t> state(vocab.max_depth() + 1);
  std::vector<char> ended(vocab.max_depth() + 2, 0);
  state[0] = table.intern(start);
  ended[1] = local && start.has_empty();
  size_t i = 0;
  while (i < nodes.size()) {
    const TokenVocab::Node& n = nodes[i];
    const size_t d = n.depth;
    ++visited;
    const int32_t to = d < state.size() ? table.next(state[d - 1], n.byte) : StateTable::kDead;
    if (to != StateTable::kDead) {
      state[d] = to;
      for (uint32_t t = n.first; t < n.here_end; ++t) set_bit(accepted, vocab.sorted_id(t));
      ended[d + 1] = ended[d] || (local && table.state(to).has_empty());
      ++i;
      continue;
    }
    if (ended[d] && uncertain != nullptr) {
      for (uint32_t t = n.first; t < n.sub_end; ++t) uncertain->push_back(vocab.sorted_id(t));
    }
    i = n.end;
  }
  return visited;
}

}  // namespace

size_t walk_vocab(Automaton& automaton, const TokenVocab& vocab, const StackSet& start, bool local,
                  TokenBits& accepted, std::vector<int32_t>* uncertain) {
  StateTable table(automaton);
  return walk_vocab(table, vocab, start, local, accepted, uncertain);
}

// ---- CompiledGrammar ----

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocab> vocab,
                                 size_t max_visits)
    : grammar_(std::move(grammar)), vocab_(std::move(vocab)) {
  if (!vocab_->writes_everything()) grammar_ = Grammar::restricted(*grammar_, vocab_->writable());
  const Grammar& g = *grammar_;
  Automaton automaton(g);
  masks_.resize(g.elements().size());
  const int32_t n_vocab = vocab_->n_vocab();
  TokenBits bits = zero_bits(n_vocab);
  StackSet start;
  size_t visited = 0;
  // The start state, as each sequence's matcher will expand it: a grammar the automaton's limits
  // refuse from the start is refused here, when the request is checked, not when it runs.
  automaton.start_root(start);
  StateTable table(automaton, 2 * StateTable::kMaxStates);  // shared by the walks below
  for (uint32_t p = 0; p < g.elements().size(); ++p) {
    if (g.element(p).kind != Element::Kind::kClass) continue;
    std::fill(bits.begin(), bits.end(), 0);
    auto mask = std::make_unique<PositionMask>();
    automaton.start_at(p, start);
    visited += walk_vocab(table, *vocab_, start, true, bits, &mask->uncertain);
    if (visited > max_visits) {
      throw GrammarError("the grammar is too large to prepare for this vocabulary (" + std::to_string(n_positions_) +
                         " of its positions took the whole budget); reduce maxLength, maxItems or the schema's size");
    }
    size_t count = 0;
    for (uint64_t w : bits) count += static_cast<size_t>(__builtin_popcountll(w));
    if (count > bitmap_threshold(n_vocab)) {
      mask->accepted_bits = bits;
    } else {
      for (size_t w = 0; w < bits.size(); ++w) {
        for (uint64_t x = bits[w]; x != 0; x &= x - 1) {
          mask->accepted.push_back(static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(x))));
        }
      }
    }
    masks_[p] = std::move(mask);
    ++n_positions_;
  }
}

// ---- TokenConstraint ----

TokenConstraint::TokenConstraint(std::shared_ptr<const CompiledGrammar> compiled)
    : compiled_(std::move(compiled)),
      matcher_(compiled_->grammar()),
      automaton_(*compiled_->grammar()),
      mask_(zero_bits(compiled_->vocab().n_vocab())),
      grouped_bits_(mask_) {}

// Past this many live stacks, allowed() checks their uncertain tokens against all of them at
// once: one walk whose automaton expands the states the stacks share once, rather than one walk
// per stack, each expanding them again. ("a"?){200} ("a"?){200} keeps 400 stacks alive, each
// reaching the others' states: per stack that cost n^2 per token, 95 % of a fuzz input's time.
constexpr size_t kGroupFrom = 8;

const TokenBits& TokenConstraint::allowed() {
  std::fill(mask_.begin(), mask_.end(), 0);
  const TokenVocab& vocab = compiled_->vocab();
  const StackSet& stacks = matcher_.stacks();
  const bool grouped = stacks.size() > kGroupFrom;
  if (grouped) {
    std::fill(grouped_bits_.begin(), grouped_bits_.end(), 0);
    group_.clear();
  }
  tops_done_.clear();
  for (size_t k = 0; k < stacks.size(); ++k) {
    const auto stack = stacks.positions(k);
    if (stack.empty()) continue;  // complete: handled by the end-of-generation tokens below
    // this stack alone, for the walks of one stack (a grouped stack goes into group_ instead)
    auto alone = [&]() -> const StackSet& {
      one_.clear();
      one_.add(stack, stacks.partial(k));
      return one_;
    };
    const CompiledGrammar::PositionMask* pm = stacks.partial(k) == 0 ? compiled_->at(stack.back()) : nullptr;
    if (pm == nullptr) {  // inside a character: few tokens can continue it; walk them all
      walk_vocab(automaton_, vocab, alone(), false, mask_, nullptr);
      continue;
    }
    if (std::find(tops_done_.begin(), tops_done_.end(), stack.back()) == tops_done_.end()) {
      tops_done_.push_back(stack.back());
      if (!pm->accepted_bits.empty()) {
        for (size_t w = 0; w < mask_.size(); ++w) mask_[w] |= pm->accepted_bits[w];
      }
      for (int32_t id : pm->accepted) set_bit(mask_, id);
    }
    if (pm->uncertain.empty()) continue;
    if (!grouped) {
      add_uncertain(alone(), pm->uncertain);
      continue;
    }
    // A token uncertain for one stack and refused by another's top is refused by that whole
    // stack too, so checking the union against all of them sets exactly the same bits.
    group_.add(stack, 0);
    for (int32_t id : pm->uncertain) set_bit(grouped_bits_, id);
  }
  if (!group_.empty()) {
    grouped_ids_.clear();
    for (uint32_t i = 0; i < vocab.n_sorted(); ++i) {
      const int32_t id = vocab.sorted_id(i);
      if (test_bit(grouped_bits_, id) && !test_bit(mask_, id)) grouped_ids_.push_back(id);
    }
    add_uncertain(group_, grouped_ids_);
    group_.clear();
  }
  if (matcher_.can_end()) {
    for (int32_t id : vocab.eog_ids()) {
      if (id >= 0 && id < vocab.n_vocab()) set_bit(mask_, id);
    }
  }
  return mask_;
}

// The uncertain tokens come in byte order (a preorder walk of the trie), so they are walked as a
// trie too: the states after each prefix of the previous token are kept (walk_[d]: after d bytes),
// a token starts from the longest prefix it shares with it, and every token behind a prefix the
// stacks cannot take is skipped unchecked. After a number, that is all but the few tokens that
// begin with , } or ].
void TokenConstraint::add_uncertain(const StackSet& start, const std::vector<int32_t>& ids) {
  const TokenVocab& vocab = compiled_->vocab();
  if (walk_.size() < vocab.max_depth() + 1) walk_.resize(vocab.max_depth() + 1);
  walk_[0] = start;
  std::string_view prev;
  size_t alive = 0;  // walk_[0..alive] hold prev's prefixes; prev dies at byte `alive` unless whole
  for (int32_t id : ids) {
    if (test_bit(mask_, id)) continue;  // accepted already (through another stack)
    const std::string_view bytes = vocab.bytes(id);
    size_t lcp = 0;
    while (lcp < bytes.size() && lcp < prev.size() && bytes[lcp] == prev[lcp]) ++lcp;
    prev = bytes;
    if (lcp > alive) continue;  // behind the prefix where the previous token died
    size_t d = lcp;
    for (; d < bytes.size(); ++d) {
      automaton_.advance(walk_[d], static_cast<uint8_t>(bytes[d]), walk_[d + 1]);
      if (walk_[d + 1].empty()) break;
    }
    alive = d;
    if (d == bytes.size()) set_bit(mask_, id);
  }
}

bool TokenConstraint::accept(int32_t token) {
  const TokenVocab& vocab = compiled_->vocab();
  if (token < 0 || token >= vocab.n_vocab()) return false;
  const auto& eog = vocab.eog_ids();
  if (std::find(eog.begin(), eog.end(), token) != eog.end()) return matcher_.can_end();
  const std::string_view bytes = vocab.bytes(token);
  return !bytes.empty() && matcher_.accept(bytes);
}

bool TokenConstraint::accept_text(std::string_view bytes) { return matcher_.accept(bytes); }

}  // namespace engine::grammar
