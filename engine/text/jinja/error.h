// Errors raised while parsing or rendering a chat template.
#pragma once

#include <stdexcept>
#include <string>

namespace engine {

// A template that cannot be parsed or rendered: a syntax error, a type error at render time, or a
// resource limit (depth, steps, output size) that was exceeded.
//
// what() reads "template error at line L, column C: <message>" (1-based; the position is omitted
// when it is unknown, i.e. line() == 0). The parts stay available for callers that format errors
// themselves. Columns count UTF-8 code points. Thread-safety: immutable value type.
class TemplateError : public std::runtime_error {
 public:
  TemplateError(std::string message, int line, int column)
      : std::runtime_error(format(message, line, column)),
        message_(std::move(message)),
        line_(line),
        column_(column) {}

  const std::string& message() const noexcept { return message_; }
  int line() const noexcept { return line_; }
  int column() const noexcept { return column_; }

 protected:
  // For subclasses whose what() must be exactly the message.
  struct Verbatim {};
  TemplateError(Verbatim, std::string message, int line, int column)
      : std::runtime_error(message), message_(std::move(message)), line_(line), column_(column) {}

 private:
  static std::string format(const std::string& message, int line, int column) {
    if (line <= 0) return "template error: " + message;
    return "template error at line " + std::to_string(line) + ", column " + std::to_string(column) +
           ": " + message;
  }
  std::string message_;
  int line_;
  int column_;
};

// The template called raise_exception(msg): the request itself is unacceptable to the model's
// template (e.g. roles do not alternate). what() is exactly msg, so servers can show it verbatim
// (typically as HTTP 400); line()/column() locate the call.
class TemplateRaise : public TemplateError {
 public:
  TemplateRaise(std::string message, int line, int column)
      : TemplateError(Verbatim{}, std::move(message), line, column) {}
};

namespace jinja {

// Internal: an evaluation error that does not yet know where in the template it happened.
// The evaluator converts it into engine::TemplateError (or TemplateRaise when raised_by_template)
// at the innermost node being evaluated, so it never escapes the jinja module.
class RuntimeError : public std::runtime_error {
 public:
  explicit RuntimeError(const std::string& message, bool raised_by_template = false)
      : std::runtime_error(message), raised_by_template_(raised_by_template) {}
  bool raised_by_template() const noexcept { return raised_by_template_; }

 private:
  bool raised_by_template_;
};

}  // namespace jinja
}  // namespace engine
