// Stop strings over text that arrives in pieces: held back while they may still match, cut at the
// earliest match, and the matched string reported (Anthropic's stop_sequence).
#include <gtest/gtest.h>

#include "engine/runtime/stop_strings.h"

namespace engine {
namespace {

TEST(StopMatcher, CutsAtTheEarliestMatchAndSaysWhichMatched) {
  StopMatcher m({"world", "lo w", ""});
  StopMatcher::Result a = m.push("hel");
  EXPECT_EQ(a.text, "he") << "the 'l' may start \"lo w\": held back";
  EXPECT_FALSE(a.stopped);
  StopMatcher::Result b = m.push("lo wor");  // "lo w" matches before "world" could
  EXPECT_TRUE(b.stopped);
  EXPECT_EQ(b.text, "l") << "the held-back 'l' was not part of the match";
  EXPECT_EQ(b.matched, "lo w");
}

TEST(StopMatcher, HoldsBackAPossibleStartAndReleasesIt) {
  StopMatcher m({"END"});
  EXPECT_EQ(m.push("abcE").text, "abc");
  StopMatcher::Result r = m.push("Nx");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.text, "ENx");
  EXPECT_TRUE(r.matched.empty());
  EXPECT_EQ(m.push("E").text, "");
  EXPECT_EQ(m.flush(), "E");
}

}  // namespace
}  // namespace engine
