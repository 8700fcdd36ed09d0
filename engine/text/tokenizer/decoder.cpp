#include "engine/text/tokenizer/decoder.h"

#include <algorithm>
#include <stdexcept>

#include "engine/text/tokenizer/bpe.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/tokenizer/utf8.h"

namespace engine::tokenizer {

namespace {

constexpr std::string_view kEscapedSpace = "\xE2\x96\x81";

std::string unescape_spaces(std::string_view text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 3) == kEscapedSpace) {
      out += ' ';
      i += 3;
    } else {
      out += text[i++];
    }
  }
  return out;
}

std::string byte_level_decode(std::string_view text) {
  std::string out;
  for (size_t offset = 0; offset < text.size();) {
    const size_t start = offset;
    uint32_t cp = 0;
    if (!decode_utf8(text, offset, cp)) {
      out += text[offset++];
      continue;
    }
    const int byte = byte_from_code_point(cp);
    if (byte >= 0) {
      out += static_cast<char>(byte);
    } else {
      out.append(text.substr(start, offset - start));
    }
  }
  return out;
}

// "<0xAB>" -> 0xAB; -1 when the text is not in that form.
int parse_byte_token(std::string_view text) {
  if (text.size() != 6 || text.substr(0, 3) != "<0x" || text[5] != '>') return -1;
  int value = 0;
  for (char c : text.substr(3, 2)) {
    value <<= 4;
    if (c >= '0' && c <= '9') value |= c - '0';
    else if (c >= 'A' && c <= 'F') value |= c - 'A' + 10;
    else if (c >= 'a' && c <= 'f') value |= c - 'a' + 10;
    else return -1;
  }
  return value;
}

std::string render(const Vocab& vocab, int32_t id) {
  const std::string_view text = vocab.text(id);
  if (vocab.has_attr(id, kAttrUnknown | kAttrControl | kAttrUserDefined)) return std::string(text);
  if (vocab.has_attr(id, kAttrNormal)) {
    if (vocab.kind() == VocabKind::kBytePairEncoding && !vocab.flags().spm_style) {
      return byte_level_decode(text);
    }
    return unescape_spaces(text);
  }
  if (vocab.has_attr(id, kAttrByte)) {
    const int byte = parse_byte_token(text);
    return byte < 0 ? std::string(text) : std::string(1, static_cast<char>(byte));
  }
  return {};
}

}  // namespace

void check_token_id(int32_t id, int32_t n_vocab) {
  if (id < 0 || id >= n_vocab) {
    throw std::out_of_range("invalid token id " + std::to_string(id) + " (vocabulary has " +
                            std::to_string(n_vocab) + " tokens)");
  }
}

PieceTable::PieceTable(const Vocab& vocab) {
  const int32_t n = vocab.size();
  offsets_.reserve(n + 1);
  offsets_.push_back(0);
  hidden_.resize(n);
  normal_.resize(n);
  for (int32_t id = 0; id < n; ++id) {
    arena_ += render(vocab, id);
    offsets_.push_back(arena_.size());
    hidden_[id] = vocab.has_attr(id, kAttrUnknown | kAttrControl);
    normal_[id] = vocab.has_attr(id, kAttrNormal) && !vocab.has_attr(id, kAttrUserDefined);
  }
  strip_space_ = (vocab.kind() == VocabKind::kSentencePiece && vocab.flags().add_space_prefix) ||
                 vocab.kind() == VocabKind::kWordPiece;
}

std::string_view PieceTable::piece(int32_t id, bool render_special) const {
  check_token_id(id, size());
  if (hidden_[id] && !render_special) return {};
  return std::string_view(arena_).substr(offsets_[id], offsets_[id + 1] - offsets_[id]);
}

}  // namespace engine::tokenizer

namespace engine {

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer) : StreamDecoder(tokenizer, Options{}) {}

StreamDecoder::StreamDecoder(const Tokenizer& tokenizer, Options options)
    : tokenizer_(&tokenizer),
      render_special_(options.render_special),
      shown_(std::move(options.shown)),
      strip_pending_(options.strip_leading_space) {}

std::string StreamDecoder::push(int32_t id) {
  const bool special = render_special_ || (!shown_.empty() && std::binary_search(shown_.begin(), shown_.end(), id));
  std::string_view piece = tokenizer_->piece(id, special);
  if (strip_pending_ && !piece.empty()) {
    if (tokenizer_->strips_leading_space(id) && piece.front() == ' ') piece.remove_prefix(1);
    strip_pending_ = false;
  }
  pending_.append(piece);
  return take_complete();
}

// Emits every complete character; invalid bytes become U+FFFD; an unfinished character that the
// next bytes could still complete stays pending.
std::string StreamDecoder::take_complete() {
  const size_t complete = tokenizer::complete_utf8_prefix(pending_);
  std::string out = tokenizer::sanitize_utf8(std::string_view(pending_).substr(0, complete));
  pending_.erase(0, complete);
  return out;
}

std::string StreamDecoder::flush() {
  std::string out = tokenizer::sanitize_utf8(pending_);
  pending_.clear();
  return out;
}

}  // namespace engine
