// Tokenizer for the Jinja2 template syntax, including whitespace control.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace engine::jinja {

enum class TokenKind : uint8_t {
  kData,           // literal template text (also the body of {% raw %})
  kVariableBegin,  // {{
  kVariableEnd,    // }}
  kBlockBegin,     // {%
  kBlockEnd,       // %}
  kName,
  kString,    // text holds the decoded value
  kInteger,   // int_value
  kFloat,     // float_value
  kOperator,  // text holds the spelling: + - * / // % ** ~ == != < <= > >= = ( ) [ ] { } , . : | ;
  kEnd,
};

struct Token {
  TokenKind type = TokenKind::kEnd;
  std::string text;
  int64_t int_value = 0;
  double float_value = 0;
  uint32_t offset = 0;  // byte offset into the normalized source
};

// Environment options that change how text around tags is emitted (Jinja's names and meaning):
//  trim_blocks   - the first newline after a block tag (%}) or comment (#}) is removed;
//  lstrip_blocks - spaces and tabs from the start of a line up to a block tag or comment are
//                  removed. "{%+" turns lstrip off for that tag, "+%}" turns trim off.
// Independently, "{%-", "{{-", "{#-" strip all whitespace before the tag and "-%}", "-}}", "-#}"
// all whitespace after it.
struct LexerOptions {
  bool trim_blocks = false;
  bool lstrip_blocks = false;
};

// Jinja's source normalization: "\r\n" and "\r" become "\n", and one trailing newline is dropped
// (keep_trailing_newline=False).
std::string normalize_source(std::string_view source);

// Splits a normalized source into tokens, ending with kEnd. Throws engine::TemplateError with
// the line and column of malformed input (unterminated tags, strings, comments, raw blocks;
// unbalanced brackets; unexpected characters). Sources must be smaller than 4 GiB.
std::vector<Token> tokenize(std::string_view source, const LexerOptions& options);

// 1-based line and column (counted in code points) of a byte offset into source.
std::pair<int, int> line_column(std::string_view source, size_t offset);

}  // namespace engine::jinja
