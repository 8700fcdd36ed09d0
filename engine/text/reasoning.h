// Models that think before they answer (Qwen3, QwQ, DeepSeek-R1 distills, SmolLM3): their output
// is `<think>reasoning</think>answer`, split here into the two parts as it streams. Templates of
// some of them open the block in the prompt already (the output then starts inside it).
#pragma once

#include <string>
#include <string_view>

namespace engine {

// Whether a chat template writes or expects think blocks (its source mentions <think>).
bool template_thinks(std::string_view template_source);

// Whether a rendered prompt ends inside an open think block: its last "<think>" has no
// "</think>" after it (DeepSeek-R1's generation prompt ends in "<think>\n").
bool prompt_opens_thinking(std::string_view prompt);

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
  explicit ThinkParser(bool inside);

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
  bool think_started_ = false;  // reasoning text has begun (its leading whitespace is dropped)
  bool answer_started_ = false;
  std::string pending_;  // held back: whitespace, or a possible tag's start
};

}  // namespace engine
