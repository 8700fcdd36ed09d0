// Syntax tree of a parsed template. Built once by the parser, then only read (shared by
// concurrent renders). Every node records the byte offset of its first token in the normalized
// source, for error positions.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/text/jinja/value.h"

namespace engine::jinja {

// ---- Expressions --------------------------------------------------------------------------

enum class ExprKind : uint8_t {
  kLiteral,
  kName,
  kList,
  kDict,
  kGetAttr,
  kGetItem,
  kSlice,
  kCall,
  kFilter,
  kTest,
  kUnary,
  kBinary,
  kCompare,
  kConditional,
};

enum class UnaryOp : uint8_t { kNeg, kPos, kNot };
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv, kFloorDiv, kMod, kPow, kConcat, kAnd, kOr };
enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe, kIn, kNotIn };

struct Expr {
  Expr(ExprKind k, uint32_t off) : kind(k), offset(off) {}
  virtual ~Expr() = default;
  ExprKind kind;
  uint32_t offset;
  int depth = 1;  // height of this subtree; the parser bounds it
};
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
  std::vector<ExprPtr> positional;
  std::vector<std::pair<std::string, ExprPtr>> keyword;
};

struct LiteralExpr : Expr {
  LiteralExpr(uint32_t off, Value v) : Expr(ExprKind::kLiteral, off), value(std::move(v)) {}
  Value value;  // scalars and strings only: shared immutable data
};

struct NameExpr : Expr {
  NameExpr(uint32_t off, std::string n) : Expr(ExprKind::kName, off), name(std::move(n)) {}
  std::string name;
};

struct ListExpr : Expr {  // [a, b] and tuples (a, b)
  explicit ListExpr(uint32_t off) : Expr(ExprKind::kList, off) {}
  std::vector<ExprPtr> items;
  bool is_tuple = false;
};

struct DictExpr : Expr {
  explicit DictExpr(uint32_t off) : Expr(ExprKind::kDict, off) {}
  std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct GetAttrExpr : Expr {  // object.name
  GetAttrExpr(uint32_t off, ExprPtr obj, std::string n)
      : Expr(ExprKind::kGetAttr, off), object(std::move(obj)), name(std::move(n)) {}
  ExprPtr object;
  std::string name;
};

struct GetItemExpr : Expr {  // object[index]
  GetItemExpr(uint32_t off, ExprPtr obj, ExprPtr idx)
      : Expr(ExprKind::kGetItem, off), object(std::move(obj)), index(std::move(idx)) {}
  ExprPtr object;
  ExprPtr index;
};

struct SliceExpr : Expr {  // object[start:stop:step], each part optional (null)
  explicit SliceExpr(uint32_t off) : Expr(ExprKind::kSlice, off) {}
  ExprPtr object, start, stop, step;
};

struct CallExpr : Expr {
  CallExpr(uint32_t off, ExprPtr fn) : Expr(ExprKind::kCall, off), callee(std::move(fn)) {}
  ExprPtr callee;
  Arguments args;
};

// input | name(args). In {% filter %} and {% set x | f %} the innermost input is null and
// stands for the rendered block.
struct FilterExpr : Expr {
  FilterExpr(uint32_t off, ExprPtr in, std::string n)
      : Expr(ExprKind::kFilter, off), input(std::move(in)), name(std::move(n)) {}
  ExprPtr input;
  std::string name;
  Arguments args;
};

struct TestExpr : Expr {  // input is [not] name(args)
  TestExpr(uint32_t off, ExprPtr in, std::string n)
      : Expr(ExprKind::kTest, off), input(std::move(in)), name(std::move(n)) {}
  ExprPtr input;
  std::string name;
  Arguments args;
  bool negated = false;
};

struct UnaryExpr : Expr {
  UnaryExpr(uint32_t off, UnaryOp o, ExprPtr e)
      : Expr(ExprKind::kUnary, off), op(o), operand(std::move(e)) {}
  UnaryOp op;
  ExprPtr operand;
};

struct BinaryExpr : Expr {
  BinaryExpr(uint32_t off, BinaryOp o, ExprPtr l, ExprPtr r)
      : Expr(ExprKind::kBinary, off), op(o), lhs(std::move(l)), rhs(std::move(r)) {}
  BinaryOp op;
  ExprPtr lhs, rhs;
};

struct CompareExpr : Expr {  // first op1 e1 op2 e2 ... (chained, like Python)
  CompareExpr(uint32_t off, ExprPtr f) : Expr(ExprKind::kCompare, off), first(std::move(f)) {}
  ExprPtr first;
  std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

struct ConditionalExpr : Expr {  // then_expr if condition else else_expr (else optional)
  explicit ConditionalExpr(uint32_t off) : Expr(ExprKind::kConditional, off) {}
  ExprPtr condition, then_expr, else_expr;
};

// ---- Statements ---------------------------------------------------------------------------

enum class StmtKind : uint8_t {
  kText,
  kOutput,
  kIf,
  kFor,
  kSet,
  kSetBlock,
  kMacro,
  kCallBlock,
  kFilterBlock,
  kBreak,
  kContinue,
  kDo,
  kWith,
  kPlainBlock,
};

struct Stmt {
  Stmt(StmtKind k, uint32_t off) : kind(k), offset(off) {}
  virtual ~Stmt() = default;
  StmtKind kind;
  uint32_t offset;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Left side of set/for/with: one name, a tuple of names, or namespace.attribute.
struct AssignTarget {
  std::vector<std::string> names;
  bool is_tuple = false;  // "a, b" or "(a,)": unpack the value
  std::string attribute;  // set ns.attribute = ... (names has exactly ns)
};

struct Parameter {  // macro or caller parameter, with optional default
  std::string name;
  ExprPtr default_value;
};

struct TextStmt : Stmt {
  TextStmt(uint32_t off, std::string t) : Stmt(StmtKind::kText, off), text(std::move(t)) {}
  std::string text;
};

struct OutputStmt : Stmt {  // {{ expr }}
  OutputStmt(uint32_t off, ExprPtr e) : Stmt(StmtKind::kOutput, off), expr(std::move(e)) {}
  ExprPtr expr;
};

struct IfStmt : Stmt {  // if / elif ... / else
  explicit IfStmt(uint32_t off) : Stmt(StmtKind::kIf, off) {}
  std::vector<std::pair<ExprPtr, Body>> branches;
  Body else_body;
};

struct ForStmt : Stmt {
  explicit ForStmt(uint32_t off) : Stmt(StmtKind::kFor, off) {}
  AssignTarget target;
  ExprPtr iterable;
  ExprPtr filter;  // for x in xs if filter
  Body body;
  Body else_body;  // runs when no item was iterated
};

struct SetStmt : Stmt {
  explicit SetStmt(uint32_t off) : Stmt(StmtKind::kSet, off) {}
  AssignTarget target;
  ExprPtr value;
};

struct SetBlockStmt : Stmt {  // {% set x | filters %}body{% endset %}
  explicit SetBlockStmt(uint32_t off) : Stmt(StmtKind::kSetBlock, off) {}
  AssignTarget target;
  ExprPtr filters;  // FilterExpr chain with a null innermost input, or null
  Body body;
};

struct MacroStmt : Stmt {
  explicit MacroStmt(uint32_t off) : Stmt(StmtKind::kMacro, off) {}
  std::string name;
  std::vector<Parameter> params;
  Body body;
};

struct CallBlockStmt : Stmt {  // {% call(params) macro(args) %}body{% endcall %}
  explicit CallBlockStmt(uint32_t off) : Stmt(StmtKind::kCallBlock, off) {}
  std::vector<Parameter> caller_params;
  ExprPtr call;  // a CallExpr
  Body body;
};

struct FilterBlockStmt : Stmt {
  explicit FilterBlockStmt(uint32_t off) : Stmt(StmtKind::kFilterBlock, off) {}
  ExprPtr filters;  // FilterExpr chain with a null innermost input
  Body body;
};

struct LoopControlStmt : Stmt {  // kBreak or kContinue
  LoopControlStmt(StmtKind k, uint32_t off) : Stmt(k, off) {}
};

struct DoStmt : Stmt {
  DoStmt(uint32_t off, ExprPtr e) : Stmt(StmtKind::kDo, off), expr(std::move(e)) {}
  ExprPtr expr;
};

struct WithStmt : Stmt {  // {% with a = 1, b = 2 %}body{% endwith %}: a scope
  explicit WithStmt(uint32_t off) : Stmt(StmtKind::kWith, off) {}
  std::vector<std::pair<AssignTarget, ExprPtr>> assignments;
  Body body;
};

// A block rendered as is, e.g. HF's {% generation %}...{% endgeneration %} marker.
struct PlainBlockStmt : Stmt {
  explicit PlainBlockStmt(uint32_t off) : Stmt(StmtKind::kPlainBlock, off) {}
  Body body;
};

// A parsed template: the normalized source (for error positions) and its statements.
struct Template {
  std::string source;
  Body body;
};

}  // namespace engine::jinja
