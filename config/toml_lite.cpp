// The TOML subset reader: a single forward pass with a line counter.
#include "config/toml_lite.h"

#include <cctype>
#include <stdexcept>

namespace config {

namespace {

class TomlParser {
 public:
  explicit TomlParser(std::string_view text) : text_(text) {}

  std::vector<TomlEntry> run() {
    std::vector<TomlEntry> out;
    std::string section;
    while (skip_blank_lines()) {
      if (peek() == '[') {
        section = parse_header();
      } else {
        out.push_back(parse_key_value(section));
      }
      end_of_line();
    }
    return out;
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_ = 1;

  [[noreturn]] void fail(const std::string& what) const { fail_at(line_, what); }
  [[noreturn]] static void fail_at(int line, const std::string& what) {
    throw std::invalid_argument("line " + std::to_string(line) + ": " + what);
  }
  bool done() const { return pos_ >= text_.size(); }
  char peek() const { return done() ? '\0' : text_[pos_]; }
  static bool bare_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  }

  void skip_spaces() {
    while (peek() == ' ' || peek() == '\t') ++pos_;
  }
  void skip_comment() {
    if (peek() != '#') return;
    while (!done() && peek() != '\n') ++pos_;
  }
  // Consumes a newline (with its optional CR) if one is next; true if it did.
  bool newline() {
    if (peek() == '\r' && pos_ + 1 < text_.size() && text_[pos_ + 1] == '\n') ++pos_;
    if (peek() != '\n') return false;
    ++pos_;
    ++line_;
    return true;
  }
  // Skips blanks, comments and empty lines; false at the end of the text.
  bool skip_blank_lines() {
    for (;;) {
      skip_spaces();
      skip_comment();
      if (!newline()) return !done();
    }
  }
  // After a statement: only blanks and a comment may follow on the line.
  void end_of_line() {
    skip_spaces();
    skip_comment();
    if (!done() && !newline()) fail("unexpected '" + std::string(1, peek()) + "' after the value");
  }

  std::string parse_header() {
    ++pos_;  // '['
    if (peek() == '[') fail("arrays of tables ([[...]]) are not supported");
    skip_spaces();
    std::string name;
    if (peek() == '*') {  // [*]: llama-server's spelling of ["*"] in preset files
      ++pos_;
      name = "*";
    } else if (peek() == '"' || peek() == '\'') {
      name = parse_string();
    } else {
      const size_t start = pos_;  // a bare name; a '.' (no dotted tables here) ends it like '/' does
      while (bare_char(peek())) ++pos_;
      name = std::string(text_.substr(start, pos_ - start));
      if (name.empty()) fail("expected a section name, found '" + std::string(1, peek()) + "'");
    }
    skip_spaces();
    if (peek() != ']') {
      fail("expected ']' after section name '" + name + "' (quote a name with other characters: [\"org/name\"])");
    }
    ++pos_;
    return name;
  }

  std::string parse_key() {
    if (peek() == '"' || peek() == '\'') return parse_string();
    const size_t start = pos_;
    while (bare_char(peek())) ++pos_;
    if (pos_ == start) fail("expected a key, found '" + std::string(1, peek()) + "'");
    if (peek() == '.') fail("dotted keys are not supported");
    return std::string(text_.substr(start, pos_ - start));
  }

  TomlEntry parse_key_value(const std::string& section) {
    TomlEntry e;
    e.section = section;
    e.line = line_;
    e.key = parse_key();
    skip_spaces();
    if (peek() != '=') fail("expected '=' after key '" + e.key + "'");
    ++pos_;
    skip_spaces();
    if (peek() == '[') {
      e.array = true;
      e.values = parse_array();
    } else {
      e.values.push_back(parse_scalar());
    }
    return e;
  }

  std::vector<std::string> parse_array() {
    ++pos_;  // '['
    const int start_line = line_;
    std::vector<std::string> items;
    for (;;) {
      if (!skip_blank_lines()) fail_at(start_line, "unterminated array");
      if (peek() == ']') break;
      items.push_back(parse_scalar());
      if (!skip_blank_lines()) fail_at(start_line, "unterminated array");
      if (peek() == ',') {
        ++pos_;
      } else if (peek() != ']') {
        fail("expected ',' or ']' in array");
      }
    }
    ++pos_;  // ']'
    return items;
  }

  std::string parse_scalar() {
    const char c = peek();
    if (c == '"' || c == '\'') return parse_string();
    if (c == '[') fail("nested arrays are not supported");
    if (c == '{') fail("inline tables are not supported");
    return parse_bare();
  }

  // true, false, integers and floats; underscores between digits are removed.
  std::string parse_bare() {
    const size_t start = pos_;
    while (!done() && std::string_view(" \t\r\n,]#").find(peek()) == std::string_view::npos) ++pos_;
    const std::string_view raw = text_.substr(start, pos_ - start);
    if (raw.empty()) fail("expected a value");
    if (raw == "true" || raw == "false") return std::string(raw);
    std::string out;
    for (char c : raw) {
      if (c == '_') continue;
      if (!std::isdigit(static_cast<unsigned char>(c)) && std::string_view("+-.eE").find(c) == std::string_view::npos) {
        fail("value '" + std::string(raw) + "' must be quoted");
      }
      out.push_back(c);
    }
    return out;
  }

  std::string parse_string() {
    const char quote = peek();
    if (text_.substr(pos_, 3) == std::string(3, quote)) fail("multi-line strings are not supported");
    ++pos_;
    std::string out;
    while (peek() != quote) {
      if (done() || peek() == '\n') fail("unterminated string");
      if (quote == '"' && peek() == '\\') {
        append_escape(out);
      } else {
        out.push_back(text_[pos_++]);
      }
    }
    ++pos_;
    return out;
  }

  void append_escape(std::string& out) {
    ++pos_;  // '\'
    const char c = peek();
    ++pos_;
    switch (c) {
      case '"': out.push_back('"'); return;
      case '\\': out.push_back('\\'); return;
      case 'n': out.push_back('\n'); return;
      case 't': out.push_back('\t'); return;
      case 'r': out.push_back('\r'); return;
      case 'u': append_utf8(out, parse_hex4()); return;
      default: fail("unsupported escape '\\" + std::string(1, c) + "'");
    }
  }

  unsigned parse_hex4() {
    unsigned v = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      const char c = peek();
      if (!std::isxdigit(static_cast<unsigned char>(c))) fail("expected 4 hex digits after \\u");
      v = v * 16 + static_cast<unsigned>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0'
                                                                                    : (c | 0x20) - 'a' + 10);
    }
    return v;
  }

  void append_utf8(std::string& out, unsigned cp) {
    if (cp >= 0xD800 && cp <= 0xDFFF) fail("\\u escape of a surrogate");
    if (cp < 0x80) {
      out.push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }
};

}  // namespace

std::vector<TomlEntry> parse_toml(std::string_view text) { return TomlParser(text).run(); }

}  // namespace config
