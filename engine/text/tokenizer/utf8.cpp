#include "engine/text/tokenizer/utf8.h"

namespace engine::tokenizer {

namespace {

bool is_continuation(uint8_t byte) { return (byte & 0xC0) == 0x80; }

bool is_scalar_value(uint32_t cp) { return cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF); }

// Minimal code point for a sequence of each length (anything lower is an overlong form).
constexpr uint32_t kMinForLength[5] = {0, 0, 0x80, 0x800, 0x10000};

}  // namespace

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

bool decode_utf8(std::string_view text, size_t& offset, uint32_t& cp) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[offset + i]); };
  const uint8_t lead = byte(0);
  size_t length = 0;
  if (lead < 0x80) {
    cp = lead;
    offset += 1;
    return true;
  } else if ((lead & 0xE0) == 0xC0) {
    length = 2;
    cp = lead & 0x1F;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    cp = lead & 0x0F;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    cp = lead & 0x07;
  } else {
    return false;  // stray continuation byte or 0xF8..0xFF
  }
  if (offset + length > text.size()) return false;
  for (size_t i = 1; i < length; ++i) {
    if (!is_continuation(byte(i))) return false;
    cp = (cp << 6) | (byte(i) & 0x3F);
  }
  offset += length;
  return true;
}

bool has_surrogate(std::string_view text) {
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (surrogate_at(text, i)) return true;
  }
  return false;
}

std::string sanitize_utf8(std::string_view text, bool keep_surrogates) {
  std::string out;
  out.reserve(text.size());
  size_t offset = 0;
  while (offset < text.size()) {
    const size_t start = offset;
    uint32_t cp = 0;
    if (!decode_utf8(text, offset, cp)) {
      append_utf8(out, kReplacementChar);
      offset = start + 1;
    } else if (!is_scalar_value(cp) && !(keep_surrogates && cp >= 0xD800 && cp <= 0xDFFF)) {
      append_utf8(out, kReplacementChar);
    } else if (offset - start > 1 && cp < kMinForLength[offset - start]) {
      append_utf8(out, cp);  // overlong: keep the character, in its shortest form
    } else {
      out.append(text.substr(start, offset - start));
    }
  }
  return out;
}

bool is_valid_utf8(std::string_view text) {
  size_t offset = 0;
  while (offset < text.size()) {
    const size_t start = offset;
    uint32_t cp = 0;
    if (!decode_utf8(text, offset, cp) || !is_scalar_value(cp)) return false;
    if (offset - start > 1 && cp < kMinForLength[offset - start]) return false;
  }
  return true;
}

size_t complete_utf8_prefix(std::string_view bytes) {
  // Look back at most 3 bytes for a lead byte whose sequence is still incomplete.
  const size_t n = bytes.size();
  for (size_t back = 1; back <= 3 && back <= n; ++back) {
    const auto byte = static_cast<uint8_t>(bytes[n - back]);
    if (is_continuation(byte)) continue;
    if (byte < 0xC0 || byte >= 0xF8) return n;  // ASCII or invalid lead: nothing to wait for
    const size_t needed = utf8_sequence_length(byte);
    return needed > back ? n - back : n;
  }
  return n;
}

}  // namespace engine::tokenizer
