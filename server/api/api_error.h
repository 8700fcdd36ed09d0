// Client-facing errors in OpenAI's shape: {"error":{"message","type","param","code"}}.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>

namespace server {

// Thrown by handlers; the router turns it into a response (the one place errors become JSON).
class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type = "invalid_request_error",
           std::optional<std::string> param = std::nullopt,
           std::optional<std::string> code = std::nullopt)
      : std::runtime_error(message), status_(status), type_(std::move(type)),
        param_(std::move(param)), code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& type() const { return type_; }
  const std::optional<std::string>& param() const { return param_; }
  const std::optional<std::string>& code() const { return code_; }
  // Extra response headers (e.g. Retry-After).
  std::optional<int> retry_after;

 private:
  int status_;
  std::string type_;
  std::optional<std::string> param_;
  std::optional<std::string> code_;
};

// A 400 about one request field.
inline ApiError invalid_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, "invalid_request_error", param);
}

// The 400 of a prompt past the model's context (OpenAI's code context_length_exceeded, which
// the Responses stream reports as an event): "This model's maximum context length is N tokens.
// However, <what>. Please <advice>."
inline ApiError context_exceeded(int64_t n_ctx, const std::string& what, const std::string& advice) {
  return ApiError(400,
                  "This model's maximum context length is " + std::to_string(n_ctx) + " tokens. However, " + what +
                      ". Please " + advice + ".",
                  "invalid_request_error", "messages", "context_length_exceeded");
}

// The error object OpenAI clients expect, {"error": {"message", "type", "param", "code"}}: the one
// function that makes error JSON, for error responses and for the error event of a stream.
nlohmann::json error_json(const ApiError& e);

}  // namespace server
