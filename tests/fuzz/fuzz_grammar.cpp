// libFuzzer target: the grammar front ends (GBNF, JSON Schema, regex) and what runs a compiled
// grammar (token masks, the constraint of one sequence, the byte matcher).
//
// Input: one selector byte, then the source (grammar, schema or pattern), then optionally a NUL
// byte and text to match. The selector modulo 6 picks the front end:
//   0 GBNF (parse_gbnf)          1 JSON schema (depth-limited parse, json_schema_grammar)
//   2 regex, raw                 3 regex inside a JSON string (json_escaped, between quotes)
//   4 any JSON value             5 any JSON object (the source is ignored: the text is matched)
// A GrammarError (and, for a schema, JSON that does not parse) is the expected refusal. A grammar
// that compiles is prepared for a small fixed vocabulary and driven for a few tokens, the mask
// checked at every step against a matcher fed each token (step i takes the allowed token that
// byte i of the text picks, or the lowest allowed one); the text goes to a matcher whole and
// byte by byte, which must agree. Any other exception, a disagreement, a crash, a hang or a
// sanitizer report is a bug.
//
// Limits tighter than the server's (input size, GrammarLimits) keep every input fast without
// changing what is reachable.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/grammar.h"
#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/matcher.h"
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
  try {
    switch (data[0] % 6) {
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
    }
  } catch (const g::GrammarError&) {
    return 0;
  } catch (const std::exception& e) {
    bug("an exception other than GrammarError", e.what());
  }

  try {
    const std::string_view subject = data[0] % 6 >= 4 ? rest : text;
    match(grammar, subject);
    drive(std::make_shared<const g::CompiledGrammar>(grammar, vocab), subject);
  } catch (const g::GrammarError&) {
    // The automaton's limits (too ambiguous, nested too deep): a refusal, not a crash.
  } catch (const std::exception& e) {
    bug("an exception other than GrammarError", e.what());
  }
  return 0;
}
