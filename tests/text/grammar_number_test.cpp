// Bounded numbers (number_ranges.h) against brute force: every candidate text is accepted exactly
// when it is a JSON number of the right kind within the bounds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/number_ranges.h"

namespace engine::grammar {
namespace {

std::shared_ptr<const Grammar> range_grammar(const std::optional<Bound>& lo, const std::optional<Bound>& hi,
                                             bool integer) {
  GrammarBuilder b;
  const uint32_t root = b.rule("root");
  b.define(root, number_in_range(lo, hi, integer));
  return b.build(root);
}

std::optional<Bound> bound(const char* text, bool exclusive) {
  auto d = Decimal::parse(text);
  EXPECT_TRUE(d.has_value()) << text;
  return Bound{*d, exclusive};
}

// Candidates: integers and decimals around the bounds, in canonical and non-canonical forms.
std::vector<std::string> candidates() {
  std::vector<std::string> out;
  const char* fracs[] = {"", ".0", ".5", ".05", ".25", ".50", ".125", ".9", ".99", ".01", ".001", ".2501"};
  for (int i = -30; i <= 30; ++i) {
    for (const char* f : fracs) out.push_back(std::to_string(i) + f);
  }
  for (const char* s : {"-0", "-0.0", "-0.5", "-0.25", "007", "1.", ".5", "+1", "1e2", "--1", "", "-", "100", "1000",
                        "-100", "12.05", "12.050", "12.0501", "12.0499", "-12.5", "-12.50", "-12.51", "-12.49"}) {
    out.push_back(s);
  }
  return out;
}

bool canonical_number(const std::string& s, bool integer) {
  size_t i = s[0] == '-' ? 1 : 0;
  if (i >= s.size() || !isdigit(static_cast<unsigned char>(s[i]))) return false;
  if (s[i] == '0' && i + 1 < s.size() && isdigit(static_cast<unsigned char>(s[i + 1]))) return false;
  while (i < s.size() && isdigit(static_cast<unsigned char>(s[i]))) ++i;
  if (i == s.size()) return s != "-0";
  if (integer || s[i] != '.' || i + 1 == s.size()) return false;
  for (++i; i < s.size(); ++i) {
    if (!isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return s.rfind("-0", 0) != 0 || std::strtod(s.c_str(), nullptr) != 0.0;  // "-0.0" is a negative zero
}

bool in_range(const std::string& s, const char* lo, bool lo_ex, const char* hi, bool hi_ex) {
  const double x = std::strtod(s.c_str(), nullptr);
  if (lo && (lo_ex ? !(x > std::strtod(lo, nullptr)) : !(x >= std::strtod(lo, nullptr)))) return false;
  if (hi && (hi_ex ? !(x < std::strtod(hi, nullptr)) : !(x <= std::strtod(hi, nullptr)))) return false;
  return true;
}

TEST(GrammarNumber, MatchesBruteForceOverManyBounds) {
  const char* bounds[] = {nullptr, "-12.5", "-3", "-0.5", "0", "0.25", "1", "2.5", "7", "10", "12.05", "0.125"};
  const auto texts = candidates();
  for (bool integer : {true, false}) {
    for (const char* lo : bounds) {
      for (const char* hi : bounds) {
        for (int ex = 0; ex < 4; ++ex) {
          const bool lo_ex = ex & 1, hi_ex = ex & 2;
          if ((lo == nullptr && lo_ex) || (hi == nullptr && hi_ex)) continue;
          const auto g = range_grammar(lo ? bound(lo, lo_ex) : std::nullopt, hi ? bound(hi, hi_ex) : std::nullopt, integer);
          for (const std::string& t : texts) {
            const bool want = canonical_number(t, integer) && in_range(t, lo, lo_ex, hi, hi_ex);
            ASSERT_EQ(matches(g, t), want) << "'" << t << "' integer=" << integer << " lo=" << (lo ? lo : "-")
                                           << (lo_ex ? " (excl)" : "") << " hi=" << (hi ? hi : "-") << (hi_ex ? " (excl)" : "");
          }
        }
      }
    }
  }
}

TEST(GrammarNumber, ParsesBoundsExactly) {
  auto d = Decimal::parse("1e-07");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->int_digits, "0");
  EXPECT_EQ(d->frac_digits, "0000001");
  d = Decimal::parse("-12.500e2");
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->negative);
  EXPECT_EQ(d->int_digits, "1250");
  EXPECT_EQ(d->frac_digits, "");
  EXPECT_FALSE(Decimal::parse("1e999"));
  EXPECT_FALSE(Decimal::parse("abc"));
  const auto g = range_grammar(bound("1e20", false), std::nullopt, true);
  EXPECT_TRUE(matches(g, "100000000000000000000"));
  EXPECT_FALSE(matches(g, "99999999999999999999"));
}

}  // namespace
}  // namespace engine::grammar
