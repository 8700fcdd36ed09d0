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
#include "tests/tools/serve_process.h"

namespace ggufd::test {
namespace {

using namespace std::chrono_literals;

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
