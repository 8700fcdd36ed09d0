// gpt-oss's harmony output through the chat formatter: the analysis channel becomes
// reasoning_content and the final channel content, streamed and unstreamed, on a vocabulary with
// o200k_harmony's markers (rendered as text, as llama.cpp's tokenizer does for gpt-oss).
#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "server/api/app.h"
#include "server/api/openai_chat/chat_response.h"

namespace ggufd::test {
namespace {

using nlohmann::json;

// A byte-level BPE vocabulary: "a", "b", the harmony markers (declared control, type 3, as in the
// gpt-oss GGUFs; the tokenizer makes all but <|return|> and <|call|> user-defined), words.
const std::vector<std::string> kTokens = {"a",         "b",           "<|start|>", "<|channel|>", "<|message|>",
                                          "<|end|>",   "<|return|>",  "<|call|>",  "analysis",    "final",
                                          "assistant", "Think",       "Ġhard",     "Four"};
enum : int32_t { kStart = 2, kChannel, kMessage, kEnd, kReturn, kCall, kAnalysis, kFinal, kAssistant, kThink, kHard, kFour };

class ChatHarmony : public testing::Test {
 protected:
  void SetUp() override {
    gguf::Writer w;
    w.set("tokenizer.ggml.model", gguf::OwnedValue::string("gpt2"));
    w.set("tokenizer.ggml.pre", gguf::OwnedValue::string("gpt-2"));
    w.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array(kTokens));
    std::vector<int32_t> types(kTokens.size(), 1);
    for (int32_t id = kStart; id <= kCall; ++id) types[static_cast<size_t>(id)] = 3;
    w.set("tokenizer.ggml.token_type", gguf::OwnedValue::i32_array(types));
    w.set("tokenizer.ggml.merges", gguf::OwnedValue::string_array({"a b"}));
    bytes_ = w.to_bytes();
    tokenizer_.emplace(engine::Tokenizer::from_gguf(gguf::File::parse(bytes_)));
    app_.tokenizer = &*tokenizer_;
    app_.model_id = "gpt-oss-test";
  }

  // What the scheduler emits per generated token: the id and its text (empty for control tokens).
  std::vector<engine::TokenEvent> events(const std::vector<int32_t>& ids) const {
    std::vector<engine::TokenEvent> out;
    for (int32_t id : ids) {
      engine::TokenEvent e;
      e.token = id;
      e.text = tokenizer_->is_control(id) ? "" : tokenizer_->decode(std::vector<int32_t>{id});
      out.push_back(e);
    }
    return out;
  }

  // <|channel|>analysis<|message|>Think hard<|end|><|start|>assistant<|channel|>final<|message|>Four
  const std::vector<int32_t> kOutput = {kChannel, kAnalysis, kMessage, kThink, kHard, kEnd, kStart,
                                        kAssistant, kChannel, kFinal, kMessage, kFour};

  // A chat request as prepare_chat makes it for a harmony model (App::chat_features).
  static std::shared_ptr<const server::ChatRequest> harmony_request() {
    auto r = std::make_shared<server::ChatRequest>();
    r->answer.reasoning = engine::tools::AnswerOptions::Reasoning::kHarmony;
    r->answer.syntax = engine::tools::ToolSyntax::kHarmony;
    return r;
  }

  std::vector<uint8_t> bytes_;
  std::optional<engine::Tokenizer> tokenizer_;
  server::App app_;
};

TEST_F(ChatHarmony, TheMarkersAreRenderedAndOnlyReturnAndCallEndGeneration) {
  ASSERT_TRUE(engine::HarmonyParser::applies_to(*tokenizer_));
  for (int32_t id : {kStart, kChannel, kMessage, kEnd}) EXPECT_FALSE(tokenizer_->is_control(id)) << id;
  EXPECT_EQ(tokenizer_->decode(std::vector<int32_t>{kChannel, kAnalysis, kMessage}), "<|channel|>analysis<|message|>");
  EXPECT_TRUE(tokenizer_->is_eog(kReturn));
  EXPECT_TRUE(tokenizer_->is_eog(kCall));
  EXPECT_FALSE(tokenizer_->is_eog(kEnd)) << "<|end|> must not end generation when <|return|> and <|call|> exist";
}

TEST_F(ChatHarmony, StreamedDeltasSplitReasoningFromContent) {
  const server::ChatFormatter f(app_, harmony_request());
  std::string reasoning, content;
  for (const engine::TokenEvent& e : events(kOutput)) {
    const json chunk = f.token_chunk(0, e);
    if (chunk.is_null()) continue;
    const json& delta = chunk["choices"][0]["delta"];
    EXPECT_FALSE(delta.contains("content") && delta.contains("reasoning_content")) << delta.dump();
    if (delta.contains("reasoning_content")) reasoning += delta["reasoning_content"].get<std::string>();
    if (delta.contains("content")) content += delta["content"].get<std::string>();
  }
  EXPECT_EQ(reasoning, "Think hard");
  EXPECT_EQ(content, "Four");
}

TEST_F(ChatHarmony, UnstreamedMessageHasBothParts) {
  const server::ChatFormatter f(app_, harmony_request());
  server::ChoiceResult c;
  c.tokens = events(kOutput);
  for (const engine::TokenEvent& e : c.tokens) c.text += e.text;
  const json r = f.response({c}, server::UsageTotals{});
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(m["content"], "Four");
  EXPECT_EQ(m["reasoning_content"], "Think hard");
  EXPECT_EQ(m["reasoning"], "Think hard");
}

TEST_F(ChatHarmony, TwoStreamedChoicesKeepTheirOwnState) {
  const server::ChatFormatter f(app_, harmony_request());
  const std::vector<engine::TokenEvent> ev = events(kOutput);
  std::string content[2];
  for (size_t i = 0; i < ev.size(); ++i) {
    for (int choice = 0; choice < 2; ++choice) {
      if (choice == 1 && i < 3) continue;  // choice 1 starts late: its own state, not choice 0's
      const json chunk = f.token_chunk(choice, ev[i]);
      if (!chunk.is_null() && chunk["choices"][0]["delta"].contains("content")) {
        content[choice] += chunk["choices"][0]["delta"]["content"].get<std::string>();
      }
    }
  }
  EXPECT_EQ(content[0], "Four");
  EXPECT_EQ(content[1], "Think hardFour") << "text before any marker is the answer";
}

TEST_F(ChatHarmony, AMessageToAnOfferedFunctionIsAToolCall) {
  auto request = std::make_shared<server::ChatRequest>(*harmony_request());
  request->answer.parse_calls = true;
  request->answer.names = {"get_weather"};
  const server::ChatFormatter f(app_, request);
  // <|call|> ends the output: an end-of-generation token, so never in the text
  const std::vector<std::string> pieces = {"<|channel|>analysis<|message|>Need it.<|end|><|start|>assistant",
                                           "<|channel|>commentary to=functions.get_weather <|constrain|>json",
                                           "<|message|>{\"city\": \"Oslo\"}"};
  server::ChoiceResult c;
  for (const std::string& p : pieces) c.text += p;
  const json r = f.response({c}, server::UsageTotals{});
  const json& m = r["choices"][0]["message"];
  EXPECT_EQ(r["choices"][0]["finish_reason"], "tool_calls");
  EXPECT_EQ(m["reasoning_content"], "Need it.");
  EXPECT_TRUE(m["content"].is_null()) << m.dump();
  ASSERT_EQ(m["tool_calls"].size(), 1u) << m.dump();
  EXPECT_EQ(m["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m["tool_calls"][0]["function"]["arguments"], "{\"city\":\"Oslo\"}");
  // streamed: the call goes out at the end (its body ends with the output)
  json calls = json::array();
  for (const std::string& p : pieces) {
    engine::TokenEvent e;
    e.token = 0;
    e.text = p;
    const json chunk = f.token_chunk(0, e);
    for (const json& one : chunk.is_array() ? chunk : json::array({chunk})) {
      if (!one.is_null()) {
        EXPECT_FALSE(one["choices"][0]["delta"].contains("tool_calls"));
      }
    }
  }
  const json end = f.finish_chunk(0, engine::FinishReason::kStop);
  ASSERT_TRUE(end.is_array()) << end.dump();
  for (const json& one : end) {
    for (const json& d : one["choices"][0]["delta"].value("tool_calls", json::array())) calls.push_back(d);
  }
  ASSERT_EQ(calls.size(), 2u) << end.dump();
  EXPECT_EQ(calls[0]["function"]["name"], "get_weather");
  EXPECT_EQ(calls[1]["function"]["arguments"], "{\"city\":\"Oslo\"}");
  EXPECT_EQ(end.back()["choices"][0]["finish_reason"], "tool_calls");
  // a message to a function nobody offered is neither a call nor text for the user
  server::ChoiceResult other;
  other.text = "<|channel|>commentary to=functions.rm <|constrain|>json<|message|>{}";
  const json other_reply = f.response({other}, server::UsageTotals{});
  const json& om = other_reply["choices"][0]["message"];
  EXPECT_FALSE(om.contains("tool_calls"));
  EXPECT_EQ(om["content"], "");
}

}  // namespace
}  // namespace ggufd::test
