#include "engine/text/grammar/regex.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

namespace {

constexpr int kMaxDepth = 64;
constexpr uint32_t kMaxCount = 10000;
// Members of all classes together: each CharClass::add sorts the class, so a huge class would take
// quadratic time.
constexpr size_t kMaxClassMembers = 4096;

[[noreturn]] void fail(const std::string& what, size_t at) {
  throw GrammarError("pattern: " + what + " at offset " + std::to_string(at), at);
}

[[noreturn]] void refuse(const std::string& construct, size_t at) {
  throw GrammarError("pattern: " + construct + " at offset " + std::to_string(at) + " is not supported", at);
}

CharClass word_class() {
  CharClass c = CharClass::range('a', 'z');
  return c.add('A', 'Z').add('0', '9').add('_', '_');
}

// ECMA-262 WhiteSpace and LineTerminator.
CharClass space_class() {
  CharClass c = CharClass::range('\t', '\r');
  for (uint32_t cp : {0x20u, 0xA0u, 0x1680u, 0x2028u, 0x2029u, 0x202Fu, 0x205Fu, 0x3000u, 0xFEFFu}) c.add(cp, cp);
  return c.add(0x2000, 0x200A);
}

// `.`: everything but the line terminators.
CharClass dot_class() {
  CharClass c = CharClass::range('\n', '\n');
  return c.add('\r', '\r').add(0x2028, 0x2029).complement();
}

// `c` without the characters of `minus` (and without surrogates).
CharClass subtract(const CharClass& c, const CharClass& minus) { return c.complement().add(minus).complement(); }

int hex_value(char c) {
  if (!std::isxdigit(static_cast<unsigned char>(c))) return -1;
  return c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
}

// A character of a group name: letters, digits, `_`, `$`, or (any byte of) a non-ASCII one.
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || (c & 0x80); }

// JSON's two-character escapes: a character and the letter after its backslash.
constexpr std::pair<char, char> kShortEscapes[] = {{'\b', 'b'}, {'\t', 't'}, {'\n', 'n'}, {'\f', 'f'},
                                                   {'\r', 'r'}, {'"', '"'},  {'\\', '\\'}};

// The characters of `c` as written inside a JSON string: literally, except `"`, `\` and the
// controls, which take their short escape or \u00XX (hex digits in either case).
Expr json_chars(const CharClass& c) {
  const CharClass special = CharClass::range(0, 0x1F).add('"', '"').add('\\', '\\');
  std::vector<Expr> alts;
  if (CharClass plain = subtract(c, special); !plain.empty()) alts.push_back(cls(std::move(plain)));
  CharClass shorts;
  for (const auto& [ch, letter] : kShortEscapes) {
    if (c.contains(ch)) shorts.add(letter, letter);
  }
  CharClass low[6];  // \u00XY by X: the digits Y
  for (const CharClass::Range& r : special.ranges()) {
    for (uint32_t cp = r.lo; cp <= r.hi; ++cp) {
      if (!c.contains(cp)) continue;
      const uint32_t y = cp & 15;
      if (y < 10) low[cp >> 4].add('0' + y, '0' + y);
      else low[cp >> 4].add('a' + y - 10, 'a' + y - 10).add('A' + y - 10, 'A' + y - 10);
    }
  }
  if (!shorts.empty()) alts.push_back(seq({lit("\\"), cls(std::move(shorts))}));
  for (uint32_t x = 0; x < 6; ++x) {
    if (!low[x].empty()) alts.push_back(seq({lit("\\u00" + std::to_string(x)), cls(std::move(low[x]))}));
  }
  return alts.empty() ? cls(CharClass{}) : alt(std::move(alts));
}

bool nullable(const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::kEmpty: return true;
    case Expr::Kind::kLiteral: return e.text.empty();
    case Expr::Kind::kSeq: return std::all_of(e.items.begin(), e.items.end(), nullable);
    case Expr::Kind::kAlt: return std::any_of(e.items.begin(), e.items.end(), nullable);
    case Expr::Kind::kRepeat: return e.min == 0 || nullable(e.items[0]);
    default: return false;
  }
}

// An expression B without the empty string such that B* = e*, or none when e* is only "". (A
// nullable sequence or alternative contributes its items' bodies: (x? y?)* = (x | y)*.)
std::optional<Expr> star_body(const Expr& e) {
  if (!nullable(e)) return e;
  if (e.kind == Expr::Kind::kRepeat) return e.max == 0 ? std::nullopt : star_body(e.items[0]);
  if (e.kind != Expr::Kind::kSeq && e.kind != Expr::Kind::kAlt) return std::nullopt;
  std::vector<Expr> bodies;
  for (const Expr& item : e.items) {
    if (std::optional<Expr> b = star_body(item)) bodies.push_back(std::move(*b));
  }
  if (bodies.empty()) return std::nullopt;
  return alt(std::move(bodies));
}

// x{min,max}. An unbounded repetition of a nullable x is x*, written over its star body: the
// builder's rule R ::= x R | "" would be left-recursive.
Expr repeat_of(Expr x, uint32_t min, uint32_t max) {
  if (max != Expr::kUnbounded || !nullable(x)) return repeat(std::move(x), min, max);
  std::optional<Expr> body = star_body(x);
  return body ? star(std::move(*body)) : empty();
}

// Recursive descent over the pattern; `pos_` is the byte offset of the next unread character.
class Parser {
 public:
  Parser(std::string_view pattern, bool json) : p_(pattern), json_(json) {}

  // Alternatives grouped by their anchors (bit 0: ^, bit 1: $), so that the open ends are
  // written at most four times.
  Expr run() {
    std::vector<Expr> bodies[4];
    do {
      const bool start = eat('^');
      Expr body = sequence(0);
      const bool end = eat('$');
      bodies[start | end << 1].push_back(std::move(body));
    } while (eat('|'));
    if (!at_end()) fail("unmatched )", pos_);
    std::vector<Expr> alts;
    for (int anchors = 0; anchors < 4; ++anchors) {
      if (bodies[anchors].empty()) continue;
      std::vector<Expr> items;
      if (!(anchors & 1)) items.push_back(anything());
      items.push_back(alt(std::move(bodies[anchors])));
      if (!(anchors & 2)) items.push_back(anything());
      alts.push_back(seq(std::move(items)));
    }
    return alt(std::move(alts));
  }

 private:
  bool at_end() const { return pos_ >= p_.size(); }
  char peek(size_t ahead = 0) const { return pos_ + ahead < p_.size() ? p_[pos_ + ahead] : '\0'; }
  bool eat(char c) {
    if (at_end() || p_[pos_] != c) return false;
    ++pos_;
    return true;
  }

  uint32_t next_char() {
    uint32_t cp = 0;
    if (!tokenizer::decode_utf8(p_, pos_, cp)) fail("invalid UTF-8", pos_);
    return cp;
  }

  Expr chars(const CharClass& c) const { return json_ ? json_chars(c) : cls(c); }
  Expr anything() const { return star(chars(CharClass::any())); }

  Expr alternation(int depth) {
    std::vector<Expr> alts;
    do alts.push_back(sequence(depth));
    while (eat('|'));
    return alt(std::move(alts));
  }

  // Quantified atoms up to `|`, `)`, the end, or (at the top) a final `$`.
  Expr sequence(int depth) {
    std::vector<Expr> items;
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$' && depth == 0 && (pos_ + 1 == p_.size() || peek(1) == '|')) break;
      Expr x = atom(depth);
      items.push_back(quantified(std::move(x)));
    }
    return items.empty() ? empty() : seq(std::move(items));
  }

  Expr atom(int depth) {
    const size_t at = pos_;
    uint32_t min = 0, max = 0;
    switch (peek()) {
      case '(': return group(depth + 1);
      case '[': return chars(bracket());
      case '.': ++pos_; return chars(dot_class());
      case '\\': ++pos_; return chars(escape(false, at));
      case '^': refuse("anchor ^ inside the pattern", at);
      case '$': refuse("anchor $ inside the pattern", at);
      case '*': case '+': case '?': fail("nothing to repeat", at);
      case '{':
        if (braces(min, max)) fail("nothing to repeat", at);
        break;  // not a quantifier: a literal `{`
    }
    return chars(CharClass::of(next_char()));
  }

  Expr quantified(Expr x) {
    uint32_t min = 0, max = Expr::kUnbounded;
    if (eat('+')) min = 1;
    else if (eat('?')) max = 1;
    else if (!eat('*') && !braces(min, max)) return x;
    eat('?');  // lazy: the same language
    return repeat_of(std::move(x), min, max);
  }

  // {n} {n,} {n,m} at pos_: true with the bounds, past it; false, pos_ unchanged, when the text
  // there is not a quantifier (then `{` is a literal, as in ECMA-262 Annex B).
  bool braces(uint32_t& min, uint32_t& max) {
    const size_t at = pos_;
    if (!eat('{') || !count(min, at)) return (pos_ = at), false;
    max = min;
    if (eat(',')) max = count(max, at) ? max : Expr::kUnbounded;
    if (!eat('}')) return (pos_ = at), false;
    if (min > max) fail("quantifier {" + std::to_string(min) + "," + std::to_string(max) + "} out of order", at);
    return true;
  }

  // Decimal digits; false if there are none. Counts above kMaxCount are refused.
  bool count(uint32_t& n, size_t at) {
    if (peek() < '0' || peek() > '9') return false;
    n = 0;
    while (peek() >= '0' && peek() <= '9') n = std::min<uint32_t>(n * 10 + (p_[pos_++] - '0'), kMaxCount + 1);
    if (n > kMaxCount) refuse("repetition count above " + std::to_string(kMaxCount), at);
    return true;
  }

  Expr group(int depth) {
    const size_t at = pos_++;
    if (depth > kMaxDepth) refuse("group nested deeper than " + std::to_string(kMaxDepth), at);
    if (eat('?')) {
      if (peek() == '=' || peek() == '!') refuse(peek() == '=' ? "lookahead (?=" : "negative lookahead (?!", at);
      if (peek() == '<' && (peek(1) == '=' || peek(1) == '!')) {
        refuse(peek(1) == '=' ? "lookbehind (?<=" : "negative lookbehind (?<!", at);
      }
      if (eat('<')) {
        const size_t name = pos_;
        while (name_char(peek())) ++pos_;
        if (pos_ == name || !eat('>')) fail("invalid group name", at);
      } else if (!eat(':')) {
        const bool shown = !at_end() && !(peek() & 0x80);
        refuse("group modifier or inline flag (?" + std::string(shown ? p_.substr(pos_, 1) : ""), at);
      }
    }
    Expr body = alternation(depth);
    if (!eat(')')) fail("unterminated group", at);
    return body;
  }

  // [...] at pos_. Ranges whose end is a class escape ([\w-.]) take `-` literally (Annex B).
  CharClass bracket() {
    const size_t at = pos_++;
    const bool negate = eat('^');
    CharClass c;
    while (!eat(']')) {
      if (at_end()) fail("unterminated character class", at);
      const size_t item = pos_;
      if (++class_members_ > kMaxClassMembers) {
        refuse("more than " + std::to_string(kMaxClassMembers) + " class members", item);
      }
      CharClass lo = member();
      if (peek() != '-' || peek(1) == ']' || pos_ + 1 >= p_.size()) {
        c.add(lo);
        continue;
      }
      ++pos_;
      CharClass hi = member();
      if (!single(lo) || !single(hi)) {
        c.add(lo).add('-', '-').add(hi);
      } else if (lo.ranges()[0].lo > hi.ranges()[0].lo) {
        fail("character range out of order", item);
      } else {
        c.add(lo.ranges()[0].lo, hi.ranges()[0].lo);
      }
    }
    return negate ? c.complement() : subtract(c, CharClass{});
  }

  static bool single(const CharClass& c) { return c.ranges().size() == 1 && c.ranges()[0].lo == c.ranges()[0].hi; }

  CharClass member() {
    const size_t at = pos_;
    if (eat('\\')) return escape(true, at);
    return CharClass::of(next_char());
  }

  // The escape whose backslash is at `at` (pos_ is past the backslash).
  CharClass escape(bool in_class, size_t at) {
    if (at_end()) fail("\\ at the end of the pattern", at);
    const char c = p_[pos_++];
    switch (c) {
      case 'd': return CharClass::range('0', '9');
      case 'D': return CharClass::range('0', '9').complement();
      case 'w': return word_class();
      case 'W': return word_class().complement();
      case 's': return space_class();
      case 'S': return space_class().complement();
      case 't': return CharClass::of('\t');
      case 'n': return CharClass::of('\n');
      case 'r': return CharClass::of('\r');
      case 'f': return CharClass::of('\f');
      case 'v': return CharClass::of('\v');
      case 'x': return CharClass::of(hex_digits(2, at));
      case 'u': return CharClass::of(unicode_escape(at));
      case '0':
        if (peek() >= '0' && peek() <= '9') refuse("octal escape", at);
        return CharClass::of(0);
      case 'c':
        if (!std::isalpha(static_cast<unsigned char>(peek()))) fail("invalid \\c escape", at);
        return CharClass::of(p_[pos_++] & 31);
      case 'b':
        if (in_class) return CharClass::of('\b');
        refuse("word boundary \\b", at);
      case 'B':
        if (!in_class) refuse("word boundary \\B", at);
        break;
      case 'k': refuse("backreference \\k", at);
      case 'p': case 'P': refuse(std::string("unicode property escape \\") + c, at);
      default:
        if (c >= '1' && c <= '9') refuse(std::string("backreference \\") + c, at);
        if (!(c & 0x80) && !std::isalnum(static_cast<unsigned char>(c))) return CharClass::of(c);
    }
    fail(c & 0x80 ? std::string("unknown escape") : std::string("unknown escape \\") + c, at);
  }

  uint32_t hex_digits(size_t n, size_t at) {
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) {
      const int d = hex_value(peek());
      if (d < 0) fail("invalid hexadecimal escape", at);
      v = v * 16 + d;
      ++pos_;
    }
    return v;
  }

  // \uHHHH (a surrogate pair of two such escapes is one character) or \u{H...}.
  uint32_t unicode_escape(size_t at) {
    uint32_t cp = 0;
    if (eat('{')) {
      if (peek() == '}') fail("invalid \\u{} escape", at);
      while (!eat('}')) {
        const int d = hex_value(peek());
        if (d < 0) fail("invalid \\u{} escape", at);
        cp = std::min<uint32_t>(cp * 16 + d, kMaxCodePoint + 1);
        ++pos_;
      }
      if (cp > kMaxCodePoint) fail("code point above U+10FFFF", at);
    } else {
      cp = hex_digits(4, at);
      if (cp >= 0xD800 && cp < 0xDC00 && p_.substr(pos_, 2) == "\\u") {
        const size_t back = pos_;
        pos_ += 2;
        const uint32_t low = hex_value(peek()) >= 0 ? hex_digits(4, back) : 0;
        if (low >= 0xDC00 && low < 0xE000) return 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        pos_ = back;
      }
    }
    if (cp >= 0xD800 && cp < 0xE000) fail("lone surrogate", at);
    return cp;
  }

  std::string_view p_;
  bool json_;
  size_t pos_ = 0;
  size_t class_members_ = 0;
};

}  // namespace

Expr regex_to_expr(std::string_view pattern, bool json_escaped) {
  if (!tokenizer::is_valid_utf8(pattern)) throw GrammarError("pattern: not valid UTF-8");
  return Parser(pattern, json_escaped).run();
}

}  // namespace engine::grammar
