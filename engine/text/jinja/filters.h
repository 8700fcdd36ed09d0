// Internal: filter implementations shared between filters.cpp (dispatch, text and number
// filters) and filters_seq.cpp (filters over sequences and mappings).
#pragma once

#include <string_view>

#include "engine/text/jinja/eval.h"

namespace engine::jinja::filters {

using Filter = Value (*)(Interpreter& in, const Value& input, CallArgs& args);

// Sequence and mapping filters (filters_seq.cpp); nullptr if `name` is not one of them.
Filter find_sequence_filter(std::string_view name);

// The value a filter's `attribute=` argument picks from an item (identity when absent).
Value pick(Interpreter& in, const Value& item, const Value* attribute);

}  // namespace engine::jinja::filters
