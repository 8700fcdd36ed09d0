// The fixture of the config/ tests: a clean GGUFD_* environment, a scratch directory, and
// `ggufd serve`'s parse (add_serve_options + CLI11 + finalize) in one call.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/serve_config.h"

extern char** environ;

namespace ggufd::test {

// Clears every GGUFD_* variable for the test and restores the outside environment afterwards
// (also any other variable a test set with env(), e.g. HOME); owns a scratch directory for config,
// preset, key and model files.
class ConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.starts_with("GGUFD_")) saved_env_[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
    }
    for (const auto& [name, value] : saved_env_) unsetenv(name.c_str());
    dir_ = std::filesystem::temp_directory_path() /
           ("ggufd-config-test-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }

  void TearDown() override {
    for (const std::string& name : set_env_) unsetenv(name.c_str());
    for (const auto& [name, value] : saved_env_) setenv(name.c_str(), value.c_str(), 1);
    for (const auto& [name, value] : saved_other_) {
      if (value) setenv(name.c_str(), value->c_str(), 1);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  void env(const std::string& name, const std::string& value) {
    if (!name.starts_with("GGUFD_") && !saved_other_.count(name)) {
      const char* old = std::getenv(name.c_str());
      saved_other_[name] = old ? std::optional<std::string>(old) : std::nullopt;
    }
    setenv(name.c_str(), value.c_str(), 1);
    set_env_.push_back(name);
  }

  // Writes `text` to a file in the scratch directory; returns its path.
  std::string file(const std::string& name, const std::string& text) {
    const std::filesystem::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << text;
    return p.string();
  }

  // A fresh CLI::App: add_serve_options + parse + finalize. Throws what finalize throws.
  static config::ServeConfig parse(const std::vector<std::string>& args) {
    config::ServeConfig cfg;
    CLI::App app{"test"};
    config::add_serve_options(app, cfg);
    std::vector<const char*> argv{"ggufd"};
    for (const std::string& a : args) argv.push_back(a.c_str());
    app.parse(static_cast<int>(argv.size()), argv.data());
    config::finalize(app, cfg);
    return cfg;
  }

  // The std::invalid_argument message of parse(args), or "" when it succeeds.
  static std::string error(const std::vector<std::string>& args) {
    try {
      parse(args);
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "";
  }

  std::filesystem::path dir_;

 private:
  std::map<std::string, std::string> saved_env_;
  std::map<std::string, std::optional<std::string>> saved_other_;
  std::vector<std::string> set_env_;
};

}  // namespace ggufd::test
