// libFuzzer target: a model's output as the chat endpoint reads it (AnswerParser: <think> blocks,
// harmony channels, every tool-call syntax). The first byte picks the syntax (bits 0-2; bit 6: lfm2), the
// reasoning kind (bits 3-4) and whether the prompt opened a think block (bit 5); the second byte
// where the text is cut in two; the rest is the output text.
//
// Checked: the split does not depend on the cut (streamed and unstreamed answers agree), every
// call names an offered function and carries a JSON object of arguments, and no text is lost or
// invented beyond what the syntax's markers, tags and separators account for (the parts never add
// up to more than the input).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "engine/text/tools/answer_parser.h"

namespace {

using engine::tools::AnswerOptions;
using engine::tools::AnswerParser;
using engine::tools::ToolSyntax;

[[noreturn]] void bug(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz_answer: %s: %s\n", what, detail.c_str());
  std::abort();
}

AnswerParser::Delta run(const AnswerOptions& o, std::string_view text, size_t cut) {
  AnswerParser p(o);
  AnswerParser::Delta all;
  auto take = [&all](AnswerParser::Delta d) {
    all.reasoning += d.reasoning;
    all.content += d.content;
    for (auto& c : d.calls) all.calls.push_back(std::move(c));
  };
  take(p.push(text.substr(0, cut)));
  take(p.push(text.substr(cut)));
  take(p.flush());
  return all;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  AnswerOptions o;
  o.syntax = (data[0] & 0x40) != 0 ? ToolSyntax::kLfm2 : static_cast<ToolSyntax>(data[0] & 7);  // all nine syntaxes
  o.reasoning = static_cast<AnswerOptions::Reasoning>(((data[0] >> 3) & 3) % 3);
  o.starts_in_think = (data[0] & 0x20) != 0;
  o.parse_calls = true;
  o.names = {"get_weather", "search", "f"};
  if (o.syntax == ToolSyntax::kGemma4) o.think_tags = engine::kGemma4ThoughtTags;
  o.tools = {{"search", "", nlohmann::ordered_json::parse(R"({"type": "object", "properties": {"q": {"type": "string"},
      "n": {"type": "integer"}, "o": {"type": "object"}}})")}};
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const size_t cut = text.empty() ? 0 : data[1] % (text.size() + 1);
  const AnswerParser::Delta whole = run(o, text, text.size());
  const AnswerParser::Delta split = run(o, text, cut);
  if (whole.reasoning != split.reasoning) bug("reasoning depends on the cut", whole.reasoning + " | " + split.reasoning);
  if (whole.content != split.content) bug("content depends on the cut", whole.content + " | " + split.content);
  if (whole.calls.size() != split.calls.size()) bug("calls depend on the cut", std::to_string(whole.calls.size()));
  size_t out = whole.reasoning.size() + whole.content.size();
  for (size_t i = 0; i < whole.calls.size(); ++i) {
    const auto& c = whole.calls[i];
    if (c.name != split.calls[i].name || c.arguments != split.calls[i].arguments) bug("a call depends on the cut", c.name);
    if (c.name != "get_weather" && c.name != "search" && c.name != "f") bug("a call to an unoffered function", c.name);
    const auto args = nlohmann::ordered_json::parse(c.arguments, nullptr, false);
    if (args.is_discarded() || !args.is_object()) bug("arguments that are not a JSON object", c.arguments);
    out += c.name.size();
  }
  if (whole.calls.empty() && out > text.size()) bug("more text out than in", std::to_string(out));
  return 0;
}
