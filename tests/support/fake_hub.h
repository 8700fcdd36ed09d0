// A local HTTPS stand-in for the Hugging Face Hub (tests/support/fake_hub.py) for the download
// tests: started per fixture in a fresh directory, with its own CA (made by the openssl CLI),
// stopped by the destructor. Needs python3 and openssl: a test without them skips, or fails
// under CI=true (GGUFD_REQUIRE_HUB_TOOLS).
#pragma once

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "gguf/writer.h"

namespace ggufd::test {

// "" when python3 and openssl are on PATH, else what is missing.
inline std::string missing_hub_tools() {
  std::string missing;
  for (const char* tool : {"python3", "openssl"}) {
    const std::string cmd = std::string("command -v ") + tool + " >/dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) missing += std::string(missing.empty() ? "" : ", ") + tool;
  }
  return missing;
}

// A small valid GGUF file (a few KB: metadata and one F32 tensor) whose bytes depend on `seed`.
inline void write_fake_gguf(const std::string& path, uint32_t seed, size_t floats = 1024) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  gguf::Writer w;
  w.set("general.architecture", gguf::OwnedValue::string("llama"));
  w.set("general.name", gguf::OwnedValue::string("fake " + std::to_string(seed)));
  std::vector<uint8_t> data(floats * 4);
  std::mt19937 rng(seed);
  for (uint8_t& b : data) b = static_cast<uint8_t>(rng());
  w.add_tensor("token_embd.weight", gguf::TensorType::F32, {uint64_t(floats)}, std::move(data));
  w.write(path);
}

class FakeHub {
 public:
  // Starts the hub over `dir` (created; repos go in repos(), which may be filled afterwards).
  FakeHub(const std::string& dir, const nlohmann::json& config = nlohmann::json::object()) : dir_(dir) {
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(repos());
    std::filesystem::create_directories(dir_ + "/certs");
    std::ofstream(dir_ + "/config.json") << config.dump();
    start();
  }
  ~FakeHub() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  bool ready() const { return hub_port_ > 0; }
  std::string endpoint() const { return "https://127.0.0.1:" + std::to_string(hub_port_); }
  std::string ca_file() const { return dir_ + "/certs/ca.pem"; }
  std::string repos() const { return dir_ + "/repos"; }
  int cdn_port() const { return cdn_port_; }
  // Every request served so far: {server: "hub"|"cdn", path, range, auth}.
  std::vector<nlohmann::json> requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_ + "/certs/requests.log");
    for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
    return out;
  }

 private:
  void start() {
    int out[2];
    if (::pipe(out) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(out[1], STDOUT_FILENO);
      ::close(out[0]);
      ::close(out[1]);
      const std::string script = std::string(GGUFD_TEST_DATA_DIR) + "/../support/fake_hub.py";
      const std::string root = repos(), certs = dir_ + "/certs", config = dir_ + "/config.json";
      ::execlp("python3", "python3", script.c_str(), "--root", root.c_str(), "--certs", certs.c_str(), "--config",
               config.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    ::close(out[1]);
    std::string line;
    pollfd p{out[0], POLLIN, 0};
    char c = 0;
    while (line.find('\n') == std::string::npos && ::poll(&p, 1, 30000) > 0 && ::read(out[0], &c, 1) == 1) line += c;
    ::close(out[0]);
    std::istringstream(line.substr(line.find(' ') == std::string::npos ? 0 : 6)) >> hub_port_ >> cdn_port_;
    if (line.rfind("READY ", 0) != 0) hub_port_ = 0;
  }

  std::string dir_;
  pid_t pid_ = -1;
  int hub_port_ = 0;
  int cdn_port_ = 0;
};

}  // namespace ggufd::test

// Skips the test when python3 or openssl is missing; fails instead under CI=true.
#define GGUFD_REQUIRE_HUB_TOOLS()                                                                \
  do {                                                                                           \
    const std::string missing_ = ::ggufd::test::missing_hub_tools();                             \
    if (!missing_.empty()) {                                                                     \
      const char* ci_ = std::getenv("CI");                                                       \
      if (ci_ != nullptr && std::string(ci_) == "true") GTEST_FAIL() << "CI: missing " << missing_; \
      GTEST_SKIP() << "missing " << missing_ << " (scripts/install-deps --test installs them)";  \
    }                                                                                            \
  } while (0)
