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
// Accepts what llama.cpp accepts: rules `name ::= ...` (names [a-zA-Z0-9-]+, referenced before or
// after their definition), alternatives `|`, grouping `( )`, string literals "..." and classes
// [a-z] [^...] with the escapes \n \r \t \\ \" \[ \] \- \xHH \uHHHH \UHHHHHHHH, `.` (any code
// point), quantifiers * + ? {m} {m,} {m,n} (and {,n}), `#` comments. A line break ends a rule,
// except right after `::=` or `|` and inside parentheses. Refused: token literals (<...>,
// <[id]>, !<...>), empty or reversed classes, escapes that are not Unicode scalar values, invalid
// UTF-8 in literals and classes, a rule defined twice.
//
// Throws GrammarError. Errors at a place in the text read "GBNF line L, column C: ..." (column in
// code points, both from 1) and carry the byte offset; errors of the whole grammar (no root rule,
// left recursion, size limits) read "GBNF: ..." with no offset. Any input is safe: recursion is
// bounded by kMaxGbnfNesting, repetition counts by limits.max_repeat, the result by `limits`.
std::shared_ptr<const Grammar> parse_gbnf(std::string_view text, GrammarLimits limits = {});

}  // namespace engine::grammar
