// The n-gram index of prompt-lookup drafting: longest and most recent match, copies that run into
// the sequence's end, incremental indexing.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "engine/runtime/ngram_index.h"

namespace engine {
namespace {

std::vector<int32_t> propose(const std::vector<int32_t>& seq, int k) {
  NgramIndex index;
  index.extend(seq);
  return index.propose(k);
}

TEST(NgramIndex, ProposesWhatFollowedTheLongestMostRecentMatch) {
  // tail "3 4": "3 4 9" long ago, "3 4 7" more recently -> 7 8
  EXPECT_EQ(propose({3, 4, 9, 1, 3, 4, 7, 8, 2, 3, 4}, 2), (std::vector<int32_t>{7, 8}));
  // tail "5 3 4": only the older occurrence has the 3-token match -> 9 1
  EXPECT_EQ(propose({5, 3, 4, 9, 1, 3, 4, 7, 8, 5, 3, 4}, 2), (std::vector<int32_t>{9, 1}));
  // no earlier occurrence of the last two tokens (a single token is never enough)
  EXPECT_TRUE(propose({1, 2, 3, 1, 5}, 4).empty());
  EXPECT_TRUE(propose({1, 2}, 4).empty());
  EXPECT_TRUE(propose({}, 4).empty());
}

TEST(NgramIndex, ACopyRunningIntoTheEndGoesOnWithItself) {
  // "1 2 3 1 2": the match "1 2" at 0 is followed by 3 1 2, then the proposal's own 3 1 2 ...
  EXPECT_EQ(propose({1, 2, 3, 1, 2}, 7), (std::vector<int32_t>{3, 1, 2, 3, 1, 2, 3}));
  // a token repeated: "7 7 7" proposes 7s
  EXPECT_EQ(propose({7, 7, 7}, 3), (std::vector<int32_t>{7, 7, 7}));
  EXPECT_TRUE(propose({1, 2, 3, 1, 2}, 0).empty());
}

TEST(NgramIndex, ExtendsIncrementallyAndRefusesAnotherSequence) {
  NgramIndex index;
  std::vector<int32_t> seq = {4, 5, 6};
  index.extend(seq);
  EXPECT_TRUE(index.propose(2).empty());
  seq.insert(seq.end(), {1, 4, 5});
  index.extend(seq);
  EXPECT_EQ(index.size(), 6u);
  EXPECT_EQ(index.propose(2), (std::vector<int32_t>{6, 1}));
  EXPECT_EQ(index.propose(2), propose(seq, 2)) << "the same as indexing it all at once";
  EXPECT_THROW(index.extend(std::vector<int32_t>{4, 5}), std::invalid_argument);
  EXPECT_THROW(index.extend(std::vector<int32_t>{4, 5, 6, 1, 4, 9, 2}), std::invalid_argument);
}

}  // namespace
}  // namespace engine
