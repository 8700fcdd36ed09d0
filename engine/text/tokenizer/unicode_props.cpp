#include "engine/text/tokenizer/unicode_props.h"

#include <algorithm>
#include <array>
#include <iterator>

namespace engine::tokenizer::unicode {

namespace {

struct CaseRange {  // first, first + stride, ..., last map to cp + delta
  uint32_t first;
  uint32_t last;
  uint32_t stride;
  int32_t delta;
};

struct NfdRange {  // every code point of [first, last] maps to base
  uint32_t first;
  uint32_t last;
  uint32_t base;
};

#include "engine/text/tokenizer/unicode_tables.inc"

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

constexpr uint16_t lookup_flags(uint32_t cp) {
  // Entries are (first << 8) | bit: the last entry <= (cp << 8) | 0xFF is cp's range.
  const uint32_t key = cp << 8 | 0xFF;
  const auto* it = std::upper_bound(std::begin(kCategoryRanges), std::end(kCategoryRanges), key);
  uint16_t flags = static_cast<uint16_t>(*(it - 1) & 0xFF);
  if (std::binary_search(std::begin(kWhiteSpace), std::end(kWhiteSpace), cp)) flags |= kWhitespace;
  return flags;
}

constexpr std::array<uint16_t, 128> kAsciiFlags = [] {
  std::array<uint16_t, 128> table{};
  for (uint32_t cp = 0; cp < table.size(); ++cp) table[cp] = lookup_flags(cp);
  return table;
}();

}  // namespace

uint16_t code_point_flags(uint32_t cp) {
  if (cp < kAsciiFlags.size()) return kAsciiFlags[cp];
  if (cp > kMaxCodePoint) return kUndefined;
  return lookup_flags(cp);
}

uint32_t lowercase(uint32_t cp) {
  if (cp < 0x80) return cp >= 'A' && cp <= 'Z' ? cp + ('a' - 'A') : cp;
  const auto* it = std::upper_bound(std::begin(kLowercaseRanges), std::end(kLowercaseRanges), cp,
                                    [](uint32_t c, const CaseRange& r) { return c < r.first; });
  if (it == std::begin(kLowercaseRanges)) return cp;
  const CaseRange& range = *(it - 1);
  if (cp > range.last || (cp - range.first) % range.stride != 0) return cp;
  return static_cast<uint32_t>(static_cast<int64_t>(cp) + range.delta);
}

uint32_t nfd_base(uint32_t cp) {
  if (cp < std::begin(kNfdRanges)->first) return cp;
  const auto* it = std::upper_bound(std::begin(kNfdRanges), std::end(kNfdRanges), cp,
                                    [](uint32_t c, const NfdRange& r) { return c < r.first; });
  const NfdRange& range = *(it - 1);
  return cp <= range.last ? range.base : cp;
}

}  // namespace engine::tokenizer::unicode
