// Bounded numbers (number_ranges.h) against brute force: every candidate text is accepted exactly
// when it is a JSON number of the right kind within the bounds.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/number_ranges.h"
#include "tests/support/grammar_walk.h"

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
          std::shared_ptr<const Grammar> g;
          try {
            g = range_grammar(lo ? bound(lo, lo_ex) : std::nullopt, hi ? bound(hi, hi_ex) : std::nullopt, integer);
          } catch (const GrammarError&) {  // an empty range is refused: nothing in it may match
            for (const std::string& t : texts) ASSERT_FALSE(canonical_number(t, integer) && in_range(t, lo, lo_ex, hi, hi_ex)) << t;
            continue;
          }
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

// Every state a range grammar can reach can still finish: the exclusive bounds that used to leave
// a dead branch ("1" under exclusiveMaximum 1) among them.
TEST(GrammarNumber, NoStateIsADeadEnd) {
  const char* bounds[] = {nullptr, "-12.5", "-1", "-0.5", "0", "0.25", "1", "2.5", "10", "1e-9", "0.000001"};
  for (bool integer : {true, false}) {
    for (const char* lo : bounds) {
      for (const char* hi : bounds) {
        for (int ex = 0; ex < 4; ++ex) {
          const bool lo_ex = ex & 1, hi_ex = ex & 2;
          if ((lo == nullptr && lo_ex) || (hi == nullptr && hi_ex)) continue;
          std::shared_ptr<const Grammar> g;
          try {
            g = range_grammar(lo ? bound(lo, lo_ex) : std::nullopt, hi ? bound(hi, hi_ex) : std::nullopt, integer);
          } catch (const GrammarError&) {
            continue;  // an empty range (GrammarNumber.EmptyRangesAreRefused checks which)
          }
          const auto stuck = test_support::dead_end(g, "-.0123456789", 14);
          EXPECT_FALSE(stuck) << "dead end after '" << *stuck << "' integer=" << integer << " lo=" << (lo ? lo : "-")
                              << (lo_ex ? " (excl)" : "") << " hi=" << (hi ? hi : "-") << (hi_ex ? " (excl)" : "");
        }
      }
    }
  }
}

TEST(GrammarNumber, EmptyRangesAreRefused) {
  for (bool integer : {true, false}) {
    EXPECT_THROW(range_grammar(bound("1", true), bound("1", false), integer), GrammarError);
    EXPECT_THROW(range_grammar(bound("1", false), bound("1", true), integer), GrammarError);
    EXPECT_THROW(range_grammar(bound("2", false), bound("1", false), integer), GrammarError);
    EXPECT_NO_THROW(range_grammar(bound("1", false), bound("1", false), integer));
  }
  EXPECT_THROW(range_grammar(bound("0", true), bound("1", true), true), GrammarError);
  EXPECT_THROW(range_grammar(bound("0.1", false), bound("0.9", false), true), GrammarError);
  EXPECT_THROW(range_grammar(bound("-1", true), bound("0", true), true), GrammarError);
  EXPECT_NO_THROW(range_grammar(bound("0", true), bound("1", true), false));
  EXPECT_NO_THROW(range_grammar(bound("0", true), bound("1e-9", true), false));
}

// A random decimal: up to 4 integer and 9 fraction digits, now and then a tiny or a round one.
std::string random_decimal(std::mt19937& rng) {
  std::string s = rng() % 3 == 0 ? "-" : "";
  switch (rng() % 4) {
    case 0: return s + std::to_string(rng() % 20);
    case 1: return s + "0.00000000" + std::to_string(1 + rng() % 9);
    default: break;
  }
  s += std::to_string(rng() % 10000) + ".";
  for (int n = 1 + static_cast<int>(rng() % 9); n > 0; --n) s += static_cast<char>('0' + rng() % 10);
  return s;
}

// Random bounds, exclusive or not, then random walks through the grammar: none may dead-end and
// every value it generates lies within the bounds (compared exactly, on the digits).
TEST(GrammarNumber, RandomBoundsGenerateOnlyValuesInside) {
  std::mt19937 rng(29);
  int built = 0;
  for (int round = 0; round < 600; ++round) {
    const bool integer = rng() % 3 == 0;
    std::string lo_text = random_decimal(rng), hi_text = random_decimal(rng);
    if (rng() % 4 == 0) hi_text = lo_text;  // equal bounds
    if (rng() % 5 == 0) {                   // very narrow: (x, x + 1e-9)
      lo_text = "0";
      hi_text = "0.000000001";
    }
    const bool lo_ex = rng() % 2, hi_ex = rng() % 2;
    const auto lo = bound(lo_text.c_str(), lo_ex), hi = bound(hi_text.c_str(), hi_ex);
    const int c = compare(lo->value, hi->value);
    const bool empty_as_number = c > 0 || (c == 0 && (lo_ex || hi_ex));
    std::shared_ptr<const Grammar> g;
    try {
      g = range_grammar(lo, hi, integer);
    } catch (const GrammarError&) {
      if (!integer) {
        EXPECT_TRUE(empty_as_number) << lo_text << " " << hi_text << " " << lo_ex << hi_ex;
      }
      continue;
    }
    ASSERT_FALSE(empty_as_number) << lo_text << " " << hi_text;
    ++built;
    for (int walk = 0; walk < 20; ++walk) {
      const test_support::Walk w = test_support::random_walk(g, rng, 40);
      ASSERT_FALSE(w.dead_end) << "after '" << w.text << "' in " << (lo_ex ? "(" : "[") << lo_text << ", " << hi_text
                               << (hi_ex ? ")" : "]");
      if (!w.complete) continue;  // stopped at the length limit
      const auto x = Decimal::parse(w.text);
      ASSERT_TRUE(x) << w.text;
      EXPECT_TRUE(lo_ex ? compare(*x, lo->value) > 0 : compare(*x, lo->value) >= 0) << w.text << " vs " << lo_text;
      EXPECT_TRUE(hi_ex ? compare(*x, hi->value) < 0 : compare(*x, hi->value) <= 0) << w.text << " vs " << hi_text;
      if (integer) {
        EXPECT_EQ(w.text.find('.'), std::string::npos) << w.text;
      }
    }
  }
  EXPECT_GT(built, 200);
}

// multipleOf within bounds: the product with MultipleOfDfa (intersect.h) against brute force.
TEST(GrammarNumber, MultipleOfMatchesBruteForce) {
  const char* multiples[] = {"5", "0.5", "0.25", "0.05", "7"};
  const char* bounds[] = {nullptr, "-12.5", "-3", "0", "0.25", "1", "7", "12.05"};
  // Candidates are exact in units of 1e-4.
  auto scaled = [](const std::string& t) { return std::llround(std::strtold(t.c_str(), nullptr) * 10000); };
  const auto texts = candidates();
  for (const char* m : multiples) {
    const auto dfa = MultipleOfDfa::make(*Decimal::parse(m), 4096);
    ASSERT_TRUE(dfa);
    const long long unit = scaled(m);
    for (bool integer : {true, false}) {
      for (const char* lo : bounds) {
        for (const char* hi : bounds) {
          for (int ex = 0; ex < 4; ++ex) {
            const bool lo_ex = ex & 1, hi_ex = ex & 2;
            if ((lo == nullptr && lo_ex) || (hi == nullptr && hi_ex)) continue;
            GrammarBuilder b;
            const uint32_t root = b.rule("root");
            b.define(root, intersect(number_in_range(lo ? bound(lo, lo_ex) : std::nullopt, hi ? bound(hi, hi_ex) : std::nullopt, integer),
                                     *dfa, b, 20000));
            std::shared_ptr<const Grammar> g;
            try {
              g = b.build(root);
            } catch (const GrammarError&) {
              for (const std::string& t : texts) {
                ASSERT_FALSE(canonical_number(t, integer) && in_range(t, lo, lo_ex, hi, hi_ex) && scaled(t) % unit == 0)
                    << "refused, yet '" << t << "' is a multiple of " << m << " in range";
              }
              continue;
            }
            for (const std::string& t : texts) {
              const bool want = canonical_number(t, integer) && in_range(t, lo, lo_ex, hi, hi_ex) && scaled(t) % unit == 0;
              ASSERT_EQ(matches(g, t), want) << "'" << t << "' multipleOf " << m << " integer=" << integer << " lo="
                                             << (lo ? lo : "-") << (lo_ex ? " (excl)" : "") << " hi=" << (hi ? hi : "-")
                                             << (hi_ex ? " (excl)" : "");
            }
            if (ex == 3 || lo == nullptr || hi == nullptr) {  // liveness on a share of the cases: the search is slow
              const auto stuck = test_support::dead_end(g, "-.0123456789", 6);
              ASSERT_FALSE(stuck) << "dead end after '" << *stuck << "' multipleOf " << m;
            }
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
