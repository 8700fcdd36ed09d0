// Tool-call parsers run over answers cut into pieces, for the parser tests: a streamed answer
// must parse the same however its text arrives.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/text/tools/answer_parser.h"
#include "engine/text/tools/tool_call_parser.h"

namespace ggufd::test {

// What a parser gave: the content around the calls, and the calls.
struct ParsedCalls {
  std::string content;
  std::vector<engine::tools::ToolCall> calls;
};

// Feeds `pieces` to `parser` in turn, then flushes it.
inline ParsedCalls feed(engine::tools::ToolCallParser& parser, const std::vector<std::string>& pieces) {
  ParsedCalls out;
  auto take = [&](engine::tools::ToolCallParser::Delta d) {
    out.content += d.content;
    for (engine::tools::ToolCall& c : d.calls) out.calls.push_back(std::move(c));
  };
  for (const std::string& s : pieces) take(parser.push(s));
  take(parser.flush());
  return out;
}

// `text` through fresh parsers from make() whole, byte by byte and cut in two at every byte: every
// way must give the same content and calls (names and arguments). Returns the whole text's parse.
template <class Make>
ParsedCalls parse_every_way(const Make& make, const std::string& text) {
  auto run = [&](const std::vector<std::string>& pieces) {
    auto parser = make();
    return feed(parser, pieces);
  };
  const ParsedCalls whole = run({text});
  const auto same = [&](const ParsedCalls& p, const std::string& how) {
    EXPECT_EQ(p.content, whole.content) << how;
    ASSERT_EQ(p.calls.size(), whole.calls.size()) << how;
    for (size_t i = 0; i < p.calls.size(); ++i) {
      EXPECT_EQ(p.calls[i].name, whole.calls[i].name) << how;
      EXPECT_EQ(p.calls[i].arguments, whole.calls[i].arguments) << how;
    }
  };
  std::vector<std::string> bytes;
  for (char c : text) bytes.emplace_back(1, c);
  same(run(bytes), "byte by byte");
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    same(run({text.substr(0, cut), text.substr(cut)}), "cut at " + std::to_string(cut));
  }
  return whole;
}

// `text` through a fresh AnswerParser of `options`, pushed `step` bytes at a time, then flushed:
// its reasoning, content and calls put together.
inline engine::tools::AnswerParser::Delta answer_in_steps(const engine::tools::AnswerOptions& options,
                                                          const std::string& text, size_t step) {
  engine::tools::AnswerParser p(options);
  engine::tools::AnswerParser::Delta all;
  const auto take = [&](engine::tools::AnswerParser::Delta d) {
    all.reasoning += d.reasoning;
    all.content += d.content;
    for (engine::tools::ToolCall& call : d.calls) all.calls.push_back(std::move(call));
  };
  for (size_t i = 0; i < text.size(); i += step) take(p.push(std::string_view(text).substr(i, step)));
  take(p.flush());
  return all;
}

}  // namespace ggufd::test
