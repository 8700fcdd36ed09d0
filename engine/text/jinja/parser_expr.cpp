// Expression grammar, following Jinja2's precedence (lowest first):
//   a if c else b  <  or  <  and  <  not  <  comparisons, in, not in  <  + -  <  ~
//   <  * / // %  <  ** (left-associative, as in Jinja)  <  unary - +  <  primary, postfix
//   (.attr [index] (call)), then filters (|f) and tests (is t), which bind tightest.
#include <algorithm>

#include "engine/text/jinja/error.h"
#include "engine/text/jinja/parser.h"

namespace engine::jinja {
namespace {

// Bounds the recursion of the expression parser itself: "((((x))))" nests calls without building
// nodes, so the tree-height limit alone would not catch it.
class RecursionGuard {
 public:
  explicit RecursionGuard(int& depth) : depth_(depth) { ++depth_; }
  ~RecursionGuard() { --depth_; }
  RecursionGuard(const RecursionGuard&) = delete;
  RecursionGuard& operator=(const RecursionGuard&) = delete;
  bool exceeded() const { return depth_ > 3 * kMaxExpressionDepth; }

 private:
  int& depth_;
};

template <class T, class... Args>
std::unique_ptr<T> make(Args&&... args) {
  return std::make_unique<T>(std::forward<Args>(args)...);
}

}  // namespace

#define JINJA_GUARD_RECURSION()                \
  RecursionGuard recursion_guard(expr_depth_); \
  if (recursion_guard.exceeded()) fail_too_deep()

void Parser::fail_too_deep() const {
  fail("expression nested deeper than " + std::to_string(kMaxExpressionDepth) + " levels");
}

ExprPtr Parser::with_height(ExprPtr node, int child_height) {
  node->depth = child_height + 1;
  if (node->depth > kMaxExpressionDepth) {
    fail_at("expression nested deeper than " + std::to_string(kMaxExpressionDepth) + " levels",
            node->offset);
  }
  return node;
}

ExprPtr Parser::sized(ExprPtr node, std::initializer_list<const Expr*> children) {
  int height = 0;
  for (const Expr* child : children) {
    if (child) height = std::max(height, child->depth);
  }
  return with_height(std::move(node), height);
}

int Parser::height_of(const Arguments& args) {
  int height = 0;
  for (const auto& e : args.positional) height = std::max(height, e->depth);
  for (const auto& kv : args.keyword) height = std::max(height, kv.second->depth);
  return height;
}

ExprPtr Parser::parse_tuple(bool with_condexpr, bool explicit_parens) {
  const uint32_t offset = current().offset;
  auto tuple = make<ListExpr>(offset);
  bool is_tuple = false;
  auto at_end = [&] {
    const TokenKind t = current().type;
    return t == TokenKind::kVariableEnd || t == TokenKind::kBlockEnd || is_op(")");
  };
  while (true) {
    if (!tuple->items.empty()) expect_op(",");
    if (at_end()) break;
    tuple->items.push_back(parse_expression(with_condexpr));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!tuple->items.empty()) return std::move(tuple->items.front());
    if (!explicit_parens) fail("expected an expression, got " + describe_current());
  }
  tuple->is_tuple = true;
  int height = 0;
  for (const auto& e : tuple->items) height = std::max(height, e->depth);
  return with_height(std::move(tuple), height);
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  JINJA_GUARD_RECURSION();
  ExprPtr expr = parse_or();
  if (!with_condexpr) return expr;
  while (is_name("if")) {
    const uint32_t offset = advance().offset;
    auto cond = make<ConditionalExpr>(offset);
    cond->then_expr = std::move(expr);
    cond->condition = parse_or();
    if (skip_name("else")) cond->else_expr = parse_expression(true);
    const Expr* a = cond->then_expr.get();
    const Expr* b = cond->condition.get();
    const Expr* c = cond->else_expr.get();
    expr = sized(std::move(cond), {a, b, c});
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const uint32_t offset = advance().offset;
    ExprPtr right = parse_and();
    const Expr* l = left.get();
    const Expr* r = right.get();
    left =
        sized(make<BinaryExpr>(offset, BinaryOp::kOr, std::move(left), std::move(right)), {l, r});
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const uint32_t offset = advance().offset;
    ExprPtr right = parse_not();
    const Expr* l = left.get();
    const Expr* r = right.get();
    left =
        sized(make<BinaryExpr>(offset, BinaryOp::kAnd, std::move(left), std::move(right)), {l, r});
  }
  return left;
}

ExprPtr Parser::parse_not() {
  JINJA_GUARD_RECURSION();
  if (is_name("not")) {
    const uint32_t offset = advance().offset;
    ExprPtr operand = parse_not();
    const Expr* o = operand.get();
    return sized(make<UnaryExpr>(offset, UnaryOp::kNot, std::move(operand)), {o});
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const uint32_t offset = current().offset;
  ExprPtr first = parse_math1();
  std::unique_ptr<CompareExpr> cmp;
  while (true) {
    CompareOp op;
    if (is_op("=="))
      op = CompareOp::kEq;
    else if (is_op("!="))
      op = CompareOp::kNe;
    else if (is_op("<"))
      op = CompareOp::kLt;
    else if (is_op("<="))
      op = CompareOp::kLe;
    else if (is_op(">"))
      op = CompareOp::kGt;
    else if (is_op(">="))
      op = CompareOp::kGe;
    else if (is_name("in"))
      op = CompareOp::kIn;
    else if (is_name("not") && peek().type == TokenKind::kName && peek().text == "in") {
      advance();
      op = CompareOp::kNotIn;
    } else {
      break;
    }
    advance();
    if (!cmp) cmp = make<CompareExpr>(offset, std::move(first));
    cmp->rest.emplace_back(op, parse_math1());
  }
  if (!cmp) return first;
  int height = cmp->first->depth;
  for (const auto& [op, e] : cmp->rest) height = std::max(height, e->depth);
  return with_height(std::move(cmp), height);
}

// Shared loop of the left-associative binary levels: next (op next)*.
ExprPtr Parser::parse_binary_level(
    ExprPtr (Parser::*next)(), std::initializer_list<std::pair<std::string_view, BinaryOp>> ops) {
  ExprPtr left = (this->*next)();
  while (true) {
    const auto op =
        std::find_if(ops.begin(), ops.end(), [&](const auto& o) { return is_op(o.first); });
    if (op == ops.end()) return left;
    const uint32_t offset = advance().offset;
    ExprPtr right = (this->*next)();
    const Expr* l = left.get();
    const Expr* r = right.get();
    left = sized(make<BinaryExpr>(offset, op->second, std::move(left), std::move(right)), {l, r});
  }
}

ExprPtr Parser::parse_math1() {
  return parse_binary_level(&Parser::parse_concat, {{"+", BinaryOp::kAdd}, {"-", BinaryOp::kSub}});
}

ExprPtr Parser::parse_concat() {
  return parse_binary_level(&Parser::parse_math2, {{"~", BinaryOp::kConcat}});
}

ExprPtr Parser::parse_math2() {
  return parse_binary_level(&Parser::parse_pow, {{"*", BinaryOp::kMul},
                                                 {"/", BinaryOp::kDiv},
                                                 {"//", BinaryOp::kFloorDiv},
                                                 {"%", BinaryOp::kMod}});
}

ExprPtr Parser::parse_pow() {
  return parse_binary_level(&Parser::parse_unary_with_filters, {{"**", BinaryOp::kPow}});
}

ExprPtr Parser::parse_unary_with_filters() { return parse_unary(true); }

ExprPtr Parser::parse_unary(bool with_filter) {
  JINJA_GUARD_RECURSION();
  const uint32_t offset = current().offset;
  ExprPtr node;
  if (is_op("-") || is_op("+")) {
    const UnaryOp op = advance().text == "-" ? UnaryOp::kNeg : UnaryOp::kPos;
    ExprPtr operand = parse_unary(false);
    const Expr* o = operand.get();
    node = sized(make<UnaryExpr>(offset, op, std::move(operand)), {o});
  } else {
    node = parse_primary();
  }
  node = parse_postfix(std::move(node));
  if (with_filter) node = parse_filter_and_tests(std::move(node));
  return node;
}

ExprPtr Parser::parse_primary() {
  const Token& t = current();
  const uint32_t offset = t.offset;
  switch (t.type) {
    case TokenKind::kName: {
      const std::string& n = advance().text;
      if (n == "true" || n == "True") return make<LiteralExpr>(offset, Value(true));
      if (n == "false" || n == "False") return make<LiteralExpr>(offset, Value(false));
      if (n == "none" || n == "None") return make<LiteralExpr>(offset, Value::none());
      return make<NameExpr>(offset, n);
    }
    case TokenKind::kString: {
      std::string s = advance().text;
      while (current().type == TokenKind::kString) s += advance().text;  // "a" "b" concatenates
      return make<LiteralExpr>(offset, Value(std::move(s)));
    }
    case TokenKind::kInteger: return make<LiteralExpr>(offset, Value(advance().int_value));
    case TokenKind::kFloat: return make<LiteralExpr>(offset, Value(advance().float_value));
    case TokenKind::kOperator:
      if (skip_op("(")) {
        ExprPtr inner = parse_tuple(true, true);
        expect_op(")");
        return inner;
      }
      if (skip_op("[")) return parse_list(offset);
      if (skip_op("{")) return parse_dict(offset);
      break;
    default: break;
  }
  fail("unexpected " + describe_current());
}

ExprPtr Parser::parse_list(uint32_t offset) {
  auto list = make<ListExpr>(offset);
  int height = 0;
  while (!is_op("]")) {
    if (!list->items.empty()) {
      expect_op(",");
      if (is_op("]")) break;
    }
    list->items.push_back(parse_expression(true));
    height = std::max(height, list->items.back()->depth);
  }
  expect_op("]");
  return with_height(std::move(list), height);
}

ExprPtr Parser::parse_dict(uint32_t offset) {
  auto dict = make<DictExpr>(offset);
  int height = 0;
  while (!is_op("}")) {
    if (!dict->items.empty()) {
      expect_op(",");
      if (is_op("}")) break;
    }
    ExprPtr key = parse_expression(true);
    expect_op(":");
    ExprPtr value = parse_expression(true);
    height = std::max({height, key->depth, value->depth});
    dict->items.emplace_back(std::move(key), std::move(value));
  }
  expect_op("}");
  return with_height(std::move(dict), height);
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      const uint32_t offset = node->offset;  // errors point at the start of the call
      auto call = make<CallExpr>(offset, std::move(node));
      parse_call_args(call->args);
      const int height = std::max(call->callee->depth, height_of(call->args));
      node = with_height(std::move(call), height);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const uint32_t offset = current().offset;
  const Expr* obj = node.get();
  if (skip_op(".")) {
    if (current().type == TokenKind::kName) {
      return sized(make<GetAttrExpr>(offset, std::move(node), advance().text), {obj});
    }
    if (current().type == TokenKind::kInteger) {
      auto index = make<LiteralExpr>(current().offset, Value(advance().int_value));
      return sized(make<GetItemExpr>(offset, std::move(node), std::move(index)), {obj});
    }
    fail("expected a name or number after '.', got " + describe_current());
  }
  expect_op("[");
  ExprPtr parts[3];
  bool is_slice = false;
  if (!is_op(":")) parts[0] = parse_expression(true);
  for (int i = 1; i < 3 && skip_op(":"); ++i) {
    is_slice = true;
    if (!is_op(":") && !is_op("]")) parts[i] = parse_expression(true);
  }
  if (is_op(",")) fail("multiple subscripts are not supported");
  expect_op("]");
  if (!is_slice) {
    if (!parts[0]) fail_at("expected an index", offset);
    const Expr* idx = parts[0].get();
    return sized(make<GetItemExpr>(offset, std::move(node), std::move(parts[0])), {obj, idx});
  }
  auto slice = make<SliceExpr>(offset);
  const Expr* a = parts[0].get();
  const Expr* b = parts[1].get();
  const Expr* c = parts[2].get();
  slice->object = std::move(node);
  slice->start = std::move(parts[0]);
  slice->stop = std::move(parts[1]);
  slice->step = std::move(parts[2]);
  return sized(std::move(slice), {obj, a, b, c});
}

ExprPtr Parser::parse_filter_and_tests(ExprPtr node) {
  while (true) {
    if (skip_op("|")) {
      node = parse_filter(std::move(node));
    } else if (is_name("is")) {
      advance();
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      node = parse_postfix(std::move(node));
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter(ExprPtr input) {
  const uint32_t offset = current().offset;
  std::string name = expect_identifier();
  while (is_op(".") && peek().type == TokenKind::kName) {
    advance();
    name += "." + advance().text;
  }
  auto filter = make<FilterExpr>(offset, std::move(input), std::move(name));
  if (is_op("(")) parse_call_args(filter->args);
  const int height = std::max(filter->input ? filter->input->depth : 0, height_of(filter->args));
  return with_height(std::move(filter), height);
}

ExprPtr Parser::parse_test(ExprPtr input) {
  const uint32_t offset = current().offset;
  const bool negated = skip_name("not");
  std::string name = expect_identifier();
  auto test = make<TestExpr>(offset, std::move(input), std::move(name));
  test->negated = negated;
  const Token& t = current();
  const bool arg_follows =
      (t.type == TokenKind::kName && t.text != "else" && t.text != "or" && t.text != "and") ||
      t.type == TokenKind::kString || t.type == TokenKind::kInteger ||
      t.type == TokenKind::kFloat || is_op("[") || is_op("{");
  if (is_op("(")) {
    parse_call_args(test->args);
  } else if (arg_follows) {
    if (is_name("is")) fail("tests cannot be chained with 'is'");
    test->args.positional.push_back(parse_postfix(parse_primary()));
  }
  const int height = std::max(test->input->depth, height_of(test->args));
  return with_height(std::move(test), height);
}

void Parser::parse_call_args(Arguments& args) {
  expect_op("(");
  while (!is_op(")")) {
    if (!args.positional.empty() || !args.keyword.empty()) {
      expect_op(",");
      if (is_op(")")) break;
    }
    if (is_op("*") || is_op("**")) fail("*args and **kwargs in calls are not supported");
    if (current().type == TokenKind::kName && peek().type == TokenKind::kOperator &&
        peek().text == "=") {
      std::string key = advance().text;
      advance();
      args.keyword.emplace_back(std::move(key), parse_expression(true));
    } else {
      if (!args.keyword.empty()) fail("positional argument follows keyword argument");
      args.positional.push_back(parse_expression(true));
    }
  }
  expect_op(")");
}

}  // namespace engine::jinja
