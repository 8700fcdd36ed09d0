// JSON Schema `pattern` keywords (ECMA-262 regular expressions) compiled to grammar expressions.
//
// The subset that is a context-free (in fact regular) language: literals, `.`, classes [...] with
// ranges and negation, the escapes \d \D \w \W \s \S \t \n \r \f \v \0 \cX \xHH \uHHHH \u{H...}
// and escaped punctuation, groups ( ) (?: ) (?<name> ), alternation, and the quantifiers
// * + ? {n} {n,} {n,m} (lazy forms match the same language). Characters are Unicode code points.
// Anchors: as in JSON Schema, a pattern is not anchored; `^` at the start and `$` at the end of a
// top-level alternative anchor it, anywhere else they are refused. Refused with a GrammarError that
// names the construct and its byte offset: backreferences, lookaround, \b \B, \p{...}, inline flags,
// groups nested deeper than 64, counts above 10000, more than 4096 class members in all, and
// malformed patterns. Like ECMA-262 Annex B, a `{` that starts no quantifier, a lone `]` or `}`, and
// a `-` next to a class escape in [...] ([\w-.]) are literal characters.
#pragma once

#include <string_view>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// The strings that contain a match of `pattern` (UTF-8), or that are one, where anchored. With
// `json_escaped` the expression describes those strings as written inside a JSON string literal
// (without the quotes): `"`, `\` and U+0000..U+001F as their escapes (\" \\ \b \f \n \r \t, or
// \u00XX in either case), every other character literally. Throws GrammarError.
Expr regex_to_expr(std::string_view pattern, bool json_escaped);

}  // namespace engine::grammar
