// libFuzzer target: the grammar front ends (GBNF, JSON Schema, regex) and what runs a compiled
// grammar (token masks, the constraint of one sequence, the byte matcher).
//
// Input: one selector byte, then the source (grammar, schema or pattern), then optionally a NUL
// byte and text to match. The selector modulo 7 picks the front end:
//   0 GBNF (parse_gbnf)          1 JSON schema (depth-limited parse, json_schema_grammar)
//   2 regex, raw                 3 regex inside a JSON string (json_escaped, between quotes)
//   4 any JSON value             5 any JSON object (the source is ignored: the text is matched)
//   6 a number schema made from the source's bytes: integer or number, minimum / maximum /
//     exclusiveMinimum / exclusiveMaximum (random decimals, tiny ones, equal ones) and multipleOf
// A GrammarError (and, for a schema, JSON that does not parse) is the expected refusal. A grammar
// that compiles is prepared for a small fixed vocabulary and driven for a few tokens, the mask
// checked at every step against a matcher fed each token (step i takes the allowed token that
// byte i of the text picks, or the lowest allowed one); a step where no token may follow and the
// grammar cannot end is a dead end, a bug. The text goes to a matcher whole and byte by byte,
// which must agree. Mode 6 also walks the grammar byte by byte as the text picks and checks that
// every number it completes satisfies the schema, exactly. Any other exception, a disagreement, a
// crash, a hang or a sanitizer report is a bug.
//
// Limits tighter than the server's (input size, GrammarLimits) keep every input fast without
// changing what is reachable.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/grammar.h"
#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/matcher.h"
#include "engine/text/grammar/number_ranges.h"
#include "engine/text/grammar/regex.h"
#include "engine/text/grammar/token_masks.h"

namespace {

namespace g = engine::grammar;
using ojson = nlohmann::ordered_json;

constexpr size_t kMaxInput = 4096;
constexpr int kMaxJsonDepth = 64;  // the server's default --max-json-depth
constexpr int kSteps = 32;

g::GrammarLimits limits() {
  g::GrammarLimits l;
  l.max_elements = 20000;
  l.max_rules = 2000;
  l.max_repeat = 200;
  return l;
}

// A few dozen tokens: JSON punctuation and words, digits, escapes, whitespace, multi-byte UTF-8
// whole and split between tokens, a control token (no bytes) and one end-of-generation id.
std::shared_ptr<const g::TokenVocab> make_vocab() {
  std::vector<std::string> tokens = {
      "",  // 0: a control token
      "",  // 1: end of generation
      "{", "}", "[", "]", "\"", ":", ",", " ", "\n", "\\", "-", "+", ".", "e", "E",
      "0", "1", "2", "9", "12", "a", "b", "z", "A", "ab", "abc", "_", "/", "@", "#",
      "true", "false", "null", "{\"", "\":", "\",\"", "\"a\"", "\\n", "\\u", "\\u00", "00", "1f",
      "::=", "root", "x", "\t",
      "\xC3\xA9",                  // é
      "\xE2\x82\xAC",              // €
      "\xF0\x9F\x98\x80",          // 😀
      "\xC3", "\xA9",              // é split
      "\xE2\x82", "\xAC", "\x82",  // € split
      "\xF0\x9F", "\x98\x80",      // 😀 split
      "a\xC3", "\xA9z",            // split across a letter
      "\xFF", "\xC0\x80",          // never valid UTF-8
  };
  return std::make_shared<const g::TokenVocab>(std::move(tokens), std::vector<int32_t>{1});
}

struct TooDeep {};

// The schema, parsed with the nesting limit the request path applies before the compiler sees it.
bool parse_schema(std::string_view text, ojson& out) {
  const ojson::parser_callback_t limit = [](int depth, ojson::parse_event_t event, ojson&) {
    if ((event == ojson::parse_event_t::object_start || event == ojson::parse_event_t::array_start) &&
        depth >= kMaxJsonDepth) {
      throw TooDeep{};
    }
    return true;
  };
  try {
    out = ojson::parse(text.begin(), text.end(), limit, false);
  } catch (const TooDeep&) {
    return false;
  }
  return !out.is_discarded();
}

std::shared_ptr<const g::Grammar> regex_grammar(std::string_view pattern, bool json) {
  g::GrammarBuilder b(limits());
  const uint32_t root = b.rule("root");
  g::Expr e = g::regex_to_expr(pattern, json);
  b.define(root, json ? g::seq({g::lit("\""), std::move(e), g::lit("\"")}) : std::move(e));
  return b.build(root);
}

[[noreturn]] void bug(const char* what, const std::string& detail = {}) {
  std::fprintf(stderr, "fuzz_grammar: %s%s%s\n", what, detail.empty() ? "" : ": ", detail.c_str());
  std::abort();
}

bool is_eog(const g::TokenVocab& v, int32_t id) {
  return std::find(v.eog_ids().begin(), v.eog_ids().end(), id) != v.eog_ids().end();
}

// A few tokens of constrained generation: at each step the mask must be exactly the tokens a
// matcher accepts (and the end when the text so far is complete). Then an allowed token other
// than the end is taken: the one `picks[step]` chooses among them, or the lowest.
void drive(const std::shared_ptr<const g::CompiledGrammar>& cg, std::string_view picks) {
  const g::TokenVocab& vocab = cg->vocab();
  g::TokenConstraint constraint(cg);
  g::Matcher reference(cg->grammar());
  g::Automaton automaton(*cg->grammar());
  g::StackSet after;
  for (int step = 0; step < kSteps; ++step) {
    const g::TokenBits& allowed = constraint.allowed();
    if (constraint.can_end() != reference.can_end()) bug("can_end disagrees with the matcher");
    std::vector<int32_t> candidates;
    for (int32_t id = 0; id < vocab.n_vocab(); ++id) {
      bool want = false;
      if (is_eog(vocab, id)) {
        want = reference.can_end();
      } else if (!vocab.bytes(id).empty()) {
        want = automaton.advance(reference.stacks(), vocab.bytes(id), after);
      }
      if (g::test_bit(allowed, id) != want) {
        bug("the mask disagrees with the matcher", "token " + std::to_string(id) + " at step " +
                                                      std::to_string(step) + (want ? ": missing" : ": extra"));
      }
      if (want && !is_eog(vocab, id)) candidates.push_back(id);
    }
    if (candidates.empty()) {
      if (!reference.can_end()) bug("a dead end: no token may follow and the grammar cannot end");
      if (constraint.accept(0)) bug("a control token was accepted");
      return;
    }
    const size_t choice = static_cast<size_t>(step) < picks.size() ? static_cast<uint8_t>(picks[step]) : 0;
    const int32_t pick = candidates[choice % candidates.size()];
    if (!constraint.accept(pick)) bug("an allowed token was refused", std::to_string(pick));
    if (!reference.accept(vocab.bytes(pick))) bug("the matcher refused what it accepted a moment ago");
  }
}

// The text whole and byte by byte: the same verdict, the same end state.
void match(const std::shared_ptr<const g::Grammar>& grammar, std::string_view text) {
  g::Matcher whole(grammar);
  const bool ok = whole.accept(text);
  g::Matcher bytes(grammar);
  bool each = true;
  for (size_t i = 0; i < text.size() && each; ++i) each = bytes.accept(text.substr(i, 1));
  if (ok != each) bug("whole and byte-by-byte matching disagree");
  if (ok && whole.can_end() != bytes.can_end()) bug("whole and byte-by-byte matching end differently");
  if (g::matches(grammar, text) != (ok && whole.can_end())) bug("matches() disagrees with the matcher");
}

// Mode 6: a decimal from the next bytes of `src` (sign, up to 4 integer and 12 fraction digits,
// or one of a few edge values).
std::string take_decimal(std::string_view& src) {
  auto next = [&]() -> unsigned {
    if (src.empty()) return 0;
    const auto b = static_cast<uint8_t>(src[0]);
    src.remove_prefix(1);
    return b;
  };
  static const char* const kEdges[] = {"0", "1", "-1", "0.000000001", "1e-9", "0.5", "-0.5", "100"};
  const unsigned kind = next();
  if (kind % 4 == 0) return kEdges[next() % 8];
  std::string s = kind & 4 ? "-" : "";
  s += std::to_string(next() * 40 + next() % 40);
  const unsigned frac = next() % 13;
  if (frac > 0) s += ".";
  for (unsigned i = 0; i < frac; ++i) s += static_cast<char>('0' + next() % 10);
  return s;
}

struct NumberCase {
  ojson schema;
  std::optional<g::Bound> lo, hi;
  std::optional<g::Decimal> multiple;
  bool integer = false;
};

NumberCase number_case(std::string_view src) {
  NumberCase c;
  const unsigned flags = src.empty() ? 0 : static_cast<uint8_t>(src[0]);
  if (!src.empty()) src.remove_prefix(1);
  c.integer = flags & 1;
  c.schema = {{"type", c.integer ? "integer" : "number"}};
  auto side = [&](bool present, bool exclusive, const char* inclusive_key, const char* exclusive_key) -> std::optional<g::Bound> {
    if (!present) return std::nullopt;
    const std::string text = take_decimal(src);
    c.schema[exclusive ? exclusive_key : inclusive_key] = ojson::parse(text);
    return g::Bound{*g::Decimal::parse(c.schema[exclusive ? exclusive_key : inclusive_key].dump()), exclusive};
  };
  c.lo = side(flags & 2, flags & 4, "minimum", "exclusiveMinimum");
  c.hi = side(flags & 8, flags & 16, "maximum", "exclusiveMaximum");
  if (flags & 32 && c.lo && c.hi && !(flags & 64)) {  // equal bounds
    c.schema[c.hi->exclusive ? "exclusiveMaximum" : "maximum"] = c.schema[c.lo->exclusive ? "exclusiveMinimum" : "minimum"];
    c.hi->value = c.lo->value;
  }
  if (flags & 128) {
    static const char* const kMultiples[] = {"5", "3", "0.25", "0.01", "7", "0.5", "10", "0.125"};
    const char* m = kMultiples[src.empty() ? 0 : static_cast<uint8_t>(src[0]) % 8];
    c.schema["multipleOf"] = ojson::parse(m);
    c.multiple = *g::Decimal::parse(m);
  }
  return c;
}

// Whether decimal x is a multiple of m, exactly: x * 10^k and m * 10^k as digit strings, the
// remainder by long division.
bool multiple_of(const g::Decimal& x, const g::Decimal& m) {
  const size_t k = std::max(x.frac_digits.size(), m.frac_digits.size());
  auto scaled = [k](const g::Decimal& d) {
    return d.int_digits + d.frac_digits + std::string(k - d.frac_digits.size(), '0');
  };
  const uint64_t divisor = std::stoull(scaled(m));
  uint64_t r = 0;
  for (char c : scaled(x)) r = (r * 10 + static_cast<uint64_t>(c - '0')) % divisor;
  return r == 0;
}

// Mode 6: bytes of `picks` choose among the bytes the grammar allows next; a number the walk
// completes must lie within the bounds and be a multiple, on the digits.
void walk_number(const std::shared_ptr<const g::Grammar>& grammar, const NumberCase& c, std::string_view picks) {
  g::Matcher m(grammar);
  g::Automaton a(*grammar);
  g::StackSet after;
  std::string text;
  for (size_t step = 0; step < 64; ++step) {
    std::vector<uint8_t> next;
    for (unsigned b = 0; b < 256; ++b) {
      a.advance(m.stacks(), static_cast<uint8_t>(b), after);
      if (!after.empty()) next.push_back(static_cast<uint8_t>(b));
    }
    const unsigned pick = step < picks.size() ? static_cast<uint8_t>(picks[step]) : 0;
    if (next.empty() || (m.can_end() && pick % 5 == 0)) break;
    const char byte = static_cast<char>(next[pick % next.size()]);
    if (!m.accept(std::string_view(&byte, 1))) bug("the matcher refused a byte it allows");
    text += byte;
  }
  if (!m.can_end()) {
    if (text.size() < 64) bug("a dead end in a number grammar", text);
    return;
  }
  const auto x = g::Decimal::parse(text);
  if (!x) bug("not a JSON number", text);
  const bool constrained = c.lo || c.hi || c.multiple;  // written without an exponent, then
  if (constrained && text.find_first_of("eE") != std::string::npos) bug("an exponent in a bounded number", text);
  if (c.integer && text.find('.') != std::string::npos) bug("an integer with a fraction", text);
  if (c.lo && (c.lo->exclusive ? g::compare(*x, c.lo->value) <= 0 : g::compare(*x, c.lo->value) < 0)) {
    bug("below the lower bound", text + " " + c.schema.dump());
  }
  if (c.hi && (c.hi->exclusive ? g::compare(*x, c.hi->value) >= 0 : g::compare(*x, c.hi->value) > 0)) {
    bug("above the upper bound", text + " " + c.schema.dump());
  }
  if (c.multiple && !multiple_of(*x, *c.multiple)) bug("not a multiple", text + " " + c.schema.dump());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::shared_ptr<const g::TokenVocab> vocab = make_vocab();
  static const std::shared_ptr<const g::Grammar> any_value = g::any_json_grammar(false);
  static const std::shared_ptr<const g::Grammar> any_object = g::any_json_grammar(true);
  if (size == 0 || size > kMaxInput) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  const size_t nul = rest.find('\0');
  const std::string_view source = rest.substr(0, nul);
  const std::string_view text = nul == std::string_view::npos ? std::string_view() : rest.substr(nul + 1);

  std::shared_ptr<const g::Grammar> grammar;
  NumberCase number;
  try {
    switch (data[0] % 7) {
      case 0: grammar = g::parse_gbnf(source, limits()); break;
      case 1: {
        ojson schema;
        if (!parse_schema(source, schema)) return 0;
        grammar = g::json_schema_grammar(schema, limits());
        break;
      }
      case 2: grammar = regex_grammar(source, false); break;
      case 3: grammar = regex_grammar(source, true); break;
      case 4: grammar = any_value; break;
      case 5: grammar = any_object; break;
      case 6:
        number = number_case(source);
        grammar = g::json_schema_grammar(number.schema, limits());
        break;
    }
  } catch (const g::GrammarError&) {
    return 0;
  } catch (const std::exception& e) {
    bug("an exception other than GrammarError", e.what());
  }

  try {
    const std::string_view subject = data[0] % 7 == 4 || data[0] % 7 == 5 ? rest : text;
    match(grammar, subject);
    if (data[0] % 7 == 6) walk_number(grammar, number, text);
    drive(std::make_shared<const g::CompiledGrammar>(grammar, vocab), subject);
  } catch (const g::GrammarError&) {
    // The automaton's limits (too ambiguous, nested too deep): a refusal, not a crash.
  } catch (const std::exception& e) {
    bug("an exception other than GrammarError", e.what());
  }
  return 0;
}
