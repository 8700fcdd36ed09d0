// The building blocks of JSON grammars, each created once per grammar on first use: any value,
// object, array, string, number, integer, the string formats, and keys other than given names.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/text/grammar/grammar.h"

namespace engine::grammar {

// Rules inside one GrammarBuilder. Ownership: borrows the builder, which must outlive it.
class JsonRules {
 public:
  explicit JsonRules(GrammarBuilder& b) : b_(b) {}

  uint32_t value();
  uint32_t object();
  uint32_t array();
  uint32_t string();       // a whole string literal, quotes included
  uint32_t string_char();  // one character of a string's contents, escapes included
  // A whole string literal of min to max characters (max: Expr::kUnbounded), as a chain of rules
  // that each end in a tail call to the next, so a token of text stays inside one rule's walk.
  uint32_t bounded_string(uint32_t min, uint32_t max);
  uint32_t escape();       // what follows a backslash in a string
  uint32_t number();
  uint32_t integer();
  // A string literal that is none of `names` (written without escapes).
  uint32_t key_except(const std::vector<std::string>& names);
  // A string format's contents (no quotes), or nullopt for a format we do not know.
  std::optional<Expr> format(const std::string& name);

 private:
  uint32_t once(const std::string& name, Expr (JsonRules::*make)());
  Expr make_value();
  Expr make_object();
  Expr make_array();
  Expr make_string();
  Expr make_string_char();
  Expr make_escape();
  Expr make_number();
  Expr make_integer();
  Expr make_date();
  Expr make_time();
  Expr make_email();
  Expr make_hostname();
  Expr make_ipv4();

  GrammarBuilder& b_;
  std::map<std::string, uint32_t> made_;
  uint32_t body_ = 0;  // string(): the contents and closing quote
};

}  // namespace engine::grammar
