// Grammars that make a model's output a valid tool call (tool_choice "required" or a named
// function), or constrain a call once the model opens one (tool_choice "auto": a lazy grammar).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/text/grammar/grammar.h"
#include "engine/text/tools/tool_syntax.h"

namespace engine::tools {

// Calls one answer may hold under a grammar. A bound, so that a forced answer ends even when the
// model (a tiny or random one) would go on adding calls: after this many, only the end may follow.
inline constexpr uint32_t kMaxParallelCalls = 8;

struct ToolGrammarOptions {
  ToolSyntax syntax = ToolSyntax::kGeneric;
  std::vector<ToolDef> tools;  // the functions that may be called (one for a named tool_choice)
  bool parallel = true;        // several calls in one answer (where the syntax has a way)
  // Lazy (tool_choice "auto"): the grammar describes the output from a call marker on, and the
  // model writes freely until it writes one (ToolGrammar::triggers). Otherwise the whole output
  // must be calls.
  bool lazy = false;
  // Forced grammars when the prompt opened a think block (DeepSeek-R1's templates): the output
  // continues it up to </think>, then the calls follow. Otherwise a forced grammar starts with
  // the calls: no think block, so a call is sure to come however the model would ramble.
  enum class Think { kNone, kInside };
  Think think = Think::kNone;
  std::string think_close = "</think>";  // kInside: the tag that ends the block
};

struct ToolGrammar {
  std::shared_ptr<const grammar::Grammar> grammar;
  std::vector<std::string> triggers;  // lazy: where the grammar starts (the text is part of it)
};

// Where a lazy grammar of `syntax` starts: its call markers ("<tool_call>", "[TOOL_CALLS]", ...;
// Llama 3: also "{\"name\"", harmony: "to=functions.").
std::vector<std::string> lazy_triggers(ToolSyntax syntax);

// Arguments follow each function's JSON schema (grammar/json_schema.h); a schema we cannot
// enforce constrains its arguments to any JSON object instead (the call's shape still holds).
// Throws grammar::GrammarError when the grammar exceeds its limits.
ToolGrammar tool_grammar(const ToolGrammarOptions& options);

// Any text up to and including the first `marker` (ASCII): rules added to `b`, returned as a
// reference. Used for think blocks and harmony's analysis messages.
grammar::Expr text_until(grammar::GrammarBuilder& b, const std::string& marker);

}  // namespace engine::tools
