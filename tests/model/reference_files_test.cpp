// The sha256 sums tests/data/reference/README.md promises: each committed reference model has the
// sum the README gives it, and each model the tests rebuild with `ggufd synth` has, in its JSON,
// the sum the README gives it (SynthReferenceModel checks every rebuilt file against its JSON).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>

#include "tests/support/sha256.h"
#include "tests/support/template_cases.h"

namespace {

const std::filesystem::path kDir = std::filesystem::path(GGUFD_TEST_DATA_DIR) / "reference";

// Every "name 0123abcd…" the README's sha256 lines give: name -> leading hex digits.
std::map<std::string, std::string> readme_sums() {
  const std::string text = ggufd::test::read_file(kDir / "README.md");
  std::map<std::string, std::string> sums;
  size_t at = 0;
  while ((at = text.find("sha256:", at)) != std::string::npos) {
    const size_t end = text.find("\n\n", at);
    const std::string paragraph = text.substr(at, end == std::string::npos ? std::string::npos : end - at);
    static const std::regex entry(R"(([A-Za-z0-9_.-]+)\s+([0-9a-f]{8,64})…)");
    for (std::sregex_iterator it(paragraph.begin(), paragraph.end(), entry), stop; it != stop; ++it) {
      sums[(*it)[1]] = (*it)[2];
    }
    at += 7;
  }
  return sums;
}

// The rebuilt models' sums the reference JSONs record: "<synth shape>-<type>" -> sha256.
std::map<std::string, std::string> json_sums() {
  std::map<std::string, std::string> sums;
  for (const auto& e : std::filesystem::directory_iterator(kDir)) {
    if (e.path().extension() != ".json") continue;
    const nlohmann::json ref = nlohmann::json::parse(ggufd::test::read_file(e.path()));
    if (!ref.contains("synth")) continue;
    for (const auto& [type, model] : ref.at("models").items()) {
      sums[ref["synth"]["shape"].get<std::string>() + "-" + type] = model.at("sha256").get<std::string>();
    }
  }
  return sums;
}

TEST(ReferenceFiles, CommittedModelsHaveTheReadmeSums) {
  const auto readme = readme_sums();
  int checked = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kDir / "models")) {
    if (e.is_directory()) continue;  // (models/vision: the projectors)
    const std::string name = e.path().stem().string();
    const auto it = readme.find(name);
    ASSERT_NE(it, readme.end()) << e.path() << " has no sha256 in the README";
    EXPECT_EQ(ggufd::test::sha256_file(e.path().string()).substr(0, it->second.size()), it->second) << e.path();
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

TEST(ReferenceFiles, RebuiltModelsHaveTheReadmeSumsInTheirJson) {
  const auto readme = readme_sums();
  const auto recorded = json_sums();
  std::set<std::string> committed;
  for (const auto& e : std::filesystem::recursive_directory_iterator(kDir / "models")) committed.insert(e.path().stem().string());
  int checked = 0;
  for (const auto& [name, prefix] : readme) {
    if (committed.count(name)) continue;
    const auto it = recorded.find(name);
    ASSERT_NE(it, recorded.end()) << "the README gives a sha256 for " << name << ", which no reference JSON records";
    EXPECT_EQ(it->second.substr(0, prefix.size()), prefix) << name;
    ++checked;
  }
  EXPECT_GE(checked, 8);
}

// The hash itself, on FIPS 180-4's examples (one block, two blocks) and the empty input.
TEST(ReferenceFiles, Sha256OfKnownInputs) {
  using ggufd::test::sha256_hex;
  const auto bytes = [](const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); };
  EXPECT_EQ(sha256_hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex(bytes("abc")), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(bytes("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

}  // namespace
