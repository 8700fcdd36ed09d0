// The pushdown automaton: expanding stacks to class tops, and feeding them bytes.
#include "engine/text/grammar/matcher.h"

#include <algorithm>
#include <string>

namespace engine::grammar {

namespace {

// `partial`: 0, or the state inside a multi-byte UTF-8 character:
//   bit 31 set | bits 23-24 total length | bits 21-22 bytes still to come | bits 0-20 the bits so far
constexpr uint32_t kPartialFlag = 1u << 31;
uint32_t make_partial(uint32_t bits, uint32_t remaining, uint32_t length) {
  return kPartialFlag | (length << 23) | (remaining << 21) | bits;
}
uint32_t partial_bits(uint32_t p) { return p & 0x1FFFFF; }
uint32_t partial_remaining(uint32_t p) { return (p >> 21) & 3; }
uint32_t partial_length(uint32_t p) { return (p >> 23) & 3; }

uint64_t hash_stack(std::span<const uint32_t> positions, uint32_t partial) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ partial;
  for (uint32_t p : positions) h = (h ^ p) * 0x100000001B3ull;
  return h ^ positions.size();
}

// The smallest code point of each UTF-8 length (anything below is an overlong form).
constexpr uint32_t kMinOfLength[5] = {0, 0, 0x80, 0x800, 0x10000};

// Expansion steps of one character after which Automaton::expand_more records the states it
// expands, so that paths merging there are not expanded again.
constexpr size_t kRecordFrom = 256;

// A StackSet this large looks its stacks up through a hash index rather than a linear scan (a
// set of n stacks built by n adds would otherwise cost n^2 comparisons). The index (open
// addressing, a power of two in size) is kept at most half full.
constexpr size_t kIndexFrom = 16;
size_t index_slot(uint64_t h, size_t mask) { return static_cast<size_t>((h * 0x9E3779B97F4A7C15ull) >> 32) & mask; }

}  // namespace

// ---- StackSet ----

StackSet::StackSet(const StackSet& other)
    : data_(other.data_),
      starts_(other.starts_),
      hashes_(other.hashes_),
      max_stacks_(other.max_stacks_),
      has_empty_(other.has_empty_) {
  if (!other.slots_.empty()) build_index();
}

StackSet& StackSet::operator=(const StackSet& other) {
  if (this == &other) return *this;
  clear();
  data_ = other.data_;
  starts_ = other.starts_;
  hashes_ = other.hashes_;
  max_stacks_ = other.max_stacks_;
  has_empty_ = other.has_empty_;
  if (!other.slots_.empty()) build_index();
  return *this;
}

void StackSet::clear() {
  for (uint32_t slot : slots_) index_[slot] = 0;
  slots_.clear();
  data_.clear();
  starts_.clear();
  hashes_.clear();
  has_empty_ = false;
}

bool StackSet::equal_at(size_t k, uint64_t h, std::span<const uint32_t> positions, uint32_t partial) const {
  if (hashes_[k] != h || this->partial(k) != partial) return false;
  const auto mine = this->positions(k);
  return std::equal(mine.begin(), mine.end(), positions.begin(), positions.end());
}

size_t StackSet::find(uint64_t h, std::span<const uint32_t> positions, uint32_t partial, size_t* free_slot) const {
  if (slots_.empty()) {  // not indexed
    for (size_t k = 0; k < starts_.size(); ++k) {
      if (equal_at(k, h, positions, partial)) return k;
    }
    return kNone;
  }
  const size_t mask = index_.size() - 1;
  size_t slot = index_slot(h, mask);
  for (; index_[slot] != 0; slot = (slot + 1) & mask) {
    if (equal_at(index_[slot] - 1, h, positions, partial)) return index_[slot] - 1;
  }
  if (free_slot != nullptr) *free_slot = slot;
  return kNone;
}

void StackSet::build_index() {
  size_t size = 4 * kIndexFrom;
  while (size < 4 * starts_.size()) size *= 2;
  for (uint32_t slot : slots_) index_[slot] = 0;
  slots_.clear();
  if (index_.size() < size) index_.assign(size, 0);
  const size_t mask = index_.size() - 1;
  for (size_t k = 0; k < starts_.size(); ++k) {
    size_t slot = index_slot(hashes_[k], mask);
    while (index_[slot] != 0) slot = (slot + 1) & mask;
    index_[slot] = static_cast<uint32_t>(k + 1);
    slots_.push_back(static_cast<uint32_t>(slot));
  }
}

bool StackSet::add(std::span<const uint32_t> positions, uint32_t partial) {
  const uint64_t h = hash_stack(positions, partial);
  size_t slot = 0;
  if (find(h, positions, partial, &slot) != kNone) return false;
  if (starts_.size() >= max_stacks_) {
    throw GrammarError("the grammar is too ambiguous: more than " + std::to_string(max_stacks_) +
                       " parses are alive at once");
  }
  if (positions.size() > kMaxStackDepth) {
    throw GrammarError("the grammar nests deeper than " + std::to_string(kMaxStackDepth) + " rules");
  }
  starts_.push_back(static_cast<uint32_t>(data_.size()));
  hashes_.push_back(h);
  data_.push_back(static_cast<uint32_t>(positions.size()));
  data_.push_back(partial);
  data_.insert(data_.end(), positions.begin(), positions.end());
  has_empty_ |= positions.empty();
  if (!slots_.empty() && 2 * starts_.size() <= index_.size()) {
    index_[slot] = static_cast<uint32_t>(starts_.size());
    slots_.push_back(static_cast<uint32_t>(slot));
  } else if (starts_.size() >= kIndexFrom) {
    build_index();  // the first time, or twice as large
  }
  return true;
}

uint64_t StackSet::hash() const {
  uint64_t h = starts_.size();
  for (uint64_t x : hashes_) h += x * 0x9E3779B97F4A7C15ull;  // a sum: independent of order
  return h;
}

bool StackSet::same(const StackSet& other) const {
  if (size() != other.size() || has_empty_ != other.has_empty_) return false;
  for (size_t k = 0; k < size(); ++k) {
    if (other.find(hashes_[k], positions(k), partial(k), nullptr) == kNone) return false;
  }
  return true;
}

// ---- Automaton ----

void Automaton::start_at(uint32_t position, StackSet& out) {
  out.clear();
  const uint32_t s[1] = {position};
  expand(s, out);
}

void Automaton::start_root(StackSet& out) {
  out.clear();
  steps_ = 0;
  if (!expanded_.empty()) expanded_.clear();
  for (uint32_t start : g_.alternatives(0)) {
    const uint32_t s[1] = {start};
    expand_more(s, out);
  }
}

void Automaton::expand(std::span<const uint32_t> stack, StackSet& out) {
  steps_ = 0;
  if (!expanded_.empty()) expanded_.clear();
  expand_more(stack, out);
}

// Depth-first over a work list of stacks (flat: [depth, pos...]), so that deep chains of rules
// never recurse on the C++ stack.
void Automaton::expand_more(std::span<const uint32_t> stack, StackSet& out) {
  work_.clear();
  work_.push_back(static_cast<uint32_t>(stack.size()));
  work_.insert(work_.end(), stack.begin(), stack.end());
  std::vector<uint32_t>& offsets = offsets_;
  offsets.assign(1, 0);
  while (!offsets.empty()) {
    const uint32_t at = offsets.back();
    offsets.pop_back();
    scratch_.assign(work_.begin() + at + 1, work_.begin() + at + 1 + work_[at]);
    work_.resize(at);
    for (;;) {
      if (++steps_ > kMaxExpandSteps) {
        throw GrammarError("the grammar is too ambiguous: expanding its parses takes more than " +
                           std::to_string(kMaxExpandSteps) + " steps for one character");
      }
      if (scratch_.empty()) {
        out.add(scratch_, 0);
        break;
      }
      const uint32_t i = scratch_.back();
      const Element& el = g_.element(i);
      if (el.kind == Element::Kind::kEnd) {
        scratch_.pop_back();
        continue;
      }
      if (el.kind == Element::Kind::kClass) {
        out.add(scratch_, 0);
        if (!el.star) break;
        scratch_.back() = i + 1;  // a star may also match nothing
        continue;
      }
      // A rule reference. Paths merge here (after an optional rule, or r1 ::= r2 | r2): a state
      // already expanded into `out` adds nothing new. ("a"?){200} reaches each of its hundreds of
      // states by hundreds of paths, which would otherwise cost n^2 steps per byte. The states
      // are recorded only once a character's expansion has grown past kRecordFrom steps: small
      // ones (nearly all) skip the hashing, and a state expanded before that is at worst
      // expanded once more.
      if (steps_ > kRecordFrom && !expanded_.add(scratch_, 0)) break;
      // Return to the next element (or, when this ends the alternative, straight to the caller:
      // tail calls do not grow the stack), then one branch per alternative.
      if (g_.element(i + 1).kind == Element::Kind::kEnd) {
        scratch_.pop_back();
      } else {
        scratch_.back() = i + 1;
      }
      const std::vector<uint32_t>& alts = g_.alternatives(el.arg);
      for (size_t a = 1; a < alts.size(); ++a) {
        offsets.push_back(static_cast<uint32_t>(work_.size()));
        work_.push_back(static_cast<uint32_t>(scratch_.size() + 1));
        work_.insert(work_.end(), scratch_.begin(), scratch_.end());
        work_.push_back(alts[a]);
        if (work_.size() > kMaxStacks * kMaxStackDepth) throw GrammarError("the grammar expands without end");
      }
      if (scratch_.size() >= kMaxStackDepth) {
        throw GrammarError("the grammar nests deeper than " + std::to_string(kMaxStackDepth) + " rules");
      }
      scratch_.push_back(alts[0]);
    }
  }
}

bool Automaton::class_intersects(uint32_t cls, uint32_t lo, uint32_t hi) const {
  const auto& ranges = g_.char_class(cls).ranges();
  auto it = std::lower_bound(ranges.begin(), ranges.end(), lo,
                             [](const CharClass::Range& r, uint32_t x) { return r.hi < x; });
  return it != ranges.end() && it->lo <= hi;
}

void Automaton::step(std::span<const uint32_t> stack, uint32_t partial, uint8_t byte, StackSet& out) {
  const uint32_t top = stack.back();
  const Element& el = g_.element(top);
  uint32_t cp = 0;
  if (partial == 0) {
    if (byte < 0x80) {
      if (!g_.class_contains(el.arg, byte)) return;
      cp = byte;
    } else {
      uint32_t length = 0, bits = 0;
      if (byte >= 0xC2 && byte <= 0xDF) length = 2, bits = byte & 0x1F;
      else if (byte >= 0xE0 && byte <= 0xEF) length = 3, bits = byte & 0x0F;
      else if (byte >= 0xF0 && byte <= 0xF4) length = 4, bits = byte & 0x07;
      else return;  // not a lead byte
      const uint32_t shift = 6 * (length - 1);
      if (!class_intersects(el.arg, std::max(bits << shift, kMinOfLength[length]), (bits << shift) | ((1u << shift) - 1))) {
        return;
      }
      scratch_.assign(stack.begin(), stack.end());
      out.add(scratch_, make_partial(bits, length - 1, length));
      return;
    }
  } else {
    if ((byte & 0xC0) != 0x80) return;
    const uint32_t bits = (partial_bits(partial) << 6) | (byte & 0x3F);
    const uint32_t remaining = partial_remaining(partial) - 1;
    const uint32_t length = partial_length(partial);
    if (remaining > 0) {
      const uint32_t shift = 6 * remaining;
      if (!class_intersects(el.arg, std::max(bits << shift, kMinOfLength[length]), (bits << shift) | ((1u << shift) - 1))) {
        return;
      }
      scratch_.assign(stack.begin(), stack.end());
      out.add(scratch_, make_partial(bits, remaining, length));
      return;
    }
    if (bits < kMinOfLength[length] || bits > kMaxCodePoint || (bits >= 0xD800 && bits <= 0xDFFF)) return;
    if (!g_.class_contains(el.arg, bits)) return;
    cp = bits;
  }
  (void)cp;
  // A whole code point matched: a star stays (and may stop), a single class moves on.
  moved_.assign(stack.begin(), stack.end());
  if (!el.star) moved_.back() = top + 1;
  expand_more(moved_, out);
}

void Automaton::advance(const StackSet& in, uint8_t byte, StackSet& out) {
  out.clear();
  steps_ = 0;
  if (!expanded_.empty()) expanded_.clear();
  for (size_t k = 0; k < in.size(); ++k) {
    const auto stack = in.positions(k);
    if (stack.empty()) continue;  // complete: nothing more can follow
    step(stack, in.partial(k), byte, out);
  }
}

bool Automaton::advance(const StackSet& in, std::string_view bytes, StackSet& out) {
  if (bytes.empty()) {
    out = in;
    return !out.empty();
  }
  const StackSet* from = &in;
  for (size_t i = 0; i < bytes.size(); ++i) {
    StackSet& to = (i + 1 == bytes.size()) ? out : tmp_[i & 1];
    advance(*from, static_cast<uint8_t>(bytes[i]), to);
    if (to.empty()) {
      out.clear();
      return false;
    }
    from = &to;
  }
  return true;
}

// ---- Matcher ----

Matcher::Matcher(std::shared_ptr<const Grammar> g) : g_(std::move(g)), automaton_(*g_) {
  automaton_.start_root(stacks_);
}

bool Matcher::accept(std::string_view bytes) {
  if (!automaton_.advance(stacks_, bytes, next_)) return false;
  std::swap(stacks_, next_);
  return true;
}

bool matches(const std::shared_ptr<const Grammar>& g, std::string_view text) {
  Matcher m(g);
  return m.accept(text) && m.can_end();
}

}  // namespace engine::grammar
