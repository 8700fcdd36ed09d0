// A fake hub (tests/support/fake_hub.py) and an empty cache per test, and helpers to fill repos.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "server/hub/hub.h"
#include "server/hub/store.h"
#include "tests/support/fake_hub.h"

namespace ggufd::test {

class HubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    GGUFD_REQUIRE_HUB_TOOLS();
    ::setenv("NO_PROXY", "*", 1);
    for (const char* v : {"HF_TOKEN", "HF_ENDPOINT", "GGUFD_CACHE", "https_proxy", "HTTPS_PROXY"}) ::unsetenv(v);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = ::testing::TempDir() + "/hub_" + std::to_string(::getpid()) + "_" + info->name();
    std::filesystem::remove_all(dir_);
    cache_ = dir_ + "/cache";
  }
  void TearDown() override {
    hub_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  // Starts the fake hub with `config` (see fake_hub.py); fails the test when it does not come up.
  void start(const nlohmann::json& config = nlohmann::json::object()) {
    hub_ = std::make_unique<FakeHub>(dir_ + "/hub", config);
    ASSERT_TRUE(hub_->ready()) << "the fake hub did not start (python3 tests/support/fake_hub.py)";
  }

  // Writes a fake GGUF file into a repo; returns its sha256.
  std::string add(const std::string& repo, const std::string& path, uint32_t seed, size_t floats = 1024) {
    const std::string file = hub_->repos() + "/" + repo + "/" + path;
    write_fake_gguf(file, seed, floats);
    return hub::detail::sha256_file(file, nullptr);
  }

  hub::PullOptions options() const {
    hub::PullOptions o;
    o.cache_dir = cache_;
    o.endpoint = hub_->endpoint();
    o.ca_file = hub_->ca_file();
    o.retries = 3;
    o.low_speed_seconds = 20;
    return o;
  }

  // The message of the HubError pull() throws ("" and a test failure when it succeeds).
  std::string pull_error(const std::string& spec, const hub::PullOptions& o) {
    try {
      hub::pull(spec, o);
    } catch (const hub::HubError& e) {
      return e.what();
    }
    ADD_FAILURE() << "pull(" << spec << ") succeeded";
    return "";
  }

  // Files under the cache other than manifests and lock files: what a failed pull must not leave.
  std::vector<std::string> leftovers() const {
    std::vector<std::string> out;
    std::error_code ec;
    for (std::filesystem::recursive_directory_iterator it(cache_, ec), end; !ec && it != end; it.increment(ec)) {
      const auto p = it->path();
      if (it->is_regular_file() && p.extension() != ".lock") out.push_back(p.string());
    }
    return out;
  }

  // Requests to /resolve/ (the hub) and /cdn/ of one file.
  size_t file_requests(const std::string& suffix) const {
    size_t n = 0;
    for (const auto& r : hub_->requests()) {
      const std::string path = r["path"];
      if (path.find("/api/") == std::string::npos && path.size() >= suffix.size() &&
          path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0) {
        ++n;
      }
    }
    return n;
  }

  std::string dir_;
  std::string cache_;
  std::unique_ptr<FakeHub> hub_;
};

inline bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

}  // namespace ggufd::test
