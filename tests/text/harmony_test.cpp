// gpt-oss's harmony output split into reasoning and answer, token by token as it streams.
#include "engine/text/harmony.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

namespace engine {
namespace {

// Marker ids of a made-up vocabulary; text tokens use -2 here only to tell them apart in the
// script below (the parser sees any id that is not a marker as text).
constexpr int32_t kStart = 200006, kChannel = 200005, kMessage = 200008, kEnd = 200007, kConstrain = 200003;
constexpr int32_t kText = 17;

HarmonyTokens markers() { return {kStart, kChannel, kMessage, kEnd, kConstrain}; }

struct Split {
  std::string reasoning, content;
};

// Feeds (id, text) events one at a time, as the stream does, and joins the deltas.
Split run(const std::vector<std::pair<int32_t, std::string>>& events) {
  HarmonyParser p(markers());
  Split out;
  for (const auto& [id, text] : events) {
    const HarmonyParser::Delta d = p.push(id, text);
    out.reasoning += d.reasoning;
    out.content += d.content;
  }
  return out;
}

TEST(Harmony, AnalysisIsReasoningAndFinalIsTheAnswer) {
  // <|channel|>analysis<|message|>Think 2+2.<|end|><|start|>assistant<|channel|>final<|message|>4
  const Split s = run({{kChannel, ""}, {kText, "analysis"}, {kMessage, ""}, {kText, "Think"}, {kText, " 2+2."},
                       {kEnd, ""}, {kStart, ""}, {kText, "assistant"}, {kChannel, ""}, {kText, "final"},
                       {kMessage, ""}, {kText, "4"}});
  EXPECT_EQ(s.reasoning, "Think 2+2.");
  EXPECT_EQ(s.content, "4");
}

TEST(Harmony, TextHeldBackFromEarlierTokensCountsBeforeTheMarkerItArrivesWith) {
  // the stream released "final" only with the <|message|> token, and " done" only at the end (-1)
  const Split s = run({{kChannel, ""}, {kText, "analysis"}, {kMessage, ""}, {kText, "hm"}, {kEnd, ""},
                       {kStart, ""}, {kChannel, "assistant"}, {kText, ""}, {kMessage, "final"}, {kText, "all"},
                       {-1, " done"}});
  EXPECT_EQ(s.reasoning, "hm");
  EXPECT_EQ(s.content, "all done");
}

TEST(Harmony, CommentaryWithARecipientAndAConstraintIsNotReasoning) {
  const Split s = run({{kChannel, ""}, {kText, "commentary to=functions.get_weather "}, {kConstrain, ""},
                       {kText, "json"}, {kMessage, ""}, {kText, "{\"city\":\"Paris\"}"}});
  EXPECT_EQ(s.reasoning, "");
  EXPECT_EQ(s.content, "{\"city\":\"Paris\"}");
}

TEST(Harmony, TextBeforeAnyMarkerIsTheAnswer) {
  const Split s = run({{kText, "Hello"}, {kText, " there"}});
  EXPECT_EQ(s.content, "Hello there");
  EXPECT_EQ(s.reasoning, "");
}

TEST(Harmony, CutOffInsideTheAnalysisLeavesNoAnswer) {
  // max_tokens ran out while the model was still thinking
  const Split s = run({{kChannel, ""}, {kText, "analysis"}, {kMessage, ""}, {kText, "Let me"}});
  EXPECT_EQ(s.reasoning, "Let me");
  EXPECT_EQ(s.content, "");
}

TEST(Harmony, HeaderTextIsNeverOutput) {
  // the role after <|start|>, and a channel header cut off before its <|message|>
  const Split s = run({{kStart, ""}, {kText, "assistant"}, {kChannel, ""}, {kText, "fin"}});
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(s.reasoning, "");
}

}  // namespace
}  // namespace engine
