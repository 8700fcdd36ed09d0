// Bounded numbers as grammars, by digit-string comparison (see number_ranges.h).
//
// A non-negative number is an integer part I and fraction digits R ("I" or "I.R"). Its value lies
// in [a, b] when I is strictly between the bounds' integer parts (any R), or equals one of them
// and R compares right against that bound's fraction. Each comparison ("same-length digit string
// >= s", "0.R <= 0.f", ...) is a small recursive language over digits. Negative numbers are a
// "-" and a magnitude in the mirrored range.
#include "engine/text/grammar/number_ranges.h"

#include <cctype>

namespace engine::grammar {

namespace {

const CharClass kDigit = CharClass::range('0', '9');

Expr digit() { return cls(kDigit); }
Expr digits_from(char lo, char hi) { return lo > hi ? cls(CharClass()) : cls(CharClass::range(lo, hi)); }
Expr nothing() { return cls(CharClass()); }
Expr fixed(size_t n) { return repeat(digit(), static_cast<uint32_t>(n), static_cast<uint32_t>(n)); }
bool all_zero(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

// Compares non-negative integer digit strings without leading zeros.
int cmp_int(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  return a.compare(b) < 0 ? -1 : (a == b ? 0 : 1);
}

// Compares fraction digit strings as 0.a vs 0.b.
int cmp_frac(std::string_view a, std::string_view b) {
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    const char x = i < a.size() ? a[i] : '0', y = i < b.size() ? b[i] : '0';
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

int cmp_magnitude(const Decimal& a, const Decimal& b) {
  const int c = cmp_int(a.int_digits, b.int_digits);
  return c != 0 ? c : cmp_frac(a.frac_digits, b.frac_digits);
}

int cmp(const Decimal& a, const Decimal& b) {
  const bool an = a.negative && !a.is_zero(), bn = b.negative && !b.is_zero();
  if (an != bn) return an ? -1 : 1;
  return an ? -cmp_magnitude(a, b) : cmp_magnitude(a, b);
}

std::string increment(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '9') {
      ++s[i];
      return s;
    }
    s[i] = '0';
  }
  return "1" + s;
}

// s - 1 for s >= 1.
std::string decrement(std::string s) {
  for (size_t i = s.size(); i-- > 0;) {
    if (s[i] != '0') {
      --s[i];
      break;
    }
    s[i] = '9';
  }
  const size_t nz = s.find_first_not_of('0');
  return nz == std::string::npos ? "0" : s.substr(nz);
}

// Digit strings of |s| digits that are >= s (<= s); the first digit at least `first_min`.
Expr ge_same(std::string_view s) {
  if (s.empty()) return empty();
  return alt({seq({digits_from(static_cast<char>(s[0] + 1), '9'), fixed(s.size() - 1)}),
              seq({lit(s.substr(0, 1)), ge_same(s.substr(1))})});
}

Expr le_same(std::string_view s, char first_min = '0') {
  if (s.empty()) return empty();
  return alt({seq({digits_from(first_min, static_cast<char>(s[0] - 1)), fixed(s.size() - 1)}),
              seq({lit(s.substr(0, 1)), le_same(s.substr(1))})});
}

Expr between_same(std::string_view lo, std::string_view hi) {
  size_t k = 0;
  while (k < lo.size() && lo[k] == hi[k]) ++k;
  if (k == lo.size()) return lit(lo);
  const size_t rest = lo.size() - k - 1;
  return seq({lit(lo.substr(0, k)),
              alt({seq({lit(lo.substr(k, 1)), ge_same(lo.substr(k + 1))}),
                   seq({digits_from(static_cast<char>(lo[k] + 1), static_cast<char>(hi[k] - 1)), fixed(rest)}),
                   seq({lit(hi.substr(k, 1)), le_same(hi.substr(k + 1))})})});
}

// Integers (no leading zeros) in [lo, hi]; hi empty: unbounded.
Expr uint_range(const std::string& lo, const std::optional<std::string>& hi) {
  const size_t n = lo.size();
  if (!hi) return alt({ge_same(lo), seq({digits_from('1', '9'), fixed(n), star(digit())})});
  if (cmp_int(lo, *hi) > 0) return nothing();
  if (hi->size() == n) return between_same(lo, *hi);
  std::vector<Expr> alts{ge_same(lo)};
  for (size_t len = n + 1; len < hi->size(); ++len) alts.push_back(seq({digits_from('1', '9'), fixed(len - 1)}));
  alts.push_back(le_same(*hi, '1'));
  return alt(std::move(alts));
}

// Fraction digits R with 0.R >= 0.f (> when strict); at least one digit when `nonempty`.
Expr frac_ge(std::string_view f, bool strict, bool nonempty) {
  if (all_zero(f)) {
    if (strict) return seq({star(digit()), digits_from('1', '9'), star(digit())});
    return nonempty ? plus(digit()) : star(digit());
  }
  return alt({seq({digits_from(static_cast<char>(f[0] + 1), '9'), star(digit())}),
              seq({lit(f.substr(0, 1)), frac_ge(f.substr(1), strict, false)})});
}

// Fraction digits R with 0.R <= 0.f (< when strict).
Expr frac_le(std::string_view f, bool strict, bool nonempty) {
  if (all_zero(f)) {
    if (strict) return nothing();
    return nonempty ? plus(cls(CharClass::of('0'))) : star(cls(CharClass::of('0')));
  }
  return alt({nonempty ? nothing() : empty(),
              seq({digits_from('0', static_cast<char>(f[0] - 1)), star(digit())}),
              seq({lit(f.substr(0, 1)), frac_le(f.substr(1), strict, false)})});
}

// Fraction digits R with lo <= 0.R <= hi (strictness per side), where 0.lo < 0.hi.
Expr frac_between(std::string_view lo, bool lo_strict, std::string_view hi, bool hi_strict, bool nonempty) {
  size_t k = 0;
  while ((k < lo.size() ? lo[k] : '0') == (k < hi.size() ? hi[k] : '0')) ++k;  // they differ somewhere
  const std::string prefix(hi.substr(0, k));  // k < hi.size(): beyond hi's digits, lo would be larger
  const char dl = k < lo.size() ? lo[k] : '0', dh = hi[k];
  std::vector<Expr> alts;
  // R = lo followed by zeros, shorter than the point where the bounds differ: equal to lo.
  for (size_t j = std::max<size_t>(lo.size(), nonempty ? 1 : 0); j <= k && !lo_strict; ++j) alts.push_back(lit(prefix.substr(0, j)));
  const std::string_view lo_rest = k + 1 < lo.size() ? lo.substr(k + 1) : std::string_view();
  const std::string_view hi_rest = k + 1 < hi.size() ? hi.substr(k + 1) : std::string_view();
  alts.push_back(seq({lit(prefix), lit(std::string(1, dl)), frac_ge(lo_rest, lo_strict, false)}));
  alts.push_back(seq({lit(prefix), digits_from(static_cast<char>(dl + 1), static_cast<char>(dh - 1)), star(digit())}));
  alts.push_back(seq({lit(prefix), lit(std::string(1, dh)), frac_le(hi_rest, hi_strict, false)}));
  return alt(std::move(alts));
}

// "" or "." R, given the language of R with and without at least one digit.
template <typename F>
Expr fraction_clause(bool empty_ok, F&& nonempty_lang) {
  return alt({empty_ok ? empty() : nothing(), seq({lit("."), nonempty_lang()})});
}

Expr any_fraction() { return opt(seq({lit("."), plus(digit())})); }

// Non-negative numbers in [a, b] (b absent: unbounded).
Expr magnitude(const Bound& a, const std::optional<Bound>& b, bool integer) {
  const Decimal& lo = a.value;
  if (integer) {
    std::string lo_int = lo.frac_digits.empty() && !a.exclusive ? lo.int_digits : increment(lo.int_digits);
    std::optional<std::string> hi_int;
    if (b) {
      const Decimal& hi = b->value;
      if (!hi.frac_digits.empty() || !b->exclusive) {
        hi_int = hi.int_digits;
      } else if (hi.int_digits == "0") {
        return nothing();
      } else {
        hi_int = decrement(hi.int_digits);
      }
    }
    return uint_range(lo_int, hi_int);
  }
  const std::string& A = lo.int_digits;
  const std::string_view af = lo.frac_digits;
  auto from_a = [&] {
    return seq({lit(A), fraction_clause(af.empty() && !a.exclusive, [&] { return frac_ge(af, a.exclusive, true); })});
  };
  if (!b) return alt({from_a(), seq({uint_range(increment(A), std::nullopt), any_fraction()})});
  const std::string& B = b->value.int_digits;
  const std::string_view bf = b->value.frac_digits;
  const int c = cmp_int(A, B);
  if (c > 0) return nothing();
  if (c == 0) {
    const int f = cmp_frac(af, bf);
    if (f > 0 || (f == 0 && (a.exclusive || b->exclusive))) return nothing();
    if (f == 0) {  // exactly one value: A.af, with any number of trailing zeros
      const Expr zero = cls(CharClass::of('0'));
      return seq({lit(A), fraction_clause(af.empty(), [&] {
                    return af.empty() ? plus(zero) : seq({lit(std::string(af)), star(zero)});
                  })});
    }
    return seq({lit(A), fraction_clause(af.empty() && !a.exclusive, [&] { return frac_between(af, a.exclusive, bf, b->exclusive, true); })});
  }
  std::vector<Expr> alts{from_a()};
  const std::string next = increment(A);
  if (cmp_int(next, B) < 0) alts.push_back(seq({uint_range(next, decrement(B)), any_fraction()}));
  alts.push_back(seq({lit(B), fraction_clause(!(bf.empty() && b->exclusive), [&] { return frac_le(bf, b->exclusive, true); })}));
  return alt(std::move(alts));
}

}  // namespace

std::optional<Decimal> Decimal::parse(std::string_view s) {
  Decimal d;
  size_t i = 0;
  if (i < s.size() && s[i] == '-') d.negative = true, ++i;
  std::string digits;
  long point = -1;
  for (; i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.'); ++i) {
    if (s[i] == '.') {
      if (point >= 0) return std::nullopt;
      point = static_cast<long>(digits.size());
    } else {
      digits += s[i];
    }
  }
  if (digits.empty() || digits.size() > 400) return std::nullopt;
  if (point < 0) point = static_cast<long>(digits.size());
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool neg = false;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) neg = s[i++] == '-';
    long e = 0;
    for (; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
      e = e * 10 + (s[i] - '0');
      if (e > 400) return std::nullopt;
    }
    point += neg ? -e : e;
  }
  if (i != s.size()) return std::nullopt;
  // Place the point: pad with zeros on either side as needed.
  if (point < 0) digits.insert(0, static_cast<size_t>(-point), '0'), point = 0;
  if (point > static_cast<long>(digits.size())) digits.append(static_cast<size_t>(point) - digits.size(), '0');
  std::string int_part = digits.substr(0, static_cast<size_t>(point));
  std::string frac = digits.substr(static_cast<size_t>(point));
  const size_t nz = int_part.find_first_not_of('0');
  d.int_digits = nz == std::string::npos ? "0" : int_part.substr(nz);
  while (!frac.empty() && frac.back() == '0') frac.pop_back();
  d.frac_digits = frac;
  return d;
}

int compare(const Decimal& a, const Decimal& b) { return cmp(a, b); }

Expr number_in_range(const std::optional<Bound>& lo, const std::optional<Bound>& hi, bool integer) {
  if (lo && hi) {
    const int c = cmp(lo->value, hi->value);
    if (c > 0 || (c == 0 && (lo->exclusive || hi->exclusive))) return nothing();
  }
  const bool lo_negative = !lo || (lo->value.negative && !lo->value.is_zero());
  const bool hi_nonneg = !hi || !(hi->value.negative && !hi->value.is_zero());
  std::vector<Expr> alts;
  // x >= 0 part: [max(lo, 0), hi].
  if (hi_nonneg && !(hi && hi->value.is_zero() && hi->exclusive)) {
    const Bound from = lo_negative ? Bound{Decimal{}, false} : *lo;
    alts.push_back(magnitude(from, hi, integer));
  }
  // x < 0 part: "-" and a magnitude in (max(-hi, 0), -lo]; never "-0".
  if (lo_negative) {
    Bound from{Decimal{}, true};
    if (!hi_nonneg) from = Bound{Decimal{false, hi->value.int_digits, hi->value.frac_digits}, hi->exclusive};
    std::optional<Bound> to;
    if (lo) to = Bound{Decimal{false, lo->value.int_digits, lo->value.frac_digits}, lo->exclusive};
    alts.push_back(seq({lit("-"), magnitude(from, to, integer)}));
  }
  return alts.empty() ? nothing() : alt(std::move(alts));
}

std::optional<MultipleOfDfa> MultipleOfDfa::make(const Decimal& m, uint64_t max_states) {
  const std::string digits = m.int_digits + m.frac_digits;
  const size_t nz = digits.find_first_not_of('0');
  if (m.negative || nz == std::string::npos || digits.size() - nz > 9) return std::nullopt;
  const uint64_t p = std::stoull(digits.substr(nz));
  const uint64_t q = m.frac_digits.size();
  if (p * (q + 2) > max_states) return std::nullopt;
  return MultipleOfDfa(static_cast<uint32_t>(p), static_cast<uint32_t>(q));
}

void MultipleOfDfa::split(uint32_t state, const CharClass& c, std::vector<std::pair<CharClass, uint32_t>>& out) const {
  const uint32_t width = q_ + 2, r = state / width, f = state % width;
  const size_t first = out.size();
  auto add = [&](uint32_t cp, uint32_t to) {
    for (size_t i = first; i < out.size(); ++i) {
      if (out[i].second == to) {
        out[i].first.add(cp, cp);
        return;
      }
    }
    out.emplace_back(CharClass::of(cp), to);
  };
  if (f == 0 && r == 0 && c.contains('-')) add('-', state);
  if (f == 0 && c.contains('.')) add('.', r * width + 1);
  for (uint32_t d = 0; d <= 9; ++d) {
    if (!c.contains('0' + d)) continue;
    const uint32_t next = static_cast<uint32_t>((uint64_t{r} * 10 + d) % p_);
    if (f == 0) add('0' + d, next * width);
    else if (f <= q_) add('0' + d, next * width + f + 1);
    else if (d == 0) add('0', state);  // past q digits, only zeros keep the value a multiple
  }
}

bool MultipleOfDfa::accepting(uint32_t state) const {
  const uint32_t width = q_ + 2, f = state % width;
  uint64_t r = state / width;
  // The digits read stand for x * 10^(read fraction digits); scale to x * 10^q.
  for (uint32_t k = f == 0 ? 0 : f - 1; k < q_; ++k) r = r * 10 % p_;
  return r == 0;
}

}  // namespace engine::grammar
