// Walking a grammar byte by byte, for tests of what it generates and of its liveness (no state the
// matcher can reach is a dead end).
//
//   random_walk(g, rng, max_len)    bytes chosen at random among those the grammar allows, until it
//                                   may end (and a coin says stop) or max_len; reports a dead end.
//   dead_end(g, alphabet, depth)    a prefix over `alphabet` (at most `depth` bytes) after which the
//                                   grammar can neither end nor take any byte, or nullopt; a breadth-
//                                   first search over the distinct matcher states.
//   random_token_walk(cg, vocab, ...)  the same over a token vocabulary, through a TokenConstraint,
//                                   as constrained generation picks tokens.
#pragma once

#include <deque>
#include <optional>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/token_masks.h"

namespace test_support {

struct Walk {
  std::string text;
  bool complete = false;  // the grammar accepts `text` as a whole
  bool dead_end = false;  // the walk reached a state that allows no byte and cannot end
};

// The bytes that `m` can take next.
inline std::vector<uint8_t> next_bytes(const engine::grammar::Matcher& m) {
  std::vector<uint8_t> out;
  engine::grammar::Automaton a(m.grammar());
  engine::grammar::StackSet s;
  for (unsigned b = 0; b < 256; ++b) {
    a.advance(m.stacks(), static_cast<uint8_t>(b), s);
    if (!s.empty()) out.push_back(static_cast<uint8_t>(b));
  }
  return out;
}

inline Walk random_walk(const std::shared_ptr<const engine::grammar::Grammar>& g, std::mt19937& rng, size_t max_len) {
  engine::grammar::Matcher m(g);
  Walk w;
  while (w.text.size() < max_len) {
    const std::vector<uint8_t> next = next_bytes(m);
    if (m.can_end() && (next.empty() || rng() % 4 == 0)) break;
    if (next.empty()) {
      w.dead_end = true;
      return w;
    }
    const char c = static_cast<char>(next[rng() % next.size()]);
    m.accept(std::string_view(&c, 1));
    w.text += c;
  }
  w.complete = m.can_end();
  return w;
}

inline std::optional<std::string> dead_end(const std::shared_ptr<const engine::grammar::Grammar>& g,
                                           const std::string& alphabet, size_t depth) {
  std::deque<std::pair<std::string, engine::grammar::Matcher>> todo;
  todo.emplace_back("", engine::grammar::Matcher(g));
  std::unordered_set<uint64_t> seen{todo.front().second.stacks().hash()};
  while (!todo.empty()) {
    auto [text, m] = std::move(todo.front());
    todo.pop_front();
    if (!m.can_end() && next_bytes(m).empty()) return text;
    if (text.size() == depth) continue;
    for (char c : alphabet) {
      engine::grammar::Matcher next = m;
      if (next.accept(std::string_view(&c, 1)) && seen.insert(next.stacks().hash()).second) {
        todo.emplace_back(text + c, std::move(next));
      }
    }
  }
  return std::nullopt;
}

struct TokenWalk {
  std::string text;     // the chosen tokens' bytes
  bool ended = false;   // the end token was chosen, or the constraint is complete
  std::string error;    // a state that allowed no token, or a token the constraint refused ("" : none)
};

// Up to max_steps tokens of `vocab` (`eos`: the end token, no bytes) chosen at random among those
// `cg` allows; the end as soon as it is allowed after 30 steps, so that walks finish; and, when
// allowed, each of `prefer` with probability 1/4 (say, tokens that close a string).
inline TokenWalk random_token_walk(const std::shared_ptr<const engine::grammar::CompiledGrammar>& cg,
                                   const std::vector<std::string>& vocab, int32_t eos, std::mt19937& rng,
                                   const std::vector<int32_t>& prefer = {}, int max_steps = 400) {
  namespace g = engine::grammar;
  g::TokenConstraint c(cg);
  TokenWalk w;
  for (int step = 0; step < max_steps && !w.ended; ++step) {
    std::vector<int32_t> ids;
    const g::TokenBits& bits = c.allowed();
    for (int32_t id = 0; id < static_cast<int32_t>(vocab.size()); ++id) {
      if (g::test_bit(bits, id)) ids.push_back(id);
    }
    if (ids.empty()) {
      w.error = "no token allowed after: " + w.text;
      return w;
    }
    int32_t id = ids[std::uniform_int_distribution<size_t>(0, ids.size() - 1)(rng)];
    if (g::test_bit(bits, eos) && step > 30) id = eos;
    for (const int32_t p : prefer) {
      if (id != eos && g::test_bit(bits, p) && rng() % 4 == 0) id = p;
    }
    if (!c.accept(id)) {
      w.error = "token " + std::to_string(id) + " refused after: " + w.text;
      return w;
    }
    if (id != eos) w.text += vocab[static_cast<size_t>(id)];
    w.ended = id == eos || c.complete();
  }
  return w;
}

}  // namespace test_support
