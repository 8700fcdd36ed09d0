// `ggufd serve` as a process: SIGTERM drains, a second signal stops at once (issue 13).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <future>
#include <regex>
#include <sstream>
#include <thread>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

using namespace std::chrono_literals;

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
      std::this_thread::sleep_for(20ms);
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
      std::this_thread::sleep_for(10ms);
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

// A second SIGTERM during the drain used to be ignored: the process waited out the whole grace
// period for requests that were never going to finish in time.
TEST(ServeSignals, SecondSignalStopsAtOnce) {
  GGUFD_REQUIRE_SHARED(kStories);
  ServeProcess p({"-m", shared_path(kStories), "--port", "0", "--ctx-size", "2048", "--parallel", "1",
                  "--shutdown-grace", "60", "--threads", "1"});
  const uint16_t port = p.wait_listening(30s);
  ASSERT_NE(port, 0) << p.read_log();
  // A request that runs for a while: 2000 tokens, one after another, repeatedly queued.
  auto busy = std::async(std::launch::async, [port] {
    for (int i = 0; i < 50; ++i) {
      try {
        post_json(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 2000}, {"ignore_eos", true}});
      } catch (const std::exception&) {
        return;
      }
    }
  });
  std::this_thread::sleep_for(200ms);
  p.signal(SIGTERM);
  std::this_thread::sleep_for(200ms);
  EXPECT_EQ(p.wait_exit(0ms), -1) << "the first signal drains";
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_exit(10s), 128 + SIGTERM) << p.read_log();
  EXPECT_NE(p.read_log().find("second signal"), std::string::npos);
  busy.wait();
}

// `ggufd serve --top-p 0`: the default that once aborted the process on the first request.
TEST(ServeSignals, TopPZeroDefaultServes) {
  GGUFD_REQUIRE_SHARED(kStories);
  ServeProcess p({"-m", shared_path(kStories), "--port", "0", "--top-p", "0", "--threads", "1"});
  const uint16_t port = p.wait_listening(30s);
  ASSERT_NE(port, 0) << p.read_log();
  EXPECT_EQ(post_json(port, "/v1/completions", {{"prompt", "Once"}, {"max_tokens", 3}}).status, 200);
  EXPECT_EQ(http_request(port, "GET", "/health").status, 200);
  p.signal(SIGTERM);
  EXPECT_EQ(p.wait_exit(10s), 0) << p.read_log();
}

}  // namespace
}  // namespace ggufd::test
