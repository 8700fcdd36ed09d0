#include "engine/text/jinja/parser.h"

#include <algorithm>

#include "engine/text/jinja/error.h"

namespace engine::jinja {

std::unique_ptr<Template> parse_template(std::string_view source, const LexerOptions& options) {
  auto tmpl = std::make_unique<Template>();
  tmpl->source = normalize_source(source);
  Parser parser(tmpl->source, tokenize(tmpl->source, options));
  tmpl->body = parser.parse_root();
  return tmpl;
}

// ---- Token stream -------------------------------------------------------------------------

const Token& Parser::peek(size_t ahead) const {
  return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
}

bool Parser::is_op(std::string_view op) const {
  return current().type == TokenKind::kOperator && current().text == op;
}

bool Parser::is_name(std::string_view name) const {
  return current().type == TokenKind::kName && current().text == name;
}

bool Parser::skip_op(std::string_view op) {
  if (!is_op(op)) return false;
  advance();
  return true;
}

bool Parser::skip_name(std::string_view name) {
  if (!is_name(name)) return false;
  advance();
  return true;
}

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) fail("expected '" + std::string(op) + "', got " + describe_current());
}

void Parser::expect_name(std::string_view name) {
  if (!skip_name(name)) fail("expected '" + std::string(name) + "', got " + describe_current());
}

std::string Parser::expect_identifier() {
  if (current().type != TokenKind::kName) fail("expected a name, got " + describe_current());
  return advance().text;
}

void Parser::expect(TokenKind type) {
  if (current().type == type) {
    advance();
    return;
  }
  switch (type) {
    case TokenKind::kBlockEnd:
      fail("expected end of statement block ('%}'), got " + describe_current());
    case TokenKind::kVariableEnd:
      fail("expected end of print statement ('}}'), got " + describe_current());
    default: fail("unexpected " + describe_current());
  }
}

std::string Parser::describe_current() const {
  const Token& t = current();
  switch (t.type) {
    case TokenKind::kData: return "template text";
    case TokenKind::kVariableBegin: return "'{{'";
    case TokenKind::kVariableEnd: return "end of print statement";
    case TokenKind::kBlockBegin: return "'{%'";
    case TokenKind::kBlockEnd: return "end of statement block";
    case TokenKind::kName: return "'" + t.text + "'";
    case TokenKind::kString: return "string literal";
    case TokenKind::kInteger:
    case TokenKind::kFloat: return "number '" + t.text + "'";
    case TokenKind::kOperator: return "'" + t.text + "'";
    case TokenKind::kEnd: return "end of template";
  }
  return "token";
}

void Parser::fail(const std::string& message) const { fail_at(message, current().offset); }

void Parser::fail_at(const std::string& message, uint32_t offset) const {
  auto [line, column] = line_column(source_, offset);
  throw TemplateError(message, line, column);
}

// ---- Bodies -------------------------------------------------------------------------------

Body Parser::parse_root() {
  Body body = parse_body({});
  if (current().type != TokenKind::kEnd) fail("unexpected " + describe_current());
  return body;
}

// Statements up to (not including) a block tag named in end_tags; its name is left current.
Body Parser::parse_body(const std::vector<std::string_view>& end_tags) {
  if (++block_depth_ > kMaxBlockDepth) {
    fail("blocks nested deeper than " + std::to_string(kMaxBlockDepth) + " levels");
  }
  const std::vector<std::string_view>* saved_end_tags = end_tags_;
  end_tags_ = &end_tags;
  Body body;
  while (true) {
    const Token& t = current();
    if (t.type == TokenKind::kEnd) {
      if (end_tags.empty()) break;
      fail("unexpected end of template, expected " + describe_end_tags());
    }
    if (t.type == TokenKind::kData) {
      body.push_back(std::make_unique<TextStmt>(t.offset, t.text));
      advance();
    } else if (t.type == TokenKind::kVariableBegin) {
      advance();
      ExprPtr e = parse_tuple(true);
      expect(TokenKind::kVariableEnd);
      body.push_back(std::make_unique<OutputStmt>(t.offset, std::move(e)));
    } else if (t.type == TokenKind::kBlockBegin) {
      const Token& name = peek();
      if (name.type == TokenKind::kName &&
          std::find(end_tags.begin(), end_tags.end(), name.text) != end_tags.end()) {
        advance();
        break;
      }
      advance();
      body.push_back(parse_statement());
      expect(TokenKind::kBlockEnd);
    } else {
      fail("unexpected " + describe_current());
    }
  }
  --block_depth_;
  end_tags_ = saved_end_tags;
  return body;
}

std::string Parser::describe_end_tags() const {
  std::string expected;
  for (std::string_view tag : *end_tags_) {
    expected += (expected.empty() ? "'" : " or '") + std::string(tag) + "'";
  }
  return expected;
}

// After a block's opening tag: expects its "%}", then the body up to one of end_tags.
Body Parser::parse_block_body(const std::vector<std::string_view>& end_tags) {
  expect(TokenKind::kBlockEnd);
  return parse_body(end_tags);
}

StmtPtr Parser::parse_statement() {
  const Token& t = current();
  const uint32_t offset = t.offset;
  if (t.type != TokenKind::kName) fail("expected a statement name, got " + describe_current());
  const std::string tag = advance().text;
  if (tag == "if") return parse_if(offset);
  if (tag == "for") return parse_for(offset);
  if (tag == "set") return parse_set(offset);
  if (tag == "macro") return parse_macro(offset);
  if (tag == "call") return parse_call_block(offset);
  if (tag == "filter") return parse_filter_block(offset);
  if (tag == "with") return parse_with(offset);
  if (tag == "do") return std::make_unique<DoStmt>(offset, parse_tuple(true));
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) fail_at("'" + tag + "' outside of a loop", offset);
    return std::make_unique<LoopControlStmt>(
        tag == "break" ? StmtKind::kBreak : StmtKind::kContinue, offset);
  }
  if (tag == "generation") {
    auto block = std::make_unique<PlainBlockStmt>(offset);
    block->body = parse_block_body({"endgeneration"});
    expect_name("endgeneration");
    return block;
  }
  if (tag == "block" || tag == "extends" || tag == "include" || tag == "import" || tag == "from" ||
      tag == "autoescape" || tag == "trans") {
    fail_at("unsupported tag '" + tag + "'", offset);
  }
  if (!end_tags_->empty()) {
    fail_at("unknown tag '" + tag + "', expected " + describe_end_tags(), offset);
  }
  fail_at("unknown tag '" + tag + "'", offset);
}

StmtPtr Parser::parse_if(uint32_t offset) {
  auto stmt = std::make_unique<IfStmt>(offset);
  while (true) {
    ExprPtr condition = parse_tuple(false);
    Body body = parse_block_body({"elif", "else", "endif"});
    stmt->branches.emplace_back(std::move(condition), std::move(body));
    const std::string tag = advance().text;
    if (tag == "elif") continue;
    if (tag == "else") {
      stmt->else_body = parse_block_body({"endif"});
      advance();
    }
    return stmt;
  }
}

StmtPtr Parser::parse_for(uint32_t offset) {
  auto stmt = std::make_unique<ForStmt>(offset);
  stmt->target = parse_assign_target(false);
  expect_name("in");
  stmt->iterable = parse_tuple(false);
  if (skip_name("if")) stmt->filter = parse_expression(true);
  if (is_name("recursive")) fail("recursive loops are not supported");
  ++loop_depth_;
  stmt->body = parse_block_body({"endfor", "else"});
  --loop_depth_;
  if (advance().text == "else") {
    stmt->else_body = parse_block_body({"endfor"});
    advance();
  }
  return stmt;
}

StmtPtr Parser::parse_set(uint32_t offset) {
  AssignTarget target = parse_assign_target(true);
  if (skip_op("=")) {
    auto stmt = std::make_unique<SetStmt>(offset);
    stmt->target = std::move(target);
    stmt->value = parse_tuple(true);
    return stmt;
  }
  auto stmt = std::make_unique<SetBlockStmt>(offset);
  stmt->target = std::move(target);
  if (skip_op("|")) stmt->filters = parse_filter_chain();
  stmt->body = parse_block_body({"endset"});
  advance();
  return stmt;
}

StmtPtr Parser::parse_macro(uint32_t offset) {
  auto stmt = std::make_unique<MacroStmt>(offset);
  stmt->name = expect_identifier();
  stmt->params = parse_parameters();
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;  // a macro body is not inside the caller's loop
  stmt->body = parse_block_body({"endmacro"});
  loop_depth_ = saved_loops;
  advance();
  return stmt;
}

StmtPtr Parser::parse_call_block(uint32_t offset) {
  auto stmt = std::make_unique<CallBlockStmt>(offset);
  if (is_op("(")) stmt->caller_params = parse_parameters();
  stmt->call = parse_expression(true);
  if (stmt->call->kind != ExprKind::kCall) fail_at("expected a macro call", stmt->call->offset);
  const int saved_loops = loop_depth_;
  loop_depth_ = 0;
  stmt->body = parse_block_body({"endcall"});
  loop_depth_ = saved_loops;
  advance();
  return stmt;
}

StmtPtr Parser::parse_filter_block(uint32_t offset) {
  auto stmt = std::make_unique<FilterBlockStmt>(offset);
  stmt->filters = parse_filter_chain();
  stmt->body = parse_block_body({"endfilter"});
  advance();
  return stmt;
}

StmtPtr Parser::parse_with(uint32_t offset) {
  auto stmt = std::make_unique<WithStmt>(offset);
  while (!(current().type == TokenKind::kBlockEnd)) {
    if (!stmt->assignments.empty()) expect_op(",");
    AssignTarget target = parse_assign_target(false);
    expect_op("=");
    stmt->assignments.emplace_back(std::move(target), parse_expression(true));
  }
  stmt->body = parse_block_body({"endwith"});
  advance();
  return stmt;
}

// name | name.attr (allow_attribute) | a, b | (a, b)
AssignTarget Parser::parse_assign_target(bool allow_attribute) {
  AssignTarget target;
  if (allow_attribute && current().type == TokenKind::kName &&
      peek().type == TokenKind::kOperator && peek().text == ".") {
    target.names.push_back(advance().text);
    advance();
    target.attribute = expect_identifier();
    return target;
  }
  const bool parens = skip_op("(");
  while (true) {
    target.names.push_back(expect_identifier());
    if (!skip_op(",")) break;
    target.is_tuple = true;
    if (current().type != TokenKind::kName) break;  // trailing comma
  }
  if (parens) expect_op(")");
  if (parens && target.names.size() > 1) target.is_tuple = true;
  for (const std::string& n : target.names) {
    if (n == "true" || n == "false" || n == "none" || n == "True" || n == "False" || n == "None") {
      fail("cannot assign to '" + n + "'");
    }
  }
  return target;
}

std::vector<Parameter> Parser::parse_parameters() {
  std::vector<Parameter> params;
  expect_op("(");
  while (!is_op(")")) {
    if (!params.empty()) expect_op(",");
    if (is_op(")")) break;
    Parameter p;
    p.name = expect_identifier();
    if (skip_op("=")) {
      p.default_value = parse_expression(true);
    } else if (!params.empty() && params.back().default_value) {
      fail("non-default parameter '" + p.name + "' follows a default parameter");
    }
    params.push_back(std::move(p));
  }
  expect_op(")");
  return params;
}

// The filters of {% filter f|g %} and {% set x | f %}: a FilterExpr chain over a null input.
ExprPtr Parser::parse_filter_chain() {
  ExprPtr chain = parse_filter(nullptr);
  while (skip_op("|")) chain = parse_filter(std::move(chain));
  return chain;
}

}  // namespace engine::jinja
