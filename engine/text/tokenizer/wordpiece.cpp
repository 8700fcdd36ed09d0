#include "engine/text/tokenizer/wordpiece.h"

#include <algorithm>

#include "engine/text/tokenizer/unicode_props.h"
#include "engine/text/tokenizer/utf8.h"

namespace engine::tokenizer {

namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581, the vocabulary's word start
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

}  // namespace

bool is_cjk_ideograph(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) ||
         (cp >= 0x2B920 && cp <= 0x2CEAF) ||  // sic: 0x2B820 in Unicode, 0x2B920 in the reference
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

WordPieceEncoder::WordPieceEncoder(const Vocab& vocab)
    : vocab_(vocab),
      lowercase_(vocab.flags().lowercase),
      strip_accents_(vocab.flags().strip_accents) {
  for (uint32_t byte = 0; byte < ascii_actions_.size(); ++byte) {
    uint32_t cp = byte;
    ascii_actions_[byte] = classify(cp);
    ascii_normalized_[byte] = static_cast<char>(cp);
  }
}

// The reference's order: decomposition first, then the flags of the result decide.
WordPieceEncoder::Action WordPieceEncoder::classify(uint32_t& cp) const {
  if (strip_accents_) cp = unicode::nfd_base(cp);
  const uint16_t flags = unicode::code_point_flags(cp);
  if (flags & unicode::kWhitespace) return Action::kBreak;
  if (cp == 0 || cp == kReplacementChar || (flags & unicode::kControl)) return Action::kDrop;
  if (strip_accents_ && (flags & unicode::kMark)) return Action::kDrop;
  const bool alone = (flags & unicode::kPunctuation) || (cp < 0x7F && (flags & unicode::kSymbol)) ||
                     is_cjk_ideograph(cp);
  if (lowercase_) cp = unicode::lowercase(cp);
  return alone ? Action::kAlone : Action::kAppend;
}

void WordPieceEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::string word(kWordStart);  // the word being built, behind its word-start prefix
  word.reserve(64);
  const auto finish_word = [&] {
    if (word.size() > kWordStart.size()) encode_word(word, out);
    word.resize(kWordStart.size());
  };
  for (size_t offset = 0; offset < text.size();) {
    const auto byte = static_cast<uint8_t>(text[offset]);
    uint32_t cp = byte;
    Action action;
    if (byte < 0x80) {
      ++offset;
      action = ascii_actions_[byte];
      cp = static_cast<uint8_t>(ascii_normalized_[byte]);
    } else if (!decode_utf8(text, offset, cp)) {
      ++offset;  // invalid UTF-8: U+FFFD in the reference, which drops it
      continue;
    } else if (cp > kMaxCodePoint) {
      continue;  // the reference fails on these (it cannot encode them back); we drop them
    } else {
      action = classify(cp);
    }
    switch (action) {
      case Action::kDrop: break;
      case Action::kBreak: finish_word(); break;
      case Action::kAppend: append_utf8(word, cp); break;
      case Action::kAlone:
        finish_word();
        append_utf8(word, cp);
        finish_word();
        break;
    }
  }
  finish_word();
}

// Greedy longest match from the left, on bytes (pieces after the first are the "##" ones, stored
// without the "##"); when some position matches nothing, the whole word is [UNK].
void WordPieceEncoder::encode_word(std::string_view word, std::vector<int32_t>& out) const {
  const size_t first_id = out.size();
  const size_t max_length = vocab_.max_token_length();
  for (size_t start = 0; start < word.size();) {
    int32_t id = kNoToken;
    size_t end = std::min(word.size(), start + max_length);
    for (; end > start; --end) {
      id = vocab_.find(word.substr(start, end - start));
      if (id != kNoToken) break;
    }
    if (id == kNoToken) {
      out.resize(first_id);
      break;
    }
    out.push_back(id);
    start = end;
  }
  if (out.size() == first_id && vocab_.special().unk != kNoToken) {
    out.push_back(vocab_.special().unk);
  }
}

}  // namespace engine::tokenizer
