// GBNF, llama.cpp's grammar format (its grammars/README.md), compiled into a Grammar.
#pragma once

#include <memory>
#include <string_view>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// Parentheses, and quantifiers applied to quantified symbols, nest at most this deep.
inline constexpr int kMaxGbnfNesting = 128;

// Compiles GBNF text into a Grammar whose root is the rule named `root`.
//
// The syntax is llama.cpp's: rules `name ::= ...` (names [a-zA-Z0-9-]+, referenced before or
// after their definition), alternatives `|`, grouping `( )`, string literals "..." and classes
// [a-z] [^...] with the escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH, `.` (any code
// point), quantifiers * + ? {m} {m,} {m,n} (and {,n}, which llama.cpp lacks), `#` comments. A
// line break ends a rule, except right after `::=` or `|` and inside parentheses (a line that
// starts with `|` does not continue the rule before it). Refused, where llama.cpp is lenient:
// empty or reversed classes, escapes that are not Unicode scalar values, invalid UTF-8 in literals
// and classes, a rule defined twice. Refused altogether: token literals (<...>, <[id]>, !<...>).
//
// Throws GrammarError. Errors at a place in the text read "GBNF line L, column C: ..." (column in
// code points, both from 1) and carry the byte offset; errors of the whole grammar (no root rule,
// left recursion, limits met while lowering) read "GBNF: ..." with no offset.
//
// Any input is safe in time and memory: recursion is bounded by kMaxGbnfNesting, repetition
// counts by limits.max_repeat, the number of symbols, quantifiers and alternatives by
// limits.max_elements, a class by 1024 items (and the cost of all classes together), the result
// by `limits`.
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, GrammarLimits limits = {});

}  // namespace engine::grammar
