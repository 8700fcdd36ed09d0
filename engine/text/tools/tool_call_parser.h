// Reading tool calls out of a model's answer as it streams (syntaxes: tool_syntax.h).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/tools/tool_syntax.h"

namespace engine::tools {

// The call object {"name": ..., "arguments" (or "parameters"): {...} or "{...}"} as a ToolCall,
// or nullopt when it is not one or names a function not in `names`.
std::optional<ToolCall> call_from_json(const nlohmann::ordered_json& j, const std::vector<std::string>& names);

// Splits one answer into content and calls, piece by piece. Text before, between and after calls
// is content; a call section (marker + JSON) is held back until it is complete, then becomes
// calls if every call in it is to one of the offered functions with a JSON object of arguments,
// and content otherwise, so no unknown function ever reaches the client as a call. Whitespace
// right after a call is dropped (the separator between calls). A trailing
// piece that may be the start of a marker is held back until the next push or flush().
// The result does not depend on how the text is cut into pieces.
// Not thread-safe; one per choice.
class ToolCallParser {
 public:
  struct Delta {
    std::string content;
    std::vector<ToolCall> calls;
  };

  // `tools`: the offered functions' definitions, where the syntax reads arguments by their
  // schema (kQwenXml's parameter types); may be empty.
  ToolCallParser(ToolSyntax syntax, std::vector<std::string> names, std::vector<ToolDef> tools = {});

  Delta push(std::string_view text);
  // At the end of the answer: an open section whose calls are complete (a missing closing tag) is
  // taken as calls; one cut off (max_tokens) inside its calls gives the complete calls of its list
  // and drops the rest (the syntax's text never becomes content); anything else held back is
  // content.
  Delta flush();

 private:
  enum class Section { kIncomplete, kInvalid, kDone };
  struct Found {
    size_t at;      // where the marker starts in buf_
    size_t marker;  // index into markers_
  };
  std::optional<Found> find_marker() const;
  size_t held_back() const;  // length of buf_'s tail that may still become a marker
  Section parse_section(bool at_end, size_t& consumed, std::vector<ToolCall>& calls) const;
  void emit_content(std::string_view text, Delta& d);
  void run(Delta& d);

  ToolSyntax syntax_;
  std::vector<std::string> names_;
  std::vector<ToolDef> tools_;
  std::vector<CallMarker> markers_;
  std::string buf_;                // text not yet emitted (outside a section)
  std::string section_;            // a section's text after its marker (with it, for keep markers)
  std::optional<size_t> open_;     // the marker of the open section
  bool answered_ = false;          // non-whitespace content has been emitted
  bool after_call_ = false;        // only whitespace since the last call (dropped)
};

}  // namespace engine::tools
