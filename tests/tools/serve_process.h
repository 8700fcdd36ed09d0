// `ggufd serve` as a child process, for the tests of the binary's own behaviour (signals, the
// disk cache across restarts).
#pragma once

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace ggufd::test {

// A `ggufd serve` child process with its stderr in a file; killed at the end if still running.
class ServeProcess {
 public:
  explicit ServeProcess(std::vector<std::string> args) {
    log_ = testing::TempDir() + "/serve_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++) + ".log";
    pid_ = ::fork();
    if (pid_ == 0) {
      FILE* f = std::freopen(log_.c_str(), "w", stderr);
      (void)f;
      std::vector<char*> argv;
      static std::string binary = GGUFD_BINARY, serve = "serve";
      argv.push_back(binary.data());
      argv.push_back(serve.data());
      for (std::string& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(binary.c_str(), argv.data());
      std::_Exit(127);
    }
  }
  ~ServeProcess() {
    if (pid_ > 0 && !exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    std::remove(log_.c_str());
  }

  // The port from "listening on http://127.0.0.1:PORT" once the model is loaded (0 on timeout).
  uint16_t wait_listening(std::chrono::seconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::regex listening(R"(listening on http://127\.0\.0\.1:(\d+))");
    while (std::chrono::steady_clock::now() < deadline) {
      const std::string log = read_log();
      std::smatch m;
      if (std::regex_search(log, m, listening) && log.find("memory: weights") != std::string::npos) {
        return static_cast<uint16_t>(std::stoi(m[1]));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return 0;
  }
  void signal(int sig) { ::kill(pid_, sig); }
  // The exit status, or -1 if the process is still running after `timeout`.
  int wait_exit(std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < deadline) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        exited_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }
  std::string read_log() const {
    std::ifstream in(log_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }

 private:
  static inline int counter_ = 0;
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

}  // namespace ggufd::test
