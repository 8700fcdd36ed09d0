// GBNF parser: a recursive descent over the text that hands one Expr per rule to a GrammarBuilder.
#include "engine/text/grammar/gbnf.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

namespace {

// CharClass::add() re-sorts all ranges on every call, so a class of n items costs n^2: bound n, and the sum
// of n^2 over the grammar (~0.1 s).
constexpr size_t kMaxClassItems = 1024;
constexpr size_t kMaxClassWork = size_t{1} << 24;

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) || c == '-'; }
bool is_quantifier(char c) { return c == '*' || c == '+' || c == '?' || c == '{'; }

// An expression and how deeply parentheses and quantifiers nest inside it.
struct Item {
  Expr expr;
  int nesting = 0;
};

class Parser {
 public:
  Parser(std::string_view src, GrammarLimits limits) : src_(src), limits_(limits), builder_(limits) {}

  std::shared_ptr<const Grammar> run() {
    skip_space(true);
    while (pos_ < src_.size()) parse_rule();
    check_defined();
    if (!builder_.has_rule("root") || !builder_.defined(builder_.rule("root"))) {
      throw GrammarError("GBNF: the grammar has no 'root' rule");
    }
    try {
      return builder_.build(builder_.rule("root"));
    } catch (const GrammarError& e) {
      throw GrammarError(std::string("GBNF: ") + e.what());
    }
  }

 private:
  // "line L, column C" of a byte offset; the column counts code points.
  std::string where(size_t offset) const {
    const std::string_view before = src_.substr(0, offset);
    const size_t line_start = before.rfind('\n') + 1;  // 0 when there is none
    const auto lead = [](char c) { return (static_cast<uint8_t>(c) & 0xC0) != 0x80; };
    const auto column = std::count_if(before.begin() + static_cast<ptrdiff_t>(line_start), before.end(), lead) + 1;
    const auto line = std::count(before.begin(), before.end(), '\n') + 1;
    return "line " + std::to_string(line) + ", column " + std::to_string(column);
  }

  [[noreturn]] void fail(size_t offset, const std::string& what) const {
    throw GrammarError("GBNF " + where(offset) + ": " + what, offset);
  }

  // The valid UTF-8 character at `p`, or "".
  std::string_view char_at(size_t p) const {
    size_t q = p;
    uint32_t cp = 0;
    if (p >= src_.size() || !tokenizer::decode_utf8(src_, q, cp)) return {};
    return tokenizer::is_valid_utf8(src_.substr(p, q - p)) ? src_.substr(p, q - p) : std::string_view{};
  }

  // What is at `p`, for "found ..." in messages.
  std::string found(size_t p) const {
    if (p >= src_.size()) return "end of input";
    const auto c = static_cast<uint8_t>(src_[p]);
    if (c == '\n' || c == '\r') return "a line break";
    if ((c >= 0x20 && c < 0x7F) || (c >= 0x80 && !char_at(p).empty())) return "'" + std::string(char_at(p)) + "'";
    char buf[16];
    std::snprintf(buf, sizeof buf, "byte 0x%02X", c);
    return buf;
  }

  bool at(char c) const { return pos_ < src_.size() && src_[pos_] == c; }
  bool at_digit() const { return pos_ < src_.size() && is_digit(src_[pos_]); }

  // Skips spaces, tabs and comments, and line breaks too when `newlines`.
  void skip_space(bool newlines) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else if (c == ' ' || c == '\t' || (newlines && (c == '\n' || c == '\r'))) {
        ++pos_;
      } else {
        return;
      }
    }
  }

  // Symbols, quantifiers and alternatives each become an Expr: at most limits.max_elements of them.
  void count_node(size_t offset) {
    if (++nodes_ > limits_.max_elements) {
      fail(offset, "the grammar has more than " + std::to_string(limits_.max_elements) + " symbols and operators");
    }
  }

  uint32_t declare(std::string_view name, size_t offset) {
    uint32_t id = 0;
    try {
      id = builder_.rule(name);
    } catch (const GrammarError& e) {
      fail(offset, e.what());
    }
    if (first_use_.size() <= id) first_use_.resize(id + 1, std::string::npos);
    return id;
  }

  uint32_t reference(std::string_view name, size_t offset) {
    const uint32_t id = declare(name, offset);
    first_use_[id] = std::min(first_use_[id], offset);
    return id;
  }

  // Refuses a rule used but never defined, even if unreachable. Ids follow the text: the lowest is used first.
  void check_defined() const {
    for (uint32_t id = 0; id < first_use_.size(); ++id) {
      if (!builder_.defined(id)) fail(first_use_[id], "rule '" + builder_.name(id) + "' is used but never defined");
    }
  }

  std::string_view parse_name() {
    const size_t start = pos_;
    while (pos_ < src_.size() && is_name_char(src_[pos_])) ++pos_;
    if (pos_ == start) {
      const char* hint = at('|') ? " (a rule continues on the next line only after '|' or inside parentheses)" : "";
      fail(pos_, "expected a rule name, found " + found(pos_) + hint);
    }
    return src_.substr(start, pos_ - start);
  }

  // name ::= alternatives (line break | end of input)
  void parse_rule() {
    const size_t start = pos_;
    const std::string_view name = parse_name();
    skip_space(false);
    if (src_.substr(pos_, 3) != "::=") fail(pos_, "expected '::=' after the rule name, found " + found(pos_));
    const uint32_t id = declare(name, start);
    if (builder_.defined(id)) fail(start, "rule '" + std::string(name) + "' is defined twice");
    pos_ += 3;
    skip_space(true);
    Item body = parse_alternatives(0);
    if (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') {
      fail(pos_, "expected a symbol, '|' or the end of the line, found " + found(pos_));
    }
    builder_.define(id, std::move(body.expr));
    skip_space(true);
  }

  // sequence ('|' sequence)*; `depth` counts the enclosing parentheses.
  Item parse_alternatives(int depth) {
    std::vector<Expr> items;
    int nesting = 0;
    while (true) {
      Item next = parse_sequence(depth);
      nesting = std::max(nesting, next.nesting);
      items.push_back(std::move(next.expr));
      if (!at('|')) return {alt(std::move(items)), nesting};
      count_node(pos_++);
      skip_space(true);
    }
  }

  // Symbols, each optionally quantified, up to '|', ')', a line break outside parentheses, or
  // anything else that starts no symbol.
  Item parse_sequence(int depth) {
    std::vector<Expr> items;
    int nesting = 0, last = 0;  // of the whole sequence, of its last item
    while (pos_ < src_.size()) {
      Item item;
      if (is_quantifier(src_[pos_])) {
        if (items.empty()) fail(pos_, "expected a symbol before the quantifier " + found(pos_));
        item = parse_quantifier({std::move(items.back()), last}, depth > 0);
        items.pop_back();
      } else if (!parse_symbol(depth, item)) {
        break;
      }
      items.push_back(std::move(item.expr));
      last = item.nesting;
      nesting = std::max(nesting, last);
      skip_space(depth > 0);
    }
    return {items.empty() ? empty() : seq(std::move(items)), nesting};
  }

  // One symbol: a literal, a class, '.', a rule reference or a group. False if none starts here.
  bool parse_symbol(int depth, Item& out) {
    const size_t start = pos_;
    const char c = src_[pos_];
    if (c == '<' || c == '!') fail(pos_, "token literals (<...>, <[id]>, !<...>) are not supported");
    if (c != '"' && c != '[' && c != '.' && c != '(' && !is_name_char(c)) return false;
    count_node(start);
    switch (c) {
      case '"': out.expr = parse_literal(); break;
      case '[': out.expr = cls(parse_class()); break;
      case '.': out.expr = cls(CharClass::any()), ++pos_; break;
      case '(': out = parse_group(depth); break;
      default: out.expr = ref(reference(parse_name(), start));
    }
    return true;
  }

  // `item` inside one more group or quantifier.
  Item nest(Item item, size_t offset) const {
    if (++item.nesting > kMaxGbnfNesting) fail_too_deep(offset);
    return item;
  }

  [[noreturn]] void fail_too_deep(size_t offset) const {
    fail(offset, "parentheses and quantifiers nest more than " + std::to_string(kMaxGbnfNesting) + " deep");
  }

  Item parse_group(int depth) {
    const size_t open = pos_++;
    if (depth >= kMaxGbnfNesting) fail_too_deep(open);
    skip_space(true);
    Item inner = parse_alternatives(depth + 1);
    if (!at(')')) {
      fail(pos_, "expected a symbol, '|' or ')' to close the '(' at " + where(open) + ", found " + found(pos_));
    }
    ++pos_;
    return nest(std::move(inner), open);
  }

  // A repetition count: decimal digits, at most limits.max_repeat.
  uint32_t parse_count() {
    const size_t start = pos_;
    while (at_digit()) ++pos_;
    uint64_t value = 0;
    const auto result = std::from_chars(src_.data() + start, src_.data() + pos_, value);  // out of range: ec set
    if (result.ec != std::errc() || value > limits_.max_repeat || value >= Expr::kUnbounded) {
      fail(start, "repetition count " + std::string(src_.substr(start, pos_ - start)) + " exceeds the limit of " +
                      std::to_string(limits_.max_repeat));
    }
    return static_cast<uint32_t>(value);
  }

  // `x` followed by * + ? {m} {m,} {m,n} {,n}.
  Item parse_quantifier(Item x, bool nested) {
    const size_t start = pos_;
    const char c = src_[pos_++];
    count_node(start);
    if (c != '{') {
      x.expr = c == '*' ? star(std::move(x.expr)) : c == '+' ? plus(std::move(x.expr)) : opt(std::move(x.expr));
      return nest(std::move(x), start);
    }
    skip_space(nested);
    const bool has_min = at_digit();
    const uint32_t min = has_min ? parse_count() : 0;
    uint32_t max = min;
    skip_space(nested);
    const bool comma = at(',');
    if (comma) {
      ++pos_;
      skip_space(nested);
      max = at_digit() ? parse_count() : Expr::kUnbounded;
      skip_space(nested);
    }
    if (!has_min && (!comma || max == Expr::kUnbounded)) {
      fail(pos_, "expected a number in the repetition, found " + found(pos_));
    }
    if (!at('}')) {
      fail(pos_, std::string(comma ? "expected '}' to end" : "expected ',' or '}' in") + " the repetition, found " +
                     found(pos_));
    }
    ++pos_;
    if (min > max) fail(start, "the minimum " + std::to_string(min) + " exceeds the maximum " + std::to_string(max));
    x.expr = repeat(std::move(x.expr), min, max);
    return nest(std::move(x), start);
  }

  // Exactly `digits` hex digits of the escape that begins at `escape`: a Unicode scalar value.
  uint32_t parse_hex(size_t digits, size_t escape) {
    uint32_t value = 0;
    const std::string_view hex = src_.substr(pos_, digits);
    const auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), value, 16);
    const size_t n = ec == std::errc() ? static_cast<size_t>(end - hex.data()) : 0;
    if (n < digits) {
      fail(pos_ + n, "expected " + std::to_string(digits) + " hex digits, found " + found(pos_ + n));
    }
    pos_ += digits;
    if (value > kMaxCodePoint || (value >= 0xD800 && value <= 0xDFFF)) {
      fail(escape, "escape " + std::string(src_.substr(escape, pos_ - escape)) + " is not a Unicode scalar value");
    }
    return value;
  }

  // One character of a literal or class (pos_ < size): an escape or a UTF-8 encoded code point.
  uint32_t parse_char() {
    const size_t start = pos_;
    uint32_t cp = 0;
    if (src_[pos_] != '\\') {
      if (char_at(pos_).empty()) fail(start, "invalid UTF-8 (" + found(start) + ")");
      tokenizer::decode_utf8(src_, pos_, cp);
      return cp;
    }
    if (++pos_ >= src_.size()) fail(pos_, "expected an escape after '\\', found end of input");
    switch (src_[pos_++]) {
      case 'n': return '\n';
      case 'r': return '\r';
      case 't': return '\t';
      case '\\': case '"': case '[': case ']': case '-': return static_cast<uint8_t>(src_[pos_ - 1]);
      case 'x': return parse_hex(2, start);
      case 'u': return parse_hex(4, start);
      case 'U': return parse_hex(8, start);
      default:
        fail(start, "unknown escape: '\\' followed by " + found(pos_ - 1) +
                        " (expected one of \\n \\r \\t \\\\ \\\" \\[ \\] \\- \\x \\u \\U)");
    }
  }

  Expr parse_literal() {
    const size_t open = pos_++;
    std::string text;
    while (!at('"')) {
      if (pos_ >= src_.size()) fail(pos_, "expected '\"' to end the string at " + where(open) + ", found end of input");
      tokenizer::append_utf8(text, parse_char());
    }
    ++pos_;
    return text.empty() ? empty() : lit(text);
  }

  // [...] or [^...]: characters and ranges a-z; '-' first, or last before ']', is a character.
  CharClass parse_class() {
    const size_t open = pos_++;
    const bool negated = at('^');
    if (negated) ++pos_;
    CharClass c;
    size_t items = 0;
    while (!at(']')) {
      if (pos_ >= src_.size()) fail(pos_, "expected ']' to end the class at " + where(open) + ", found end of input");
      const size_t start = pos_;
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (at('-') && pos_ + 1 < src_.size() && src_[pos_ + 1] != ']') {
        ++pos_;
        hi = parse_char();
        if (hi < lo) fail(start, "the range " + std::string(src_.substr(start, pos_ - start)) + " is reversed");
      }
      if (++items > kMaxClassItems) fail(open, "the class has more than " + std::to_string(kMaxClassItems) + " items");
      if (lo < 0xD800) c.add(lo, std::min<uint32_t>(hi, 0xD7FF));  // surrogates are no characters: leave them out
      if (hi > 0xDFFF) c.add(std::max<uint32_t>(lo, 0xE000), hi);
    }
    ++pos_;
    if (items == 0) fail(open, "empty character class");
    class_work_ += items * items;
    if (class_work_ > kMaxClassWork) fail(open, "the grammar's character classes are too large in total");
    if (negated) c = c.complement();
    if (c.empty()) fail(open, "the negated class matches nothing");
    return c;
  }

  std::string_view src_;
  GrammarLimits limits_;
  GrammarBuilder builder_;
  size_t pos_ = 0;
  std::vector<size_t> first_use_;  // per builder rule id: offset of its first reference, or npos
  size_t class_work_ = 0;          // sum of items^2 over the classes so far
  size_t nodes_ = 0;               // count_node()
};

}  // namespace

std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, GrammarLimits limits) {
  return Parser(text, limits).run();
}

}  // namespace engine::grammar
