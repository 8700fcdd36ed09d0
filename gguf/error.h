// The one exception type of the gguf module.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace gguf {

// A malformed or unreadable file, or a metadata lookup that failed. what() is one line:
//   "<file>: at byte <offset>: <message>"   (offset omitted when it does not apply)
// The parts stay available for callers that format errors themselves (e.g. JSON).
class Error : public std::runtime_error {
 public:
  static constexpr uint64_t kNoOffset = UINT64_MAX;

  Error(std::string file, uint64_t offset, std::string message)
      : std::runtime_error(format(file, offset, message)),
        file_(std::move(file)), offset_(offset), message_(std::move(message)) {}

  const std::string& file() const { return file_; }
  uint64_t offset() const { return offset_; }
  const std::string& message() const { return message_; }

 private:
  static std::string format(const std::string& file, uint64_t offset, const std::string& msg) {
    std::string s = file.empty() ? std::string("<memory>") : file;
    if (offset != kNoOffset) s += ": at byte " + std::to_string(offset);
    return s + ": " + msg;
  }
  std::string file_;
  uint64_t offset_;
  std::string message_;
};

}  // namespace gguf
