// gpt-oss's "harmony" output format, split into reasoning and answer as it streams.
//
// The model writes messages `<|channel|>NAME[ to=RECIPIENT][<|constrain|>TYPE]<|message|>BODY<|end|>`,
// the second and later each after `<|start|>ROLE` (the prompt ends with `<|start|>assistant`), and
// ends with `<|return|>` or `<|call|>` (end-of-generation tokens, never seen here). Bodies of the
// analysis channel are the model's reasoning; the final channel's (and commentary's) are the answer.
// The markers are control tokens, so they come as token ids with no text.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace engine {

class Tokenizer;

// The ids of harmony's markers in a vocabulary.
struct HarmonyTokens {
  int32_t start = -1;
  int32_t channel = -1;
  int32_t message = -1;
  int32_t end = -1;
  int32_t constrain = -1;  // optional (-1: absent)

  // The vocabulary's markers, or nullopt unless it has <|start|>, <|channel|>, <|message|> and
  // <|end|> (o200k_harmony, gpt-oss's tokenizer).
  static std::optional<HarmonyTokens> find(const Tokenizer& tok);
};

// One choice's output as it arrives, token by token. Not thread-safe; one per choice.
class HarmonyParser {
 public:
  struct Delta {
    std::string reasoning;  // analysis-channel text
    std::string content;    // the answer's text
  };

  explicit HarmonyParser(const HarmonyTokens& tokens) : tokens_(tokens) {}

  // One generated token: `text` is what the stream released with it (text held back from earlier
  // tokens comes first, so it is taken before the token's own effect); `token` is its id, or -1
  // for text alone (the final flush). Returns the text this adds to each part.
  Delta push(int32_t token, std::string_view text);

 private:
  enum class State {
    kBody,       // inside a message's body
    kChannel,    // after <|channel|>: the channel name and recipient
    kConstrain,  // after <|constrain|>: the content type (json)
    kHeader,     // after <|start|> or <|end|>: the role, or nothing
  };

  const HarmonyTokens tokens_;
  // Text before any marker is taken as the answer (a prompt that already opened the final channel).
  State state_ = State::kBody;
  std::string header_;             // the channel header being read
  bool reasoning_channel_ = false;  // the current body is the analysis channel's
};

}  // namespace engine
