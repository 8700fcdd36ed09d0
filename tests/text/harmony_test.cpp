// gpt-oss's harmony output split into reasoning and answer, piece by piece as it streams.
#include "engine/text/harmony.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace engine {
namespace {

struct Split {
  std::string reasoning, content;
  std::vector<HarmonyParser::Call> calls;
};

// Feeds the pieces one at a time, as the stream does, then flushes, and joins the deltas.
Split run(const std::vector<std::string>& pieces) {
  HarmonyParser p;
  Split out;
  auto take = [&out](const HarmonyParser::Delta& d) {
    out.reasoning += d.reasoning;
    out.content += d.content;
    for (const HarmonyParser::Call& c : d.calls) out.calls.push_back(c);
  };
  for (const std::string& piece : pieces) take(p.push(piece));
  take(p.flush());
  return out;
}

const std::string kOutput =
    "<|channel|>analysis<|message|>Think 2+2.<|end|><|start|>assistant<|channel|>final<|message|>It is 4.";

TEST(Harmony, AnalysisIsReasoningAndFinalIsTheAnswer) {
  const Split s = run({kOutput});
  EXPECT_EQ(s.reasoning, "Think 2+2.");
  EXPECT_EQ(s.content, "It is 4.");
}

TEST(Harmony, EveryCutOfTheStreamGivesTheSameSplit) {
  // markers cut anywhere between two pieces (a byte at a time, and at every single cut)
  std::vector<std::string> bytes;
  for (char c : kOutput) bytes.emplace_back(1, c);
  const Split one = run(bytes);
  EXPECT_EQ(one.reasoning, "Think 2+2.");
  EXPECT_EQ(one.content, "It is 4.");
  for (size_t cut = 0; cut <= kOutput.size(); ++cut) {
    const Split s = run({kOutput.substr(0, cut), kOutput.substr(cut)});
    EXPECT_EQ(s.reasoning, "Think 2+2.") << "cut at " << cut;
    EXPECT_EQ(s.content, "It is 4.") << "cut at " << cut;
  }
}

TEST(Harmony, AMessageToAFunctionIsACall) {
  // the body ends with <|call|>, an end-of-generation token that never reaches the text
  const Split s = run({"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant",
                       "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>",
                       "{\"city\":\"Paris\"}"});
  EXPECT_EQ(s.reasoning, "Need weather.");
  EXPECT_EQ(s.content, "");
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "get_weather");
  EXPECT_EQ(s.calls[0].arguments, "{\"city\":\"Paris\"}");
}

TEST(Harmony, WithoutReadingCallsTheirBodiesAreTheAnswer) {
  HarmonyParser p(false);  // tool_choice none: nothing is a call
  HarmonyParser::Delta d = p.push("<|channel|>commentary to=functions.f <|constrain|>json<|message|>{\"a\":1}");
  HarmonyParser::Delta end = p.flush();
  EXPECT_EQ(d.content + end.content, "{\"a\":1}");
  EXPECT_TRUE(d.calls.empty() && end.calls.empty());
}

TEST(Harmony, TheRecipientMayStandInTheRoleHeader) {
  const Split s = run({"<|start|>assistant to=functions.lookup<|channel|>commentary json<|message|>{}<|end|>",
                       "<|start|>assistant<|channel|>final<|message|>Done."});
  ASSERT_EQ(s.calls.size(), 1u);
  EXPECT_EQ(s.calls[0].name, "lookup");
  EXPECT_EQ(s.calls[0].arguments, "{}");
  EXPECT_EQ(s.content, "Done.");
}

TEST(Harmony, CommentaryWithoutARecipientIsTheAnswer) {
  const Split s = run({"<|channel|>commentary<|message|>Working on it."});
  EXPECT_EQ(s.content, "Working on it.");
  EXPECT_TRUE(s.calls.empty());
}

TEST(Harmony, TextBeforeAnyMarkerIsTheAnswer) {
  const Split s = run({"Hello", " there"});
  EXPECT_EQ(s.content, "Hello there");
  EXPECT_EQ(s.reasoning, "");
}

TEST(Harmony, AngleBracketsThatStartNoMarkerStayText) {
  const Split s = run({"<|channel|>final<|message|>a <b> x<|y|> <", "|chan", "nel and <|"});
  EXPECT_EQ(s.content, "a <b> x<|y|> <|channel and <|") << "the held-back '<|' comes out at the end";
}

TEST(Harmony, CutOffInsideTheAnalysisLeavesNoAnswer) {
  // max_tokens ran out while the model was still thinking
  const Split s = run({"<|channel|>analysis<|message|>Let me"});
  EXPECT_EQ(s.reasoning, "Let me");
  EXPECT_EQ(s.content, "");
}

TEST(Harmony, HeaderTextIsNeverOutput) {
  // the role after <|start|>, and a channel header cut off before its <|message|>
  const Split s = run({"<|start|>assistant<|channel|>fin"});
  EXPECT_EQ(s.content, "");
  EXPECT_EQ(s.reasoning, "");
}

}  // namespace
}  // namespace engine
