// Recursive-descent parser from tokens to the syntax tree (Jinja2 grammar and precedence).
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text/jinja/ast.h"
#include "engine/text/jinja/lexer.h"

namespace engine::jinja {

// Nesting limits that keep parsing, evaluation and tree destruction well inside the stack.
inline constexpr int kMaxExpressionDepth = 96;  // height of one expression tree
inline constexpr int kMaxBlockDepth = 48;       // nested {% if %}/{% for %}/... blocks

// Parses a template. Throws engine::TemplateError with the line/column of the first syntax
// error (or of an exceeded nesting limit).
std::unique_ptr<Template> parse_template(std::string_view source, const LexerOptions& options);

// The parser proper; internal to the jinja module (split over parser.cpp for statements and
// parser_expr.cpp for expressions). Single use, not thread-safe.
class Parser {
 public:
  Parser(std::string_view source, std::vector<Token> tokens)
      : source_(source), tokens_(std::move(tokens)) {}
  Body parse_root();

 private:
  // Token stream.
  const Token& current() const { return tokens_[pos_]; }
  const Token& peek(size_t ahead = 1) const;
  const Token& advance() { return tokens_[pos_ < tokens_.size() - 1 ? pos_++ : pos_]; }
  bool is_op(std::string_view op) const;
  bool is_name(std::string_view name) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  void expect_name(std::string_view name);
  std::string expect_identifier();
  void expect(TokenKind type);
  [[noreturn]] void fail(const std::string& message) const;
  [[noreturn]] void fail_at(const std::string& message, uint32_t offset) const;
  [[noreturn]] void fail_too_deep() const;
  std::string describe_current() const;

  // Statements (parser.cpp).
  Body parse_body(const std::vector<std::string_view>& end_tags);
  Body parse_block_body(const std::vector<std::string_view>& end_tags);
  std::string describe_end_tags() const;
  StmtPtr parse_statement();
  StmtPtr parse_if(uint32_t offset);
  StmtPtr parse_for(uint32_t offset);
  StmtPtr parse_set(uint32_t offset);
  StmtPtr parse_macro(uint32_t offset);
  StmtPtr parse_call_block(uint32_t offset);
  StmtPtr parse_filter_block(uint32_t offset);
  StmtPtr parse_with(uint32_t offset);
  AssignTarget parse_assign_target(bool allow_attribute);
  std::vector<Parameter> parse_parameters();
  ExprPtr parse_filter_chain();  // "name(args) | name ..." with a null innermost input

  // Expressions (parser_expr.cpp), lowest to highest precedence.
  ExprPtr parse_tuple(bool with_condexpr, bool explicit_parens = false);
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_binary_level(ExprPtr (Parser::*next)(),
                             std::initializer_list<std::pair<std::string_view, BinaryOp>> ops);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_unary_with_filters();
  ExprPtr parse_primary();
  ExprPtr parse_list(uint32_t offset);
  ExprPtr parse_dict(uint32_t offset);
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_filter_and_tests(ExprPtr node);
  ExprPtr parse_filter(ExprPtr input);
  ExprPtr parse_test(ExprPtr input);
  void parse_call_args(Arguments& args);
  // Record the height of a freshly built node and enforce kMaxExpressionDepth.
  ExprPtr with_height(ExprPtr node, int child_height);
  ExprPtr sized(ExprPtr node, std::initializer_list<const Expr*> children);
  static int height_of(const Arguments& args);

  std::string_view source_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  const std::vector<std::string_view>* end_tags_ = nullptr;  // of the innermost open block
  int block_depth_ = 0;
  int expr_depth_ = 0;  // recursion depth of the expression parser
  int loop_depth_ = 0;  // enclosing for-loops (break/continue are only valid inside one)
};

}  // namespace engine::jinja
