// What Model::from_file says of a model a test wrote: the message of its exception, and a check
// that a message names the problem.
#pragma once

#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "engine/model/model.h"
#include "gguf/file.h"

namespace ggufd::test {

// The message of the exception Model::from_file throws on `file`, or "" when it loads.
inline std::string load_error(const gguf::File& file) {
  try {
    engine::Model::from_file(file);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace ggufd::test

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)
