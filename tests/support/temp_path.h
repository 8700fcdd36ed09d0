// A file name in the temporary directory, unique per process, removed when it goes out of scope.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ggufd::test {

struct TempPath {
  std::string path;
  explicit TempPath(const std::string& name)
      : path((std::filesystem::temp_directory_path() / name).string() + "-" + std::to_string(::getpid()) + ".gguf") {}
  ~TempPath() {
    std::error_code ec;
    std::filesystem::remove(path, ec);
  }
  TempPath(const TempPath&) = delete;
  TempPath& operator=(const TempPath&) = delete;
};

}  // namespace ggufd::test
