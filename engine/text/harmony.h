// gpt-oss's "harmony" output format, split into reasoning and answer as it streams.
//
// The model writes messages `<|channel|>NAME[ to=RECIPIENT][<|constrain|>TYPE]<|message|>BODY<|end|>`,
// the second and later each after `<|start|>ROLE` (the prompt ends with `<|start|>assistant`), and
// ends with `<|return|>` or `<|call|>` (end-of-generation tokens, never output). Bodies of the
// analysis channel are the model's reasoning; the final channel's (and commentary's) are the
// answer. The markers are user-defined tokens in o200k_harmony, so they arrive as text (the
// reference tokenizer renders them too); the parser reads the text, holding back a possible
// marker cut between two pieces.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace engine {

class Tokenizer;

// One choice's output as it arrives, piece by piece. Not thread-safe; one per choice.
class HarmonyParser {
 public:
  // A message to a function (`to=functions.NAME`): a tool call, its body the arguments.
  struct Call {
    std::string name;
    std::string arguments;
  };
  struct Delta {
    std::string reasoning;    // analysis-channel text
    std::string content;      // the answer's text
    std::vector<Call> calls;  // messages to functions, each once its body has ended
  };

  // `read_calls`: messages to functions are calls (Delta::calls); else their bodies are answer
  // text, as the commentary channel's are.
  explicit HarmonyParser(bool read_calls = true) : read_calls_(read_calls) {}

  // Whether the vocabulary has harmony's <|start|>, <|channel|>, <|message|> and <|end|>.
  static bool applies_to(const Tokenizer& tok);

  // The next piece of output text; returns what it adds to each part (a trailing "<|..." that may
  // still become a marker is held back until the next piece or flush()).
  Delta push(std::string_view text);
  // At the end of the output: what is held back, as text of the current part.
  Delta flush();

 private:
  enum class State {
    kBody,       // inside a message's body
    kChannel,    // after <|channel|>: the channel name and recipient
    kConstrain,  // after <|constrain|>: the content type (json)
    kHeader,     // after <|start|> or <|end|>: the role, or nothing
  };
  void emit(std::string_view text, Delta& d);
  void on_marker(std::string_view marker, Delta& d);
  void end_body(Delta& d);  // a call's body is complete

  // Text before any marker is taken as the answer (a prompt that already opened the final channel).
  State state_ = State::kBody;
  std::string pending_;             // unparsed text: a possible marker's start
  std::string role_;                // the role header after <|start|>: "assistant[ to=functions.f]"
  std::string header_;              // the channel header being read
  std::string call_;                // the function the current body is addressed to, if any
  std::string call_body_;           // that body so far
  bool reasoning_channel_ = false;  // the current body is the analysis channel's
  bool read_calls_;
};

}  // namespace engine
