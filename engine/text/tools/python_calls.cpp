#include "engine/text/tools/python_calls.h"

#include <algorithm>

#include "engine/text/tokenizer/utf8.h"
#include "engine/text/tools/section_cursor.h"

namespace engine::tools {

using ojson = nlohmann::ordered_json;

namespace {

using section::Cursor;
using section::is_space;
using section::kMaxDepth;

constexpr std::string_view kClose = "<|tool_call_end|>";

#define READ GGUFD_SECTION_READ

// A code point as UTF-8; a lone surrogate or one past U+10FFFF as U+FFFD.
void append_code_point(std::string& out, uint32_t cp) {
  const bool valid = cp <= 0x10FFFF && (cp < 0xD800 || cp > 0xDFFF);
  tokenizer::append_utf8(out, valid ? cp : tokenizer::kReplacementChar);
}

// `n` hex digits at r[k]: their value, or kIncomplete / kInvalid.
SectionRead hex(std::string_view r, size_t k, size_t n, uint32_t& value) {
  value = 0;
  for (size_t i = 0; i < n; ++i) {
    if (k + i >= r.size()) return SectionRead::kIncomplete;
    const char h = r[k + i];
    const int d = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
    if (d < 0) return SectionRead::kInvalid;
    value = value * 16 + static_cast<uint32_t>(d);
  }
  return SectionRead::kDone;
}

// The escape at r[k] (after its backslash) appended to `out`; `k` moved past it.
SectionRead escape(std::string_view r, size_t& k, std::string& out) {
  if (k >= r.size()) return SectionRead::kIncomplete;
  const char e = r[k++];
  switch (e) {
    case 'n': out += '\n'; return SectionRead::kDone;
    case 't': out += '\t'; return SectionRead::kDone;
    case 'r': out += '\r'; return SectionRead::kDone;
    case 'b': out += '\b'; return SectionRead::kDone;
    case 'f': out += '\f'; return SectionRead::kDone;
    case '0': out += '\0'; return SectionRead::kDone;
    case '\n': return SectionRead::kDone;  // a line continuation
    case '\\': case '\'': case '"': case '/': out += e; return SectionRead::kDone;
    case 'x': case 'u': case 'U': {
      uint32_t cp = 0;
      const size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
      READ(hex(r, k, n, cp));
      k += n;
      if (e == 'u' && cp >= 0xD800 && cp <= 0xDBFF) {  // JSON's surrogate pair
        const std::string_view next = r.substr(k);
        if (next.size() < 2 && std::string_view("\\u").substr(0, next.size()) == next) return SectionRead::kIncomplete;
        uint32_t lo = 0;
        if (next.substr(0, 2) == "\\u") {
          READ(hex(r, k + 2, 4, lo));
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            k += 6;
          }
        }
      }
      append_code_point(out, cp);
      return SectionRead::kDone;
    }
    default:  // Python keeps an unknown escape as it is
      out += '\\';
      out += e;
      return SectionRead::kDone;
  }
  return SectionRead::kDone;
}

// A string in ' or " quotes.
SectionRead read_string(Cursor& c, ojson& out) {
  const std::string_view r = c.rest();
  const char quote = r[0];
  std::string text;
  for (size_t k = 1; k < r.size();) {
    const char ch = r[k++];
    if (ch == quote) {
      out = std::move(text);
      c.advance(k);
      return SectionRead::kDone;
    }
    if (ch != '\\') {
      text += ch;
      continue;
    }
    READ(escape(r, k, text));
  }
  return SectionRead::kIncomplete;
}

bool delimiter(char ch) { return ch == ',' || ch == ')' || ch == ']' || ch == '}' || ch == ':' || is_space(ch); }

// A number, True, False, None, true, false or null: the text up to a delimiter. A beginning that
// the rest of the text cannot make valid is invalid at once, whatever follows (so that a streamed
// answer reads as the whole one).
SectionRead read_scalar(Cursor& c, ojson& out) {
  const std::string_view r = c.rest();
  size_t n = 0;
  while (n < r.size() && !delimiter(r[n])) ++n;
  const std::string_view t = r.substr(0, n);
  if (n > 64) return SectionRead::kInvalid;
  const bool numeric = std::all_of(t.begin(), t.end(), [](char ch) {
    return (ch >= '0' && ch <= '9') || ch == '-' || ch == '+' || ch == '.' || ch == 'e' || ch == 'E';
  });
  if (n == r.size()) {  // it may go on
    if (numeric) return SectionRead::kIncomplete;
    for (std::string_view word : {"True", "False", "None", "true", "false", "null"}) {
      if (word.substr(0, n) == t) return SectionRead::kIncomplete;
    }
    return SectionRead::kInvalid;
  }
  if (t == "True" || t == "true") out = true;
  else if (t == "False" || t == "false") out = false;
  else if (t == "None" || t == "null") out = nullptr;
  else if (numeric && !t.empty() && (t[0] == '-' || (t[0] >= '0' && t[0] <= '9'))) out = ojson::parse(t, nullptr, false);
  else return SectionRead::kInvalid;
  if (out.is_discarded()) return SectionRead::kInvalid;
  c.advance(n);
  return SectionRead::kDone;
}

SectionRead read_value(Cursor& c, int depth, ojson& out) {
  if (depth > kMaxDepth) return SectionRead::kInvalid;
  if (c.done()) return SectionRead::kIncomplete;
  const char ch = c.peek();
  if (ch == '\'' || ch == '"') return read_string(c, out);
  if (ch == '[') {
    out = ojson::array();
    c.advance(1);
    return section::read_list(c, ']', [&] {
      out.push_back(nullptr);
      return read_value(c, depth + 1, out.back());
    });
  }
  if (ch == '{') {
    out = ojson::object();
    c.advance(1);
    return section::read_list(c, '}', [&] {
      if (c.done()) return SectionRead::kIncomplete;
      if (c.peek() != '\'' && c.peek() != '"') return SectionRead::kInvalid;
      ojson key;
      READ(read_string(c, key));
      c.skip_space();
      READ(c.expect(":"));
      c.skip_space();
      const std::string& k = key.get_ref<const std::string&>();
      if (out.contains(k)) return SectionRead::kInvalid;
      return read_value(c, depth + 1, out[k]);
    });
  }
  return read_scalar(c, out);
}

// NAME(key=value, ...)
SectionRead read_call(Cursor& c, const std::vector<std::string>& names, ToolCall& call) {
  READ(c.name('(', " \t\r\n[]{}),=:'\"<>", call.name));
  if (!section::offered(names, call.name)) return SectionRead::kInvalid;
  ojson args = ojson::object();
  const auto keyword = [&] {
    std::string key;
    READ(c.name('=', "()[]{},:'\"<>\n", key));
    while (!key.empty() && is_space(key.back())) key.pop_back();
    if (key.empty() || key.find_first_of(" \t\r") != std::string::npos || args.contains(key)) return SectionRead::kInvalid;
    c.skip_space();
    return read_value(c, 1, args[key]);
  };
  READ(section::read_list(c, ')', keyword));
  call.arguments = args.dump(-1, ' ', false, ojson::error_handler_t::replace);
  return SectionRead::kDone;
}

#undef READ

}  // namespace

SectionResult read_lfm2_section(std::string_view s, bool at_end, const std::vector<std::string>& names) {
  Cursor c(s);
  std::vector<ToolCall> calls;
  const auto one = [&] {
    ToolCall call;
    const SectionRead r = read_call(c, names, call);
    if (r == SectionRead::kDone) calls.push_back(std::move(call));
    return r;
  };
  c.skip_space();
  if (c.done()) return {};
  SectionRead r;
  if (c.peek() == '[') {
    c.advance(1);
    r = section::read_list(c, ']', one);
    if (r == SectionRead::kDone && calls.empty()) r = SectionRead::kInvalid;  // "[]" calls nothing
  } else {
    r = one();
  }
  if (r == SectionRead::kInvalid) return {SectionRead::kInvalid, 0, {}};
  if (r == SectionRead::kIncomplete) return {SectionRead::kIncomplete, 0, std::move(calls)};
  return section::close_section(c, kClose, at_end, std::move(calls));
}

}  // namespace engine::tools
