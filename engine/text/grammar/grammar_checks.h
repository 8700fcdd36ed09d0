// The checks GrammarBuilder::build() runs on a lowered grammar (grammar_checks.cpp).
#pragma once

#include <functional>
#include <string>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// Refuses left recursion, then removes the alternatives that can never complete. `why(c)`: why
// the empty class c matches nothing ("" when unknown). Throws GrammarError.
void prune_and_check(Grammar& g, const std::function<std::string(uint32_t)>& why);

}  // namespace engine::grammar
