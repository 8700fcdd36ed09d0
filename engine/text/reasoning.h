// Models that think before they answer (Qwen3, QwQ, DeepSeek-R1 distills, SmolLM3): their output
// is `<think>reasoning</think>answer`, split here into the two parts as it streams. Templates of
// some of them open the block in the prompt already (the output then starts inside it). Gemma 4
// writes the same with other tags: `<|channel>thought\nreasoning<channel|>answer`.
#pragma once

#include <string>
#include <string_view>

namespace engine {

// The tags around a think block.
struct ThinkTags {
  std::string_view open;
  std::string_view close;
};
inline constexpr ThinkTags kThinkTags{"<think>", "</think>"};
inline constexpr ThinkTags kGemma4ThoughtTags{"<|channel>thought", "<channel|>"};

// Whether a chat template writes or expects think blocks (its source mentions <think>, or
// Gemma 4's thought channel).
bool template_thinks(std::string_view template_source);

// The tags of the template's think blocks: Gemma 4's thought channel, else <think>.
ThinkTags template_think_tags(std::string_view template_source);

// Whether a rendered prompt ends inside an open think block: its last open tag has no close tag
// after it (DeepSeek-R1's generation prompt ends in "<think>\n").
bool prompt_opens_thinking(std::string_view prompt, ThinkTags tags = kThinkTags);

// One choice's output, piece by piece. The reasoning is the text of a <think> block that opens
// the output (or that the prompt opened), without the tags and the whitespace around them; all
// the rest is the answer, from its first non-whitespace character. Text that may be the start of a
// tag is held back until the next piece or flush(). Not thread-safe; one per choice.
class ThinkParser {
 public:
  struct Delta {
    std::string reasoning;
    std::string content;
  };

  // `inside`: the prompt opened the block.
  explicit ThinkParser(bool inside, ThinkTags tags = kThinkTags);

  Delta push(std::string_view text);
  Delta flush();

 private:
  enum class State {
    kStart,     // nothing but whitespace yet: a <think> may come
    kThinking,  // inside the block (leading whitespace dropped)
    kAnswer,    // after the block or without one
  };
  void run(Delta& d);

  State state_;
  ThinkTags tags_;
  bool think_started_ = false;  // reasoning text has begun (its leading whitespace is dropped)
  bool answer_started_ = false;
  std::string pending_;  // held back: whitespace, or a possible tag's start
};

}  // namespace engine
