#include "engine/text/jinja/text.h"

#include "engine/text/tokenizer/utf8.h"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace engine::jinja::text {

CodePoint decode(std::string_view s, size_t i) {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) return {b0, 1, true};
  size_t need = 0;
  char32_t cp = 0;
  char32_t min = 0;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    need = 1, cp = b0 & 0x1F, min = 0x80;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    need = 2, cp = b0 & 0x0F, min = 0x800;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    need = 3, cp = b0 & 0x07, min = 0x10000;
  } else {
    return {0xFFFD, 1, false};
  }
  if (i + need >= s.size()) return {0xFFFD, 1, false};
  for (size_t k = 1; k <= need; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if ((b & 0xC0) != 0x80) return {0xFFFD, 1, false};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {0xFFFD, 1, false};
  return {cp, need + 1, true};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) cp = 0xFFFD;  // not encodable
  tokenizer::append_utf8(out, static_cast<uint32_t>(cp));
}

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (size_t i = 0; i < s.size(); i += decode(s, i).length) ++n;
  return n;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t i = 0; i < s.size(); i += decode(s, i).length) offsets.push_back(i);
  offsets.push_back(s.size());
  return offsets;
}

bool is_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 ||
         c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F ||
         c == 0x205F || c == 0x3000;
}

size_t space_length(std::string_view s, size_t i) {
  if (i >= s.size()) return 0;
  const CodePoint cp = decode(s, i);
  return cp.valid && is_space(cp.value) ? cp.length : 0;
}

namespace {

// Code points of `chars` (or whitespace when `whitespace`), for strip().
struct CharSet {
  bool whitespace;
  std::vector<std::string_view> members;
  bool contains(std::string_view s, size_t i, size_t len) const {
    if (whitespace) return space_length(s, i) == len && len > 0;
    for (std::string_view m : members) {
      if (m == s.substr(i, len)) return true;
    }
    return false;
  }
};

std::string_view strip_set(std::string_view s, const CharSet& set, bool left, bool right) {
  const std::vector<size_t> at = code_point_offsets(s);
  size_t first = 0;
  size_t last = at.size() - 1;  // index of the end offset
  if (left) {
    while (first < last && set.contains(s, at[first], at[first + 1] - at[first])) ++first;
  }
  if (right) {
    while (last > first && set.contains(s, at[last - 1], at[last] - at[last - 1])) --last;
  }
  return s.substr(at[first], at[last] - at[first]);
}

}  // namespace

std::string_view strip_space(std::string_view s, bool left, bool right) {
  return strip_set(s, CharSet{true, {}}, left, right);
}

std::string_view strip_chars(std::string_view s, std::string_view chars, bool left, bool right) {
  CharSet set{false, {}};
  for (size_t i = 0; i < chars.size();) {
    const size_t len = decode(chars, i).length;
    set.members.push_back(chars.substr(i, len));
    i += len;
  }
  return strip_set(s, set, left, right);
}

std::vector<std::string> split_space(std::string_view s, int64_t maxsplit, bool from_right) {
  // Split into whitespace-separated words first, then re-join the words beyond maxsplit using the
  // original text so that their inner whitespace is preserved (as Python does).
  struct Span {
    size_t begin, end;
  };
  std::vector<Span> words;
  size_t i = 0;
  while (i < s.size()) {
    size_t n = space_length(s, i);
    if (n > 0) {
      i += n;
      continue;
    }
    const size_t begin = i;
    while (i < s.size() && space_length(s, i) == 0) i += decode(s, i).length;
    words.push_back({begin, i});
  }
  std::vector<std::string> parts;
  if (maxsplit < 0 || static_cast<uint64_t>(maxsplit) + 1 >= words.size()) {
    for (const Span& w : words) parts.emplace_back(s.substr(w.begin, w.end - w.begin));
    return parts;
  }
  const auto keep = static_cast<size_t>(maxsplit);
  if (!from_right) {
    for (size_t k = 0; k < keep; ++k) {
      parts.emplace_back(s.substr(words[k].begin, words[k].end - words[k].begin));
    }
    parts.emplace_back(s.substr(words[keep].begin));  // the rest keeps its trailing space
  } else {
    const size_t rest = words.size() - keep;
    parts.emplace_back(s.substr(0, words[rest - 1].end));  // and its leading space
    for (size_t k = rest; k < words.size(); ++k) {
      parts.emplace_back(s.substr(words[k].begin, words[k].end - words[k].begin));
    }
  }
  return parts;
}

std::vector<std::string> split_sep(std::string_view s, std::string_view sep, int64_t maxsplit,
                                   bool from_right) {
  std::vector<std::string> parts;
  if (!from_right) {
    size_t start = 0;
    for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
      const size_t hit = s.find(sep, start);
      if (hit == std::string_view::npos) break;
      parts.emplace_back(s.substr(start, hit - start));
      start = hit + sep.size();
    }
    parts.emplace_back(s.substr(start));
    return parts;
  }
  size_t end = s.size();
  for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
    if (end < sep.size()) break;
    const size_t hit = s.rfind(sep, end - sep.size());
    if (hit == std::string_view::npos) break;
    parts.emplace_back(s.substr(hit + sep.size(), end - hit - sep.size()));
    end = hit;
  }
  parts.emplace_back(s.substr(0, end));
  return {parts.rbegin(), parts.rend()};
}

std::vector<std::string> split_lines(std::string_view s, bool keep_ends) {
  std::vector<std::string> lines;
  size_t start = 0;
  size_t i = 0;
  while (i < s.size()) {
    const CodePoint cp = decode(s, i);
    size_t brk = 0;
    const char32_t c = cp.valid ? cp.value : 0;
    if (c == '\r' && i + 1 < s.size() && s[i + 1] == '\n') {
      brk = 2;
    } else if (c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
               c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029) {
      brk = cp.length;
    }
    if (brk == 0) {
      i += cp.length;
      continue;
    }
    lines.emplace_back(s.substr(start, (keep_ends ? i + brk : i) - start));
    i += brk;
    start = i;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string replace(std::string_view s, std::string_view from, std::string_view to, int64_t count) {
  std::string out;
  if (from.empty()) {  // Python inserts `to` around every code point
    int64_t done = 0;
    size_t i = 0;
    while (true) {
      if (count < 0 || done < count) {
        out += to;
        ++done;
      }
      if (i >= s.size()) break;
      const size_t len = decode(s, i).length;
      out += s.substr(i, len);
      i += len;
    }
    return out;
  }
  size_t start = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t hit = s.find(from, start);
    if (hit == std::string_view::npos) break;
    out += s.substr(start, hit - start);
    out += to;
    start = hit + from.size();
  }
  out += s.substr(start);
  return out;
}

namespace {

char32_t upper_latin_ext_a(char32_t c) {
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  const bool even_upper = (c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
  const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
  if (even_upper && (c & 1)) return c - 1;
  if (odd_upper && !(c & 1)) return c - 1;
  return c;
}

char32_t lower_latin_ext_a(char32_t c) {
  if (c == 0x178) return 0xFF;
  const bool even_upper = (c <= 0x12F) || (c >= 0x132 && c <= 0x137) || (c >= 0x14A && c <= 0x177);
  const bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
  if (even_upper && !(c & 1)) return c + 1;
  if (odd_upper && (c & 1)) return c + 1;
  return c;
}

char32_t upper_cp(char32_t c) {
  if (c < 0x80) return (c >= 'a' && c <= 'z') ? c - 32 : c;
  if (c == 0xB5) return 0x39C;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x100 && c <= 0x17F) return upper_latin_ext_a(c);
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x3B1 && c <= 0x3CB) return c - 32;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

char32_t lower_cp(char32_t c) {
  if (c < 0x80) return (c >= 'A' && c <= 'Z') ? c + 32 : c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c >= 0x100 && c <= 0x17F) return lower_latin_ext_a(c);
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

enum class CaseOp { kUpper, kLower };

std::string map_case(std::string_view s, CaseOp op) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const CodePoint cp = decode(s, i);
    if (!cp.valid) {
      out += s[i];
    } else {
      append_utf8(out, op == CaseOp::kUpper ? upper_cp(cp.value) : lower_cp(cp.value));
    }
    i += cp.length;
  }
  return out;
}

}  // namespace

bool is_upper_cp(char32_t cp) { return lower_cp(cp) != cp; }
bool is_lower_cp(char32_t cp) {
  // ß, ĸ and ŉ are lowercase letters without a single-code-point uppercase.
  return upper_cp(cp) != cp || cp == 0xDF || cp == 0x138 || cp == 0x149;
}

std::string to_upper(std::string_view s) { return map_case(s, CaseOp::kUpper); }
std::string to_lower(std::string_view s) { return map_case(s, CaseOp::kLower); }

std::string capitalize(std::string_view s) {
  if (s.empty()) return {};
  const size_t first = decode(s, 0).length;
  return to_upper(s.substr(0, first)) + to_lower(s.substr(first));
}

std::string title(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  bool previous_cased = false;
  for (size_t i = 0; i < s.size();) {
    const CodePoint cp = decode(s, i);
    if (!cp.valid) {
      out += s[i];
      previous_cased = false;
    } else {
      const bool cased = is_upper_cp(cp.value) || is_lower_cp(cp.value);
      append_utf8(out, previous_cased ? lower_cp(cp.value) : upper_cp(cp.value));
      previous_cased = cased;
    }
    i += cp.length;
  }
  return out;
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then laid out the way Python's repr() does: positional notation
  // for decimal exponents in [-4, 16), scientific otherwise, always with a '.' or an exponent.
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view sci(buf, static_cast<size_t>(res.ptr - buf));
  std::string sign;
  if (!sci.empty() && sci[0] == '-') {
    sign = "-";
    sci.remove_prefix(1);
  }
  const size_t e_pos = sci.find('e');
  std::string digits(sci.substr(0, e_pos));
  if (digits.size() > 1) digits.erase(1, 1);  // drop the '.'
  int exp = 0;
  std::from_chars(sci.data() + e_pos + 1 + (sci[e_pos + 1] == '+' ? 1 : 0), sci.data() + sci.size(),
                  exp);
  if (exp >= -4 && exp < 16) {
    std::string out = sign;
    if (exp < 0) {
      out += "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
    } else {
      const auto int_len = static_cast<size_t>(exp) + 1;
      if (digits.size() <= int_len) {
        out += digits + std::string(int_len - digits.size(), '0') + ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    }
    return out;
  }
  std::string out = sign + digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char exp_buf[16];
  std::snprintf(exp_buf, sizeof exp_buf, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
  return out + exp_buf;
}

namespace {

bool printable_in_repr(char32_t c) {
  if (c < 0x20 || c == 0x7F) return false;
  if (c >= 0x80 && c <= 0xA0) return false;
  if (c == 0xAD || c == 0x1680 || c == 0x3000 || c == 0xFEFF) return false;
  if ((c >= 0x2000 && c <= 0x200F) || (c >= 0x2028 && c <= 0x202F)) return false;
  if (c >= 0x205F && c <= 0x206F) return false;
  return true;
}

void append_hex_escape(std::string& out, char32_t c, bool json) {
  char buf[16];
  if (json) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
  } else if (c <= 0xFF) {
    std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
  } else if (c <= 0xFFFF) {
    std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
  } else {
    std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
  }
  out += buf;
}

}  // namespace

std::string string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    const CodePoint cp = decode(s, i);
    const char32_t c = cp.value;
    if (!cp.valid) {
      append_hex_escape(out, static_cast<unsigned char>(s[i]), false);
    } else if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (!printable_in_repr(c)) {
      append_hex_escape(out, c, false);
    } else {
      out.append(s.substr(i, cp.length));
    }
    i += cp.length;
  }
  out += quote;
  return out;
}

void append_json_escaped(std::string& out, std::string_view s, bool ensure_ascii) {
  for (size_t i = 0; i < s.size();) {
    const CodePoint cp = decode(s, i);
    const char32_t c = cp.valid ? cp.value : 0xFFFD;
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          append_hex_escape(out, c, true);
        } else if (c < 0x80 || !ensure_ascii) {
          if (cp.valid) {
            out.append(s.substr(i, cp.length));
          } else {
            append_utf8(out, 0xFFFD);
          }
        } else if (c > 0xFFFF) {
          const char32_t v = c - 0x10000;
          append_hex_escape(out, 0xD800 + (v >> 10), true);
          append_hex_escape(out, 0xDC00 + (v & 0x3FF), true);
        } else {
          append_hex_escape(out, c, true);
        }
    }
    i += cp.length;
  }
}

std::string html_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace engine::jinja::text
