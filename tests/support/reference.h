// Reading the references kept in the repository (tests/data/reference/*.json).
#pragma once

#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

namespace ggufd::test {

// tests/data/reference/<name>, parsed.
inline nlohmann::json read_reference(const std::string& name) {
  const std::string path = std::string(GGUFD_TEST_DATA_DIR) + "/reference/" + name;
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

}  // namespace ggufd::test
