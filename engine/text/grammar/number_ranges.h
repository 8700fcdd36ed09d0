// Grammars for JSON numbers within bounds (JSON Schema minimum / maximum / exclusiveMinimum /
// exclusiveMaximum), exact for any bound: the comparisons are done on decimal digit strings, so
// 1e30 or 0.1 need no floating point and every accepted text lies within the bounds.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "engine/text/grammar/grammar.h"
#include "engine/text/grammar/intersect.h"

namespace engine::grammar {

// A decimal bound: sign, integer digits without leading zeros ("0" for zero), fraction digits
// without trailing zeros.
struct Decimal {
  bool negative = false;
  std::string int_digits = "0";
  std::string frac_digits;
  // Parses a JSON number text ("-12.5e3", "1e-07"); nullopt when it is not one or is too long.
  static std::optional<Decimal> parse(std::string_view json_number);
  bool is_zero() const { return int_digits == "0" && frac_digits.empty(); }
};

// Compares by value: negative, zero or positive as a < b, a == b, a > b (-0 equals 0).
int compare(const Decimal& a, const Decimal& b);

struct Bound {
  Decimal value;
  bool exclusive = false;
};

// A JSON integer (integer = true: no fraction, no exponent) or number (an optional fraction; no
// exponent when bounded) within [lo, hi]; an absent side is unbounded. Compact: no "+", no
// leading zeros. Returns a class that matches nothing when the range is empty.
Expr number_in_range(const std::optional<Bound>& lo, const std::optional<Bound>& hi, bool integer);

// Accepts the JSON numbers without exponent ("-12", "0.75") that are multiples of a positive
// decimal m = p / 10^q: those whose digits, read as x * 10^q, leave no remainder mod p. State:
// the remainder so far and how many fraction digits were read (past q, only zeros may follow).
// Intersected with number_in_range() (intersect.h), it enforces multipleOf within bounds.
class MultipleOfDfa : public Dfa {
 public:
  // nullopt when m is not positive or p * (q + 2) (the number of states) exceeds max_states.
  static std::optional<MultipleOfDfa> make(const Decimal& m, uint64_t max_states);
  uint32_t start() const override { return 0; }
  void split(uint32_t state, const CharClass& c, std::vector<std::pair<CharClass, uint32_t>>& out) const override;
  bool accepting(uint32_t state) const override;

 private:
  MultipleOfDfa(uint32_t p, uint32_t q) : p_(p), q_(q) {}
  // state = remainder * (q + 2) + f, f = 0 in the integer part, 1 + fraction digits read after it.
  uint32_t p_, q_;
};

}  // namespace engine::grammar
