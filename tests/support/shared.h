// Access to the shared test data (../shared relative to the repository root).
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace ggufd::test {

// Absolute path of a file under ../shared (e.g. "models/stories260K.gguf").
inline std::string shared_path(const std::string& relative) {
  return std::string(GGUFD_SHARED_DIR) + "/" + relative;
}

inline bool shared_available() { return std::filesystem::is_directory(GGUFD_SHARED_DIR); }

}  // namespace ggufd::test

// Skips the current test, with a clear message, when ../shared (or the given file in it) is absent.
#define GGUFD_REQUIRE_SHARED(relative)                                                      \
  do {                                                                                      \
    if (!std::filesystem::exists(::ggufd::test::shared_path(relative))) {                   \
      GTEST_SKIP() << "shared test data not found: " << ::ggufd::test::shared_path(relative) \
                   << " (tests that need ../shared skip without it)";                       \
    }                                                                                       \
  } while (0)
