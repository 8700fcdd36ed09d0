// Running a Grammar as a pushdown automaton over bytes.
//
// The state is a set of stacks (the grammar may be ambiguous, so several parses can be alive).
// A stack lists element positions, bottom first: the top is the class element that the next code
// point must match; below it are return positions (where to continue when the rule ends). A stack
// that has emptied has matched the whole grammar. The top of a stack may be in the middle of a
// UTF-8 character (`partial`): a token can end between the bytes of one code point.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// Bounds on the state of one matcher, against grammars that are ambiguous or nest without end.
// Exceeding one throws GrammarError.
inline constexpr size_t kMaxStacks = 1024;
inline constexpr size_t kMaxStackDepth = 4096;
// Expansion steps (stack tops examined) for one start state or one byte, over all the stacks it
// is fed to (a few ms). Paths that merge are expanded once (Automaton::expanded_), so this bounds
// grammars whose distinct parses are many, not those that reach a few parses many ways.
inline constexpr size_t kMaxExpandSteps = size_t{1} << 18;

// A set of distinct stacks, stored flat: per stack [depth, partial, pos_0 ... pos_top].
// Ownership: owns its buffers, which keep their capacity across clear().
class StackSet {
 public:
  StackSet() = default;
  // A set that holds at most `max_stacks` stacks (kMaxStacks unless given).
  explicit StackSet(size_t max_stacks) : max_stacks_(max_stacks) {}
  StackSet(const StackSet& other);  // copies the index only if there is one, sized to the stacks
  StackSet& operator=(const StackSet& other);
  StackSet(StackSet&&) noexcept = default;
  StackSet& operator=(StackSet&&) noexcept = default;

  void clear();
  size_t size() const { return starts_.size(); }
  bool empty() const { return starts_.empty(); }
  std::span<const uint32_t> positions(size_t k) const {
    const uint32_t* p = data_.data() + starts_[k];
    return {p + 2, p[0]};
  }
  uint32_t partial(size_t k) const { return data_[starts_[k] + 1]; }
  // Adds a stack unless an equal one is present; true if added.
  bool add(std::span<const uint32_t> positions, uint32_t partial);
  // Some stack is empty: everything so far is a complete match (or, for the local walks of
  // token_masks.cpp, reached the end of the rule it started in).
  bool has_empty() const { return has_empty_; }
  // Identity of the set regardless of the order its stacks were added in.
  uint64_t hash() const;
  bool same(const StackSet& other) const;

 private:
  static constexpr size_t kNone = ~size_t{0};
  bool equal_at(size_t k, uint64_t h, std::span<const uint32_t> positions, uint32_t partial) const;
  // The stack's number, or kNone (then, when indexed, `*free_slot` is where it would go).
  size_t find(uint64_t h, std::span<const uint32_t> positions, uint32_t partial, size_t* free_slot) const;
  void build_index();

  std::vector<uint32_t> data_;
  std::vector<uint32_t> starts_;
  std::vector<uint64_t> hashes_;
  size_t max_stacks_ = kMaxStacks;
  bool has_empty_ = false;
  // Past a few stacks, an index: open addressing by hash, stack number + 1 (0: free); and the
  // slots in use (empty: not indexed).
  std::vector<uint32_t> index_;
  std::vector<uint32_t> slots_;
};

// The transitions of one Grammar. Stateless apart from scratch buffers: use one per thread.
class Automaton {
 public:
  explicit Automaton(const Grammar& g) : g_(g) {}
  const Grammar& grammar() const { return g_; }

  // Adds to `out` every stack reached from `stack` (positions, bottom first; the top may be any
  // element) by expanding rule references and ends until each top is a class element, or the
  // stack is empty. Throws GrammarError when that takes too many steps (an ambiguous grammar).
  void expand(std::span<const uint32_t> stack, StackSet& out);
  // The stacks of `in` after one more byte (those that cannot take it are dropped).
  void advance(const StackSet& in, uint8_t byte, StackSet& out);
  // The stacks of `in` after `bytes`; false as soon as none is left (`out` is then empty).
  bool advance(const StackSet& in, std::string_view bytes, StackSet& out);
  // Start state: expand([start]). Root: start = the first element of each root alternative.
  void start_at(uint32_t position, StackSet& out);
  void start_root(StackSet& out);

 private:
  // expand() within the step budget of the current start state or byte (steps_).
  void expand_more(std::span<const uint32_t> stack, StackSet& out);
  // Feeds `byte` to the stack's top class; appends the resulting stacks to `out`.
  void step(std::span<const uint32_t> stack, uint32_t partial, uint8_t byte, StackSet& out);
  bool class_intersects(uint32_t cls, uint32_t lo, uint32_t hi) const;

  const Grammar& g_;
  std::vector<uint32_t> work_;        // expand(): pending stacks, flat [depth, pos...]
  std::vector<uint32_t> scratch_;     // one stack being built
  std::vector<uint32_t> offsets_;     // expand(): where each pending stack starts in work_
  std::vector<uint32_t> moved_;       // step(): the stack after a matched code point
  size_t steps_ = 0;                  // expansion steps for the current start state or byte
  StackSet expanded_{kMaxExpandSteps};  // rule-reference states expanded for the current one
  StackSet tmp_[2];
};

// Matches text against a grammar, incrementally. Thread-safety: none; one per sequence.
class Matcher {
 public:
  explicit Matcher(std::shared_ptr<const Grammar> g);
  // Feeds bytes; false and no change when the grammar cannot continue with them.
  bool accept(std::string_view bytes);
  // Whether the text so far is a complete match.
  bool can_end() const { return stacks_.has_empty(); }
  // Whether the text so far is complete and nothing can follow it.
  bool complete() const { return stacks_.has_empty() && stacks_.size() == 1; }
  const StackSet& stacks() const { return stacks_; }
  const Grammar& grammar() const { return *g_; }

 private:
  std::shared_ptr<const Grammar> g_;
  Automaton automaton_;
  StackSet stacks_;
  StackSet next_;
};

// Whether the whole of `text` matches the grammar.
bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text);

}  // namespace engine::grammar
