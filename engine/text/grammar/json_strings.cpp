// JSON value, string, number and format rules (see json_strings.h). Compact: no whitespace.
#include "engine/text/grammar/json_strings.h"

#include "engine/text/tokenizer/utf8.h"

namespace engine::grammar {

namespace {

CharClass chars(std::string_view set) {
  CharClass c;
  for (unsigned char ch : set) c.add(ch, ch);
  return c;
}
Expr digit() { return cls(CharClass::range('0', '9')); }
Expr hex() { return cls(CharClass::range('0', '9').add('a', 'f').add('A', 'F')); }
Expr digits(uint32_t n) { return repeat(digit(), n, n); }
// Characters that may appear unescaped in a JSON string.
CharClass plain_string_chars() { return CharClass().add(0, 0x1F).add('"', '"').add('\\', '\\').complement(); }
Expr host_label() {
  Expr alnum = plus(cls(CharClass::range('a', 'z').add('A', 'Z').add('0', '9')));
  return seq({alnum, star(seq({plus(lit("-")), alnum}))});
}

}  // namespace

uint32_t JsonRules::once(const std::string& name, Expr (JsonRules::*make)()) {
  if (auto it = made_.find(name); it != made_.end()) return it->second;
  const uint32_t r = b_.fresh_rule(name);
  made_[name] = r;  // before defining: recursive rules refer to themselves
  b_.define(r, (this->*make)());
  return r;
}

uint32_t JsonRules::value() { return once("value", &JsonRules::make_value); }
uint32_t JsonRules::object() { return once("object", &JsonRules::make_object); }
uint32_t JsonRules::array() { return once("array", &JsonRules::make_array); }
uint32_t JsonRules::string() { return once("string", &JsonRules::make_string); }
uint32_t JsonRules::string_char() { return once("string-char", &JsonRules::make_string_char); }
uint32_t JsonRules::escape() { return once("escape", &JsonRules::make_escape); }
uint32_t JsonRules::number() { return once("number", &JsonRules::make_number); }
uint32_t JsonRules::integer() { return once("integer", &JsonRules::make_integer); }

Expr JsonRules::make_value() {
  return alt({ref(object()), ref(array()), ref(string()), ref(number()), lit("true"), lit("false"), lit("null")});
}

Expr JsonRules::make_object() {
  Expr member = seq({ref(string()), lit(":"), ref(value())});
  return seq({lit("{"), opt(seq({member, star(seq({lit(","), member}))})), lit("}")});
}

Expr JsonRules::make_array() {
  return seq({lit("["), opt(seq({ref(value()), star(seq({lit(","), ref(value())}))})), lit("]")});
}

// "\"" body, body ::= plain* tail, tail ::= "\"" | "\\" escape body: the plain characters are one
// looping element, so a token of ordinary text is decided without leaving the rule.
Expr JsonRules::make_string() {
  const uint32_t body = b_.fresh_rule("string-body"), tail = b_.fresh_rule("string-tail");
  b_.define(body, seq({star(cls(plain_string_chars())), ref(tail)}));
  b_.define(tail, alt({lit("\""), seq({lit("\\"), ref(escape()), ref(body)})}));
  body_ = body;
  return seq({lit("\""), ref(body)});
}

uint32_t JsonRules::bounded_string(uint32_t min, uint32_t max) {
  const std::string key = "string{" + std::to_string(min) + "," + std::to_string(max) + "}";
  if (auto it = made_.find(key); it != made_.end()) return it->second;
  const uint32_t last = max == Expr::kUnbounded ? min : max;
  std::vector<uint32_t> chain(last + 1);
  for (uint32_t& r : chain) r = b_.fresh_rule("chars");
  for (uint32_t k = 0; k <= last; ++k) {
    if (k == last) {
      if (max == Expr::kUnbounded) {
        string();  // defines body_
        b_.define(chain[k], ref(body_));
      } else {
        b_.define(chain[k], lit("\""));
      }
      break;
    }
    std::vector<Expr> alts;
    if (k >= min) alts.push_back(lit("\""));
    alts.push_back(seq({cls(plain_string_chars()), ref(chain[k + 1])}));
    alts.push_back(seq({lit("\\"), ref(escape()), ref(chain[k + 1])}));
    b_.define(chain[k], alt(std::move(alts)));
  }
  const uint32_t r = b_.fresh_rule(key);
  b_.define(r, seq({lit("\""), ref(chain[0])}));
  made_[key] = r;
  return r;
}

Expr JsonRules::make_string_char() { return alt({cls(plain_string_chars()), seq({lit("\\"), ref(escape())})}); }

// What follows a backslash. \u escapes of surrogates are not produced (a lone one is invalid JSON
// text for strict parsers).
Expr JsonRules::make_escape() {
  Expr non_surrogate_hex4 = alt({seq({cls(CharClass::range('0', '9').add('a', 'c').add('A', 'C')), hex(), hex(), hex()}),
                                 seq({cls(chars("dD")), cls(CharClass::range('0', '7')), hex(), hex()}),
                                 seq({cls(chars("efEF")), hex(), hex(), hex()})});
  return alt({cls(chars("\"\\/bfnrt")), seq({lit("u"), std::move(non_surrogate_hex4)})});
}

Expr JsonRules::make_number() {
  // Exponents of at most two digits: every value then fits a double (1e400 is valid JSON that
  // JavaScript, Python and most parsers turn into infinity or an error).
  return seq({ref(integer()), opt(seq({lit("."), plus(digit())})),
              opt(seq({cls(chars("eE")), opt(cls(chars("+-"))), repeat(digit(), 1, 2)}))});
}

Expr JsonRules::make_integer() {
  return seq({opt(lit("-")), alt({lit("0"), seq({cls(CharClass::range('1', '9')), star(digit())})})});
}

uint32_t JsonRules::key_except(const std::vector<std::string>& names) {
  if (names.empty()) return string();
  // A trie of the names by code point; K(node) ::= ["\"" if node is not a name] | cp K(child) ...
  //                                               | (a character leading to no child) plain* "\"".
  struct Node {
    std::map<uint32_t, size_t> children;
    bool is_name = false;
  };
  std::vector<Node> trie(1);
  for (const std::string& name : names) {
    size_t at = 0, i = 0;
    uint32_t cp = 0;
    while (i < name.size() && tokenizer::decode_utf8(name, i, cp)) {
      auto it = trie[at].children.find(cp);
      if (it == trie[at].children.end()) {
        trie.emplace_back();
        it = trie[at].children.emplace(cp, trie.size() - 1).first;
      }
      at = it->second;
    }
    trie[at].is_name = true;
  }
  std::vector<uint32_t> rules(trie.size());
  for (size_t n = 0; n < trie.size(); ++n) rules[n] = b_.fresh_rule("key");
  const CharClass plain = plain_string_chars();
  for (size_t n = 0; n < trie.size(); ++n) {
    std::vector<Expr> alts;
    if (!trie[n].is_name) alts.push_back(lit("\""));
    CharClass others = plain;
    for (const auto& [cp, child] : trie[n].children) {
      std::string ch;
      tokenizer::append_utf8(ch, cp);
      if (plain.contains(cp)) alts.push_back(seq({lit(ch), ref(rules[child])}));
      others = others.complement().add(cp, cp).complement();
    }
    alts.push_back(seq({cls(others), star(cls(plain)), lit("\"")}));
    b_.define(rules[n], alt(std::move(alts)));
  }
  const uint32_t key = b_.fresh_rule("key-except");
  b_.define(key, seq({lit("\""), ref(rules[0])}));
  return key;
}

// Dates: months with their day counts, February 29th only in leap years.
Expr JsonRules::make_date() {
  Expr d28 = alt({seq({lit("0"), cls(CharClass::range('1', '9'))}), seq({lit("1"), digit()}), seq({lit("2"), cls(CharClass::range('0', '8'))})});
  Expr d30 = alt({seq({lit("0"), cls(CharClass::range('1', '9'))}), seq({cls(chars("12")), digit()}), lit("30")});
  Expr d31 = alt({seq({lit("0"), cls(CharClass::range('1', '9'))}), seq({cls(chars("12")), digit()}), lit("30"), lit("31")});
  Expr month_day = alt({seq({alt({lit("01"), lit("03"), lit("05"), lit("07"), lit("08"), lit("10"), lit("12")}), lit("-"), std::move(d31)}),
                        seq({alt({lit("04"), lit("06"), lit("09"), lit("11")}), lit("-"), std::move(d30)}),
                        seq({lit("02-"), std::move(d28)})});
  // February 29th in leap years: divisible by 4, and centuries only when divisible by 400.
  Expr multiple_of_4 = alt({seq({cls(chars("02468")), cls(chars("048"))}), seq({cls(chars("13579")), cls(chars("26"))})});
  Expr leap_year = alt({seq({digits(2), alt({seq({cls(chars("02468")), cls(chars("48"))}), seq({cls(chars("2468")), lit("0")}),
                                              seq({cls(chars("13579")), cls(chars("26"))})})}),
                        seq({std::move(multiple_of_4), lit("00")})});
  return alt({seq({digits(4), lit("-"), std::move(month_day)}), seq({std::move(leap_year), lit("-02-29")})});
}

Expr JsonRules::make_time() {
  Expr hour = alt({seq({cls(chars("01")), digit()}), seq({lit("2"), cls(CharClass::range('0', '3'))})});
  Expr minute = seq({cls(CharClass::range('0', '5')), digit()});
  Expr offset = alt({lit("Z"), seq({cls(chars("+-")), hour, lit(":"), minute})});
  return seq({hour, lit(":"), minute, lit(":"), minute, opt(seq({lit("."), repeat(digit(), 1, 9)})), std::move(offset)});
}

Expr JsonRules::make_email() {
  Expr atom = plus(cls(CharClass::range('a', 'z').add('A', 'Z').add('0', '9').add(chars("!#$%&'*+/=?^_`{|}~-"))));
  return seq({atom, star(seq({lit("."), atom})), lit("@"), host_label(), plus(seq({lit("."), host_label()}))});
}

Expr JsonRules::make_hostname() { return seq({host_label(), star(seq({lit("."), host_label()}))}); }

Expr JsonRules::make_ipv4() {
  Expr octet = alt({seq({lit("25"), cls(CharClass::range('0', '5'))}), seq({lit("2"), cls(CharClass::range('0', '4')), digit()}),
                    seq({lit("1"), digit(), digit()}), seq({cls(CharClass::range('1', '9')), digit()}), digit()});
  return seq({octet, lit("."), octet, lit("."), octet, lit("."), octet});
}

std::optional<Expr> JsonRules::format(const std::string& name) {
  if (name == "date") return ref(once("date", &JsonRules::make_date));
  if (name == "time") return ref(once("time", &JsonRules::make_time));
  if (name == "date-time") return seq({ref(once("date", &JsonRules::make_date)), lit("T"), ref(once("time", &JsonRules::make_time))});
  if (name == "uuid") return seq({repeat(hex(), 8, 8), lit("-"), repeat(hex(), 4, 4), lit("-"), repeat(hex(), 4, 4), lit("-"),
                                  repeat(hex(), 4, 4), lit("-"), repeat(hex(), 12, 12)});
  if (name == "email") return ref(once("email", &JsonRules::make_email));
  if (name == "hostname") return ref(once("hostname", &JsonRules::make_hostname));
  if (name == "ipv4") return ref(once("ipv4", &JsonRules::make_ipv4));
  if (name == "uri") {
    Expr scheme = seq({cls(CharClass::range('a', 'z').add('A', 'Z')), star(cls(CharClass::range('a', 'z').add('A', 'Z').add('0', '9').add(chars("+.-"))))});
    Expr path = star(seq({lit("/"), star(cls(CharClass::range('a', 'z').add('A', 'Z').add('0', '9').add(chars("._~%!$&'()*+,;=:@-"))))}));
    return seq({std::move(scheme), lit("://"), ref(once("hostname", &JsonRules::make_hostname)), std::move(path)});
  }
  return std::nullopt;
}

}  // namespace engine::grammar
