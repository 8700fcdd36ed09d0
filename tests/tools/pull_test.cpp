// `ggufd pull`, `ggufd list`, `ggufd rm` end to end against the local HTTPS hub
// (tests/support/fake_hub.py), configured the way a user would: HF_ENDPOINT, GGUFD_CACHE.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "tests/support/fake_hub.h"
#include "tests/support/run.h"

namespace ggufd::test {
namespace {

bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

TEST(PullCommand, PullsListsAndRemovesThroughTheBinary) {
  GGUFD_REQUIRE_HUB_TOOLS();
  const std::string dir = ::testing::TempDir() + "/pull_cmd_" + std::to_string(::getpid());
  FakeHub hub(dir + "/hub", {{"cut_after", {{"org/tiny/tiny-Q8_0.gguf", 2000}}}});
  ASSERT_TRUE(hub.ready());
  write_fake_gguf(hub.repos() + "/org/tiny/tiny-Q4_K_M.gguf", 1);
  write_fake_gguf(hub.repos() + "/org/tiny/tiny-Q8_0.gguf", 2);
  write_fake_gguf(hub.repos() + "/org/tiny/mmproj-tiny-f16.gguf", 3);
  const std::string cache = dir + "/cache";
  ::setenv("HF_ENDPOINT", hub.endpoint().c_str(), 1);
  ::setenv("GGUFD_CACHE", cache.c_str(), 1);
  ::setenv("NO_PROXY", "*", 1);
  const std::string ca = " --ca-file " + hub.ca_file();

  RunResult r = run_ggufd("pull org/tiny" + ca);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "org/tiny:Q4_K_M")) << r.out;
  EXPECT_TRUE(has(r.out, cache + "/models/org/tiny/tiny-Q4_K_M.gguf")) << r.out;
  EXPECT_TRUE(has(r.out, "mmproj " + cache + "/models/org/tiny/mmproj-tiny-f16.gguf")) << r.out;
  EXPECT_TRUE(has(r.err, "downloading tiny-Q4_K_M.gguf")) << r.err;
  EXPECT_FALSE(has(r.err, "\r")) << "no progress bar when stderr is not a terminal";

  r = run_ggufd("pull org/tiny:Q8_0 --no-mmproj" + ca);  // resumes after the cut
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "org/tiny:Q8_0")) << r.out;
  r = run_ggufd("inspect " + cache + "/models/org/tiny/tiny-Q8_0.gguf");
  EXPECT_EQ(r.status, 0) << r.err;

  r = run_ggufd("list");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(has(r.out, "org/tiny:Q4_K_M")) << r.out;
  EXPECT_TRUE(has(r.out, "org/tiny:Q8_0")) << r.out;

  r = run_ggufd("pull org/tiny:Q2_K --offline");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "offline: org/tiny:Q2_K is not in the cache")) << r.err;
  r = run_ggufd("pull org/tiny --offline");
  EXPECT_EQ(r.status, 0) << r.err;

  r = run_ggufd("rm org/tiny:Q4_K_M");
  EXPECT_EQ(r.status, 0) << r.err;
  r = run_ggufd("list");
  EXPECT_FALSE(has(r.out, "org/tiny:Q4_K_M")) << r.out;
  r = run_ggufd("rm org/tiny:Q4_K_M");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "no cached model org/tiny:Q4_K_M")) << r.err;

  r = run_ggufd("pull ../../x" + ca);
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "bad model spec")) << r.err;
  r = run_ggufd("pull org/tiny");  // the test CA is not trusted without --ca-file
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(has(r.err, "TLS certificate check failed")) << r.err;
  for (const char* v : {"HF_ENDPOINT", "GGUFD_CACHE"}) ::unsetenv(v);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace ggufd::test
