#include "engine/text/tools/tool_syntax.h"

#include <chrono>
#include <random>

namespace engine::tools {

ToolSyntax detect_tool_syntax(std::string_view src, bool harmony_vocab) {
  if (harmony_vocab) return ToolSyntax::kHarmony;
  const auto has = [&](std::string_view s) { return src.find(s) != std::string_view::npos; };
  if (!has("tools")) return ToolSyntax::kGeneric;  // the template never looks at tools
  // gpt-oss's template (served on another vocabulary, or read by `ggufd template --template`)
  if (has("<|start|>") && has("<|channel|>") && has("<|message|>")) return ToolSyntax::kHarmony;
  if (has("<|tool_call>call:")) return ToolSyntax::kGemma4;
  // LFM2 lists the tools between <|tool_list_start|> and <|tool_list_end|>, LFM2.5 after a plain
  // "List of tools: [" (its templates need not show a call at all)
  if (has("<|tool_list_start|>") || has("List of tools: [") || has("<|tool_call_start|>")) return ToolSyntax::kLfm2;
  if (has("[TOOL_CALLS]")) return ToolSyntax::kMistral;
  if (has("<|tool_call|>")) return ToolSyntax::kGranite;
  if (has("<tool_call>") && has("<function=") && has("<parameter=")) return ToolSyntax::kQwenXml;
  if (has("<tool_call>")) return ToolSyntax::kHermes;
  if (has("<|python_tag|>") || (has("<|start_header_id|>") && has("\"parameters\""))) return ToolSyntax::kLlama3;
  return ToolSyntax::kGeneric;
}

const char* tool_syntax_name(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kGeneric: return "generic";
    case ToolSyntax::kHermes: return "hermes";
    case ToolSyntax::kLlama3: return "llama3";
    case ToolSyntax::kMistral: return "mistral";
    case ToolSyntax::kGranite: return "granite";
    case ToolSyntax::kHarmony: return "harmony";
    case ToolSyntax::kQwenXml: return "qwen_xml";
    case ToolSyntax::kGemma4: return "gemma4";
    case ToolSyntax::kLfm2: return "lfm2";
  }
  return "generic";
}

std::vector<CallMarker> call_markers(ToolSyntax syntax) {
  switch (syntax) {
    case ToolSyntax::kGeneric: return {{"{\"tool_calls\"", true, false}};
    case ToolSyntax::kHermes: return {{"<tool_call>", false, false}};
    case ToolSyntax::kLlama3: return {{"<|python_tag|>", false, false}, {"{", true, true}};
    case ToolSyntax::kMistral: return {{"[TOOL_CALLS]", false, false}};
    case ToolSyntax::kGranite: return {{"<|tool_call|>", false, false}};
    case ToolSyntax::kHarmony: return {};  // calls are messages to a recipient (HarmonyParser)
    case ToolSyntax::kQwenXml: return {{"<tool_call>", false, false}};
    case ToolSyntax::kGemma4: return {{"<|tool_call>", false, false}};
    case ToolSyntax::kLfm2: return {{"<|tool_call_start|>", false, false}};
  }
  return {};
}

std::vector<std::string> syntax_texts(ToolSyntax syntax) {
  std::vector<std::string> out;
  for (CallMarker& m : call_markers(syntax)) out.push_back(std::move(m.text));
  if (syntax == ToolSyntax::kHermes || syntax == ToolSyntax::kQwenXml) out.push_back("</tool_call>");
  if (syntax == ToolSyntax::kGemma4) out.insert(out.end(), {"<tool_call|>", "<|\"|>"});
  if (syntax == ToolSyntax::kLfm2) out.push_back("<|tool_call_end|>");
  return out;
}

std::string generic_tools_prompt(const std::vector<ToolDef>& tools, bool parallel) {
  std::string out = "You can call the following tools. Their names, descriptions and JSON-schema parameters:\n";
  for (const ToolDef& t : tools) {
    nlohmann::ordered_json fn = {{"name", t.name}};
    if (!t.description.empty()) fn["description"] = t.description;
    fn["parameters"] = t.parameters;
    out += fn.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
  }
  out += parallel
             ? "\nTo call tools, reply with only this JSON object, one entry per call:\n"
               "{\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<arguments>}}]}\n"
             : "\nTo call a tool, reply with only this JSON object:\n"
               "{\"tool_calls\": [{\"name\": \"<tool name>\", \"arguments\": {<arguments>}}]}\n";
  out += "Otherwise answer in plain text.";
  return out;
}

std::string make_call_id(ToolSyntax syntax) {
  static constexpr std::string_view kChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng(std::random_device{}() ^
                                   static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  const size_t n = syntax == ToolSyntax::kMistral ? 9 : 24;
  std::string id = syntax == ToolSyntax::kMistral ? "" : "call_";
  std::uniform_int_distribution<size_t> pick(0, kChars.size() - 1);
  for (size_t i = 0; i < n; ++i) id += kChars[pick(rng)];
  return id;
}

}  // namespace engine::tools
