#include "engine/text/reasoning.h"

#include <algorithm>

namespace engine {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

size_t skip_space(std::string_view s) {
  size_t i = 0;
  while (i < s.size() && is_space(s[i])) ++i;
  return i;
}

// Length of the longest tail of `s` that is a proper prefix of `tag`.
size_t partial_tail(std::string_view s, std::string_view tag) {
  for (size_t n = std::min(tag.size() - 1, s.size()); n > 0; --n) {
    if (s.substr(s.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

// Length of the trailing whitespace of `s`.
size_t space_tail(std::string_view s) {
  size_t n = 0;
  while (n < s.size() && is_space(s[s.size() - 1 - n])) ++n;
  return n;
}

}  // namespace

bool template_thinks(std::string_view src) {
  return src.find(kThinkTags.open) != std::string_view::npos || src.find(kGemma4ThoughtTags.open) != std::string_view::npos;
}

ThinkTags template_think_tags(std::string_view src) {
  return src.find(kGemma4ThoughtTags.open) != std::string_view::npos ? kGemma4ThoughtTags : kThinkTags;
}

bool prompt_opens_thinking(std::string_view prompt, ThinkTags tags) {
  const size_t open = prompt.rfind(tags.open);
  return open != std::string_view::npos && prompt.find(tags.close, open) == std::string_view::npos;
}

ThinkParser::ThinkParser(bool inside, ThinkTags tags) : state_(inside ? State::kThinking : State::kStart), tags_(tags) {}

void ThinkParser::run(Delta& d) {
  const std::string_view open_tag = tags_.open, close_tag = tags_.close;
  for (;;) {
    std::string_view p = pending_;
    if (state_ == State::kStart) {
      const size_t i = skip_space(p);
      const std::string_view rest = p.substr(i);
      if (rest.substr(0, open_tag.size()) == open_tag) {
        state_ = State::kThinking;
        pending_.erase(0, i + open_tag.size());
        continue;
      }
      if (open_tag.substr(0, rest.size()) == rest) return;  // whitespace or "<thi": wait
      state_ = State::kAnswer;
      continue;
    }
    if (state_ == State::kThinking) {
      if (!think_started_) {
        pending_.erase(0, skip_space(p));
        p = pending_;
        if (p.empty()) return;
        think_started_ = true;
      }
      if (const size_t close = p.find(close_tag); close != std::string_view::npos) {
        const std::string_view body = p.substr(0, close);
        d.reasoning.append(body.substr(0, body.size() - space_tail(body)));
        pending_.erase(0, close + close_tag.size());
        state_ = State::kAnswer;
        continue;
      }
      // hold back a possible "</thi" and the whitespace before it (dropped if the tag follows)
      size_t hold = partial_tail(p, close_tag);
      hold += space_tail(p.substr(0, p.size() - hold));
      d.reasoning.append(p.substr(0, p.size() - hold));
      pending_.erase(0, p.size() - hold);
      return;
    }
    if (!answer_started_) {
      pending_.erase(0, skip_space(p));
      if (pending_.empty()) return;
      answer_started_ = true;
    }
    d.content.append(pending_);
    pending_.clear();
    return;
  }
}

ThinkParser::Delta ThinkParser::push(std::string_view text) {
  Delta d;
  pending_.append(text);
  run(d);
  return d;
}

ThinkParser::Delta ThinkParser::flush() {
  Delta d;
  if (state_ == State::kThinking) {
    const std::string_view p = pending_;
    d.reasoning.append(p.substr(0, p.size() - space_tail(p)));
  } else if (state_ == State::kStart) {
    d.content.append(pending_.substr(skip_space(pending_)));  // a cut "<thi": text after all
  } else if (answer_started_) {
    d.content.append(pending_);
  }
  pending_.clear();
  return d;
}

}  // namespace engine
