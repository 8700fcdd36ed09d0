// The reading position the call-section readers share (tagged_calls.cpp, python_calls.cpp): each
// step says whether the text matched, ended in the middle of what was expected (more may come:
// kIncomplete) or is something else (kInvalid). Internal to engine/text/tools; a Cursor views a
// string it does not own and is used by one thread.
#pragma once

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tools/tagged_calls.h"

namespace engine::tools::section {

inline constexpr int kMaxDepth = 128;      // deeper values are not calls
inline constexpr size_t kMaxName = 256;    // longer function or parameter names are not calls

inline bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

class Cursor {
 public:
  explicit Cursor(std::string_view s) : s_(s) {}

  size_t pos() const { return i_; }
  bool done() const { return i_ >= s_.size(); }
  char peek() const { return s_[i_]; }
  std::string_view rest() const { return s_.substr(i_); }
  void advance(size_t n) { i_ = std::min(s_.size(), i_ + n); }
  void skip_space() {
    while (i_ < s_.size() && is_space(s_[i_])) ++i_;
  }
  // `lit` next: taken.
  SectionRead expect(std::string_view lit) {
    const std::string_view r = rest();
    if (r.substr(0, lit.size()) == lit) {
      i_ += lit.size();
      return SectionRead::kDone;
    }
    return lit.substr(0, r.size()) == r ? SectionRead::kIncomplete : SectionRead::kInvalid;
  }
  bool starts_with(std::string_view lit) const { return rest().substr(0, lit.size()) == lit; }
  // Whether the rest is a proper beginning of `lit` (text that may still become it).
  bool prefix_of(std::string_view lit) const { return rest().size() < lit.size() && lit.substr(0, rest().size()) == rest(); }
  // The text up to `end` (taken, `end` too), into `out`.
  SectionRead until(std::string_view end, std::string_view& out) {
    const size_t k = s_.find(end, i_);
    if (k == std::string_view::npos) return SectionRead::kIncomplete;
    out = s_.substr(i_, k - i_);
    i_ = k + end.size();
    return SectionRead::kDone;
  }
  // A name ending at `stop` (taken if `take`), of 1 to kMaxName characters with none of `bad`.
  SectionRead name(char stop, std::string_view bad, std::string& out, bool take = true) {
    for (size_t k = i_; k < s_.size(); ++k) {
      if (s_[k] == stop) {
        if (k == i_) return SectionRead::kInvalid;
        out.assign(s_.substr(i_, k - i_));
        i_ = take ? k + 1 : k;
        return SectionRead::kDone;
      }
      if (bad.find(s_[k]) != std::string_view::npos || k - i_ >= kMaxName) return SectionRead::kInvalid;
    }
    return s_.size() - i_ > kMaxName ? SectionRead::kInvalid : SectionRead::kIncomplete;
  }

 private:
  std::string_view s_;
  size_t i_ = 0;
};

// Returns the step's result unless it is kDone.
#define GGUFD_SECTION_READ(step)                                \
  do {                                                          \
    if (const SectionRead r_ = (step); r_ != SectionRead::kDone) \
      return r_;                                                \
  } while (0)

inline bool offered(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

// The closing tag after the calls, or the end of the answer in its place.
inline SectionResult close_section(Cursor& c, std::string_view close, bool at_end, std::vector<ToolCall> calls) {
  SectionResult out;
  c.skip_space();
  const SectionRead r = c.expect(close);
  if (r == SectionRead::kInvalid) return {SectionRead::kInvalid, 0, {}};
  if (r == SectionRead::kIncomplete && !at_end) return out;
  out.read = SectionRead::kDone;
  out.consumed = r == SectionRead::kDone ? c.pos() : c.pos() + c.rest().size();
  out.calls = std::move(calls);
  return out;
}

// Elements separated by ',' up to `close` (the opening bracket already taken); `element` reads one.
template <class Element>
SectionRead read_list(Cursor& c, char close, Element element) {
  c.skip_space();
  if (c.done()) return SectionRead::kIncomplete;
  if (c.peek() == close) {
    c.advance(1);
    return SectionRead::kDone;
  }
  for (;;) {
    GGUFD_SECTION_READ(element());
    c.skip_space();
    if (c.done()) return SectionRead::kIncomplete;
    if (c.peek() == close) {
      c.advance(1);
      return SectionRead::kDone;
    }
    GGUFD_SECTION_READ(c.expect(","));
    c.skip_space();
  }
}

}  // namespace engine::tools::section
