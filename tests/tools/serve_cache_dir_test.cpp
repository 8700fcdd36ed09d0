// `ggufd serve --cache-dir`: a restarted server starts from the prompt prefix the one before it
// computed, and says so in usage and metrics.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>

#include "tests/server/fixture.h"
#include "tests/tools/serve_process.h"

namespace ggufd::test {
namespace {

using namespace std::chrono_literals;

// A long prompt (about 300 tokens of stories260K's vocabulary) and its completion's usage.
nlohmann::json complete(uint16_t port) {
  std::string prompt = "Once upon a time there was a little girl named Lily.";
  for (int i = 0; i < 9; ++i) prompt += " She liked to play in the park with her friends, and every day the sun was bright.";
  const HttpReply r = post_json(port, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 2}, {"temperature", 0}});
  EXPECT_EQ(r.status, 200) << r.body;
  return nlohmann::json::parse(r.body);
}

TEST(ServeCacheDir, ARestartedServerReusesTheCachedPrefix) {
  GGUFD_REQUIRE_SHARED(kStories);
  const std::string dir = testing::TempDir() + "/ggufd_cache_dir_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  const std::vector<std::string> args = {"-m", shared_path(kStories), "--port", "0", "--threads", "1",
                                         "--parallel", "1", "--cache-dir", dir};
  nlohmann::json first;
  {
    ServeProcess p(args);
    const uint16_t port = p.wait_listening(30s);
    ASSERT_NE(port, 0) << p.read_log();
    first = complete(port);
    EXPECT_EQ(first["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
    EXPECT_GT(metric(port, "ggufd_prefix_cache_disk_saved_total"), 0);
    p.signal(SIGTERM);
    ASSERT_EQ(p.wait_exit(10s), 0) << p.read_log();
  }
  ServeProcess p(args);
  const uint16_t port = p.wait_listening(30s);
  ASSERT_NE(port, 0) << p.read_log();
  EXPECT_NE(p.read_log().find("prefix cache on disk: " + dir), std::string::npos) << p.read_log();
  const nlohmann::json again = complete(port);
  const int64_t prompt_tokens = again["usage"]["prompt_tokens"];
  const int64_t cached = again["usage"]["prompt_tokens_details"]["cached_tokens"];
  EXPECT_GT(prompt_tokens, 200);
  EXPECT_EQ(cached, (prompt_tokens - 1) / 32 * 32) << "every complete block but the last token's";
  EXPECT_EQ(again["choices"][0]["text"], first["choices"][0]["text"]);
  EXPECT_EQ(metric(port, "ggufd_prefix_cache_disk_loaded_total"), static_cast<double>(cached / 32));
  EXPECT_EQ(metric(port, "ggufd_prefix_cache_disk_rejected_total"), 0);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ggufd::test
