#include "engine/text/tokenizer/spm.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "engine/text/tokenizer/utf8.h"

namespace engine::tokenizer {

namespace {

// Max-heap order: highest score first, then leftmost.
bool worse(const auto& a, const auto& b) {
  return a.score != b.score ? a.score < b.score : a.left > b.left;
}

}  // namespace

std::string escape_spaces(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 4);
  for (char c : text) {
    if (c == ' ') {
      out += "\xE2\x96\x81";
    } else {
      out += c;
    }
  }
  return out;
}

SpmEncoder::SpmEncoder(const Vocab& vocab) : vocab_(vocab) {
  for (int b = 0; b < 256; ++b) {
    char hex[8];
    std::snprintf(hex, sizeof hex, "<0x%02X>", b);
    int32_t id = vocab.find(hex);
    if (id == kNoToken) {
      const char c = static_cast<char>(b);
      id = vocab.find(std::string_view(&c, 1));
    }
    byte_tokens_[b] = id;
  }
}

void SpmEncoder::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::vector<Symbol> symbols;
  symbols.reserve(text.size());
  for (size_t offset = 0; offset < text.size();) {
    const size_t length =
        std::min(utf8_sequence_length(static_cast<uint8_t>(text[offset])), text.size() - offset);
    const auto index = static_cast<int32_t>(symbols.size());
    const bool last = offset + length == text.size();
    symbols.push_back({static_cast<uint32_t>(offset), static_cast<uint32_t>(length), index - 1,
                       last ? -1 : index + 1});
    offset += length;
  }
  std::vector<Candidate> heap;
  auto consider = [&](int32_t left, int32_t right) {
    if (left < 0 || right < 0) return;
    const uint32_t length = symbols[left].length + symbols[right].length;
    const int32_t id = vocab_.find(text.substr(symbols[left].start, length));
    if (id == kNoToken) return;
    heap.push_back({vocab_.score(id), left, right, length});
    std::push_heap(heap.begin(), heap.end(), worse<Candidate, Candidate>);
  };
  for (int32_t i = 1; i < static_cast<int32_t>(symbols.size()); ++i) consider(i - 1, i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), worse<Candidate, Candidate>);
    const Candidate top = heap.back();
    heap.pop_back();
    Symbol& left = symbols[top.left];
    Symbol& right = symbols[top.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != top.length) continue;
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = top.left;
    consider(left.prev, top.left);
    consider(top.left, left.next);
  }
  for (int32_t i = symbols.empty() ? -1 : 0; i != -1; i = symbols[i].next) {
    emit_symbol(text, symbols[i], out);
  }
}

// A final symbol is a token, or (a single character that is not) spelled out as byte tokens.
void SpmEncoder::emit_symbol(std::string_view text, const Symbol& symbol,
                             std::vector<int32_t>& out) const {
  const std::string_view piece = text.substr(symbol.start, symbol.length);
  const int32_t id = vocab_.find(piece);
  if (id != kNoToken) {
    out.push_back(id);
    return;
  }
  bool missing = false;
  for (char c : piece) {
    const int32_t byte_id = byte_tokens_[static_cast<uint8_t>(c)];
    if (byte_id != kNoToken) {
      out.push_back(byte_id);
    } else {
      missing = true;
    }
  }
  // No byte fallback in this vocabulary: the character is unknown.
  if (missing && vocab_.special().unk != kNoToken) out.push_back(vocab_.special().unk);
}

}  // namespace engine::tokenizer
