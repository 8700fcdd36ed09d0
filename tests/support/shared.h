// Access to the shared test data (../shared relative to the repository root, or the CMake cache
// variable GGUFD_SHARED_DIR), and what a test does when test data is missing: it skips, saying
// what is missing, unless GGUFD_REQUIRE_TEST_DATA=1 (.ci/run sets it) makes that a failure, so
// that a CI run that lost its data is red rather than green with skips.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <string_view>

namespace ggufd::test {

// Absolute path of a file under ../shared (e.g. "models/stories260K.gguf").
inline std::string shared_path(const std::string& relative) {
  return std::string(GGUFD_SHARED_DIR) + "/" + relative;
}

inline bool shared_available() { return std::filesystem::is_directory(GGUFD_SHARED_DIR); }

// GGUFD_REQUIRE_TEST_DATA set to anything but "" or "0": missing test data (../shared, SIMDe) fails.
inline bool test_data_required() {
  const char* v = std::getenv("GGUFD_REQUIRE_TEST_DATA");
  return v != nullptr && *v != '\0' && std::string_view(v) != "0";
}

}  // namespace ggufd::test

// Skips the current test saying that `what` is missing, or fails it under
// GGUFD_REQUIRE_TEST_DATA=1. For missing test data or test libraries (SIMDe), never for a CPU
// that lacks an instruction set. Returns from the function, as GTEST_SKIP does.
#define GGUFD_MISSING_TEST_DATA(what)                                                          \
  do {                                                                                         \
    if (::ggufd::test::test_data_required()) {                                                 \
      GTEST_FAIL() << "test data missing: " << what                                            \
                   << " (GGUFD_REQUIRE_TEST_DATA=1: a test may not skip for missing data)";    \
    }                                                                                          \
    GTEST_SKIP() << "test data missing: " << what;                                             \
  } while (0)

// Skips (or, under GGUFD_REQUIRE_TEST_DATA=1, fails) the current test when ../shared or the
// given file in it is absent.
#define GGUFD_REQUIRE_SHARED(relative)                                                          \
  do {                                                                                          \
    if (!std::filesystem::exists(::ggufd::test::shared_path(relative))) {                       \
      GGUFD_MISSING_TEST_DATA("shared test data not found: " << ::ggufd::test::shared_path(relative) \
                              << " (tests that need ../shared skip without it)");               \
    }                                                                                           \
  } while (0)
