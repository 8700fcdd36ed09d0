#include "engine/text/jinja/lexer.h"

#include <charconv>
#include <limits>
#include <system_error>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/text.h"

namespace engine::jinja {

std::string normalize_source(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

std::pair<int, int> line_column(std::string_view source, size_t offset) {
  if (offset > source.size()) offset = source.size();
  int line = 1;
  size_t line_start = 0;
  for (size_t i = 0; i < offset; ++i) {
    if (source[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  }
  const auto column = text::count_code_points(source.substr(line_start, offset - line_start)) + 1;
  return {line, static_cast<int>(column)};
}

namespace {

enum class TagKind { kVariable, kBlock, kComment };

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

class Lexer {
 public:
  Lexer(std::string_view src, const LexerOptions& opt) : src_(src), opt_(opt) {}

  std::vector<Token> run() {
    if (src_.size() >= std::numeric_limits<uint32_t>::max()) fail("template too large", 0);
    while (pos_ < src_.size()) lex_root();
    push(TokenKind::kEnd, {}, static_cast<uint32_t>(src_.size()));
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(const std::string& message, size_t offset) const {
    auto [line, column] = line_column(src_, offset);
    throw TemplateError(message, line, column);
  }

  Token& push(TokenKind type, std::string text, size_t offset) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.offset = static_cast<uint32_t>(offset);
    tokens_.push_back(std::move(t));
    return tokens_.back();
  }

  bool at(size_t p, std::string_view s) const { return src_.substr(p, s.size()) == s; }

  size_t skip_space(size_t p) const {
    while (size_t n = text::space_length(src_, p)) p += n;
    return p;
  }

  // Text before a tag, after "-" stripping or lstrip_blocks (Jinja's OptionalLStrip).
  std::string_view strip_before(std::string_view text, char sign, bool lstrip_applies) const {
    if (sign == '-') return text::strip_space(text, false, true);
    if (sign == '+' || !opt_.lstrip_blocks || !lstrip_applies) return text;
    const size_t nl = text.rfind('\n');
    const size_t line_begin = nl == std::string_view::npos ? 0 : nl + 1;
    if (line_begin == 0 && !line_starting_) return text;
    const std::string_view tail = text.substr(line_begin);
    if (!tail.empty() && text::strip_space(tail, true, false).empty()) {
      return text.substr(0, line_begin);
    }
    return text;
  }

  void emit_data(std::string_view text, size_t offset) {
    if (!text.empty()) push(TokenKind::kData, std::string(text), offset);
  }

  void lex_root() {
    size_t tag = src_.find('{', pos_);
    while (tag != std::string_view::npos && tag + 1 < src_.size() && src_[tag + 1] != '{' &&
           src_[tag + 1] != '%' && src_[tag + 1] != '#') {
      tag = src_.find('{', tag + 1);
    }
    if (tag == std::string_view::npos || tag + 1 >= src_.size()) {
      emit_data(src_.substr(pos_), pos_);
      pos_ = src_.size();
      return;
    }
    const TagKind kind = src_[tag + 1] == '{'   ? TagKind::kVariable
                         : src_[tag + 1] == '%' ? TagKind::kBlock
                                                : TagKind::kComment;
    const char sign = (tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+'))
                          ? src_[tag + 2]
                          : '\0';
    const std::string_view text = src_.substr(pos_, tag - pos_);
    emit_data(strip_before(text, sign, kind != TagKind::kVariable), pos_);
    pos_ = tag + 2 + (sign ? 1 : 0);
    if (kind == TagKind::kComment) return lex_comment(tag);
    if (kind == TagKind::kBlock && lex_raw(tag)) return;
    lex_tag(kind, tag);
  }

  // After a block or comment end: "-" strips all following whitespace, "+" nothing, and
  // otherwise trim_blocks removes a single newline.
  void finish_block_end(char sign) {
    const size_t before = pos_;
    if (sign == '-') {
      pos_ = skip_space(pos_);
    } else if (sign != '+' && opt_.trim_blocks && pos_ < src_.size() && src_[pos_] == '\n') {
      ++pos_;
    }
    line_starting_ = pos_ > before ? src_[pos_ - 1] == '\n' : false;
  }

  void lex_comment(size_t tag) {
    const size_t body = pos_;
    const size_t close = src_.find("#}", body);
    if (close == std::string_view::npos) fail("missing end of comment tag", tag);
    char sign = '\0';
    if (close > body && (src_[close - 1] == '-' || src_[close - 1] == '+')) sign = src_[close - 1];
    pos_ = close + 2;
    finish_block_end(sign);
  }

  // "{% raw %}...{% endraw %}": emits the body as data. Returns false if the tag is not "raw".
  bool lex_raw(size_t tag) {
    size_t p = skip_space(pos_);
    if (!at(p, "raw")) return false;
    p = skip_space(p + 3);
    if (at(p, "-%}")) {
      p = skip_space(p + 3);
    } else if (at(p, "%}")) {
      p += 2;
    } else {
      return false;
    }
    line_starting_ = src_[p - 1] == '\n';
    // Find the first "{%[-+] endraw [-+]%}".
    for (size_t search = p;; ++search) {
      const size_t open = src_.find("{%", search);
      if (open == std::string_view::npos) fail("missing end of raw directive", tag);
      search = open;
      const char sign = (open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+'))
                            ? src_[open + 2]
                            : '\0';
      size_t q = skip_space(open + 2 + (sign ? 1 : 0));
      if (!at(q, "endraw")) continue;
      q = skip_space(q + 6);
      char end_sign = '\0';
      if (at(q, "-%}") || at(q, "+%}")) {
        end_sign = src_[q];
        ++q;
      }
      if (!at(q, "%}")) continue;
      emit_data(strip_before(src_.substr(p, open - p), sign, true), p);
      pos_ = q + 2;
      finish_block_end(end_sign);
      return true;
    }
  }

  // Inside {{ }} or {% %}: expression tokens up to the matching end marker.
  void lex_tag(TagKind kind, size_t tag) {
    push(kind == TagKind::kVariable ? TokenKind::kVariableBegin : TokenKind::kBlockBegin, {}, tag);
    std::vector<char> balance;  // expected closing brackets; tag ends are ignored inside
    while (true) {
      if (pos_ >= src_.size()) fail("unexpected end of template, expected end of tag", tag);
      if (balance.empty() && lex_tag_end(kind)) return;
      if (size_t n = text::space_length(src_, pos_)) {
        pos_ += n;
        continue;
      }
      const char c = src_[pos_];
      if (is_digit(c)) {
        lex_number();
      } else if (is_name_start(c)) {
        const size_t start = pos_;
        while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
        push(TokenKind::kName, std::string(src_.substr(start, pos_ - start)), start);
      } else if (c == '\'' || c == '"') {
        lex_string();
      } else {
        lex_operator(balance);
      }
    }
  }

  bool lex_tag_end(TagKind kind) {
    const size_t start = pos_;
    if (kind == TagKind::kVariable) {
      if (at(pos_, "-}}")) {
        pos_ = skip_space(pos_ + 3);
      } else if (at(pos_, "}}")) {
        pos_ += 2;
      } else {
        return false;
      }
      push(TokenKind::kVariableEnd, {}, start);
      line_starting_ = src_[pos_ - 1] == '\n';
      return true;
    }
    char sign = '\0';
    if (at(pos_, "-%}") || at(pos_, "+%}")) {
      sign = src_[pos_];
      ++pos_;
    } else if (!at(pos_, "%}")) {
      return false;
    }
    pos_ += 2;
    push(TokenKind::kBlockEnd, {}, start);
    finish_block_end(sign);
    return true;
  }

  void lex_number() {
    const size_t start = pos_;
    auto digits = [&](size_t p) {  // (\d+_)*\d+ : returns the end, or p if none
      size_t q = p;
      while (q < src_.size() && is_digit(src_[q])) {
        while (q < src_.size() && is_digit(src_[q])) ++q;
        if (q + 1 < src_.size() && src_[q] == '_' && is_digit(src_[q + 1])) ++q;
      }
      return q;
    };
    size_t end = digits(start);
    bool is_float = false;
    const bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot && end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
      end = digits(end + 1);
      is_float = true;
    }
    if (!after_dot && end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t q = end + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && is_digit(src_[q])) {
        end = digits(q);
        is_float = true;
      }
    }
    if (is_float) {
      std::string spelled;
      for (char ch : src_.substr(start, end - start))
        if (ch != '_') spelled += ch;
      double value = 0;
      const auto res = std::from_chars(spelled.data(), spelled.data() + spelled.size(), value);
      if (res.ec == std::errc::result_out_of_range) {  // Python gives inf, or 0.0 on underflow
        const bool tiny =
            spelled.find("e-") != std::string::npos || spelled.find("E-") != std::string::npos;
        value = tiny ? 0.0 : std::numeric_limits<double>::infinity();
      }
      push(TokenKind::kFloat, std::move(spelled), start).float_value = value;
      pos_ = end;
      return;
    }
    lex_integer(start);
  }

  void lex_integer(size_t start) {
    int base = 10;
    size_t p = start;
    if (src_[p] == '0' && p + 1 < src_.size()) {
      const char x = static_cast<char>(src_[p + 1] | 0x20);
      base = x == 'b' ? 2 : x == 'o' ? 8 : x == 'x' ? 16 : 10;
      if (base != 10) p += 2;
    }
    auto digit_value = [](char ch) {
      if (is_digit(ch)) return ch - '0';
      const char lower = static_cast<char>(ch | 0x20);
      return lower >= 'a' && lower <= 'f' ? lower - 'a' + 10 : 99;
    };
    if (base != 10 && (p >= src_.size() || digit_value(src_[p]) >= base)) {
      base = 10;  // "0x" without digits: the integer 0 followed by a name, as in Jinja
      p = start;
    }
    uint64_t value = 0;
    bool any = false;
    bool leading_zero = base == 10 && src_[p] == '0';
    while (p < src_.size()) {
      const char ch = src_[p];
      if (ch == '_' && any && p + 1 < src_.size() && digit_value(src_[p + 1]) < base) {
        ++p;
        continue;
      }
      const int d = digit_value(ch);
      if (d >= base || (leading_zero && any && ch != '0')) break;
      if (value > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / base) {
        fail("integer literal too large", start);
      }
      value = value * base + static_cast<uint64_t>(d);
      any = true;
      ++p;
    }
    if (!any) fail("invalid integer literal", start);
    push(TokenKind::kInteger, std::string(src_.substr(start, p - start)), start).int_value =
        static_cast<int64_t>(value);
    pos_ = p;
  }

  void lex_string() {
    const size_t start = pos_;
    const char quote = src_[pos_++];
    std::string value;
    while (true) {
      if (pos_ >= src_.size()) fail("unterminated string literal", start);
      const char c = src_[pos_];
      if (c == quote) {
        ++pos_;
        break;
      }
      if (c == '\\' && pos_ + 1 < src_.size()) {
        decode_escape(value);
      } else {
        value += c;
        ++pos_;
      }
    }
    push(TokenKind::kString, std::move(value), start);
  }

  // Python's unicode-escape decoding of one backslash sequence at pos_ (unknown escapes are
  // kept verbatim, as Python does).
  void decode_escape(std::string& out) {
    const char e = src_[pos_ + 1];
    pos_ += 2;
    switch (e) {
      case 'n': out += '\n'; return;
      case 't': out += '\t'; return;
      case 'r': out += '\r'; return;
      case '\\': out += '\\'; return;
      case '\'': out += '\''; return;
      case '"': out += '"'; return;
      case 'a': out += '\a'; return;
      case 'b': out += '\b'; return;
      case 'f': out += '\f'; return;
      case 'v': out += '\v'; return;
      case '\n': return;  // line continuation
      default: break;
    }
    if (e >= '0' && e <= '7') {
      char32_t v = static_cast<char32_t>(e - '0');
      for (int k = 0; k < 2 && pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '7'; ++k) {
        v = v * 8 + static_cast<char32_t>(src_[pos_++] - '0');
      }
      text::append_utf8(out, v);
      return;
    }
    const int width = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    char32_t v = 0;
    bool ok = width > 0 && pos_ + static_cast<size_t>(width) <= src_.size();
    for (int k = 0; ok && k < width; ++k) {
      const char h = static_cast<char>(src_[pos_ + static_cast<size_t>(k)] | 0x20);
      if (is_digit(h))
        v = v * 16 + static_cast<char32_t>(h - '0');
      else if (h >= 'a' && h <= 'f')
        v = v * 16 + static_cast<char32_t>(h - 'a' + 10);
      else
        ok = false;
    }
    if (!ok) {  // not an escape Python knows: keep the backslash and the character
      out += '\\';
      out += e;
      return;
    }
    pos_ += static_cast<size_t>(width);
    text::append_utf8(out, v);  // surrogates and out-of-range values become U+FFFD
  }

  void lex_operator(std::vector<char>& balance) {
    static constexpr std::string_view kTwoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    static constexpr std::string_view kOneChar = "+-*/%~<>=()[]{},.:|;";
    const size_t start = pos_;
    for (std::string_view op : kTwoChar) {
      if (at(pos_, op)) {
        pos_ += 2;
        push(TokenKind::kOperator, std::string(op), start);
        return;
      }
    }
    const char c = src_[pos_];
    if (kOneChar.find(c) == std::string_view::npos) {
      fail("unexpected character '" +
               std::string(src_.substr(pos_, text::decode(src_, pos_).length)) + "'",
           pos_);
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty()) fail(std::string("unexpected '") + c + "'", pos_);
      if (balance.back() != c) {
        fail(std::string("unexpected '") + c + "', expected '" + balance.back() + "'", pos_);
      }
      balance.pop_back();
    }
    ++pos_;
    push(TokenKind::kOperator, std::string(1, c), start);
  }

  std::string_view src_;
  LexerOptions opt_;
  size_t pos_ = 0;
  bool line_starting_ = true;  // the previous tag ended at a line start (for lstrip_blocks)
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const LexerOptions& options) {
  return Lexer(source, options).run();
}

}  // namespace engine::jinja
