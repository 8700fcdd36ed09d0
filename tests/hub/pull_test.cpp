// hub::pull against the local HTTPS hub: file choice, split sets, mmproj, resume, redirects,
// tokens, progress events.
#include <gtest/gtest.h>

#include "tests/hub/hub_fixture.h"

namespace ggufd::test {
namespace {

using hub::detail::sha256_file;

TEST_F(HubTest, PullsTheDefaultQuantAndAnExplicitOne) {
  start();
  const std::string q4 = add("org/m", "m-Q4_K_M.gguf", 1);
  const std::string q8 = add("org/m", "m-Q8_0.gguf", 2);
  add("org/m", "m-Q2_K.gguf", 3);
  hub::PullResult r = hub::pull("org/m", options());
  EXPECT_EQ(r.id, "org/m:Q4_K_M");
  EXPECT_EQ(r.model_path, cache_ + "/models/org/m/m-Q4_K_M.gguf");
  EXPECT_EQ(sha256_file(r.model_path, nullptr), q4);
  EXPECT_EQ(r.parts, std::vector<std::string>{r.model_path});
  EXPECT_EQ(r.mmproj_path, "");
  r = hub::pull("org/m:q8_0", options());
  EXPECT_EQ(r.id, "org/m:Q8_0");
  EXPECT_EQ(sha256_file(r.model_path, nullptr), q8);
  EXPECT_EQ(r.bytes, std::filesystem::file_size(r.model_path));
  r = hub::pull("hf://org/m/m-Q2_K.gguf", options());
  EXPECT_EQ(r.id, "org/m:Q2_K");
}

TEST_F(HubTest, PullsEverySplitPartAndTheMmproj) {
  start();
  std::vector<std::string> shas;
  for (int i = 1; i <= 3; ++i) {
    shas.push_back(add("org/s", "Q4/s-Q4_K_M-0000" + std::to_string(i) + "-of-00003.gguf", 10 + i));
  }
  const std::string proj = add("org/s", "mmproj-s-f16.gguf", 20);
  add("org/s", "s-Q8_0.gguf", 21);
  const hub::PullResult r = hub::pull("org/s", options());
  EXPECT_EQ(r.id, "org/s:Q4_K_M");
  ASSERT_EQ(r.parts.size(), 3u);
  uint64_t bytes = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(r.parts[i], cache_ + "/models/org/s/Q4/s-Q4_K_M-0000" + std::to_string(i + 1) + "-of-00003.gguf");
    EXPECT_EQ(sha256_file(r.parts[i], nullptr), shas[i]);
    bytes += std::filesystem::file_size(r.parts[i]);
  }
  EXPECT_EQ(r.model_path, r.parts[0]);
  EXPECT_EQ(r.mmproj_path, cache_ + "/models/org/s/mmproj-s-f16.gguf");
  EXPECT_EQ(sha256_file(r.mmproj_path, nullptr), proj);
  EXPECT_EQ(r.bytes, bytes + std::filesystem::file_size(r.mmproj_path));
  hub::PullOptions no_proj = options();
  no_proj.mmproj = false;
  EXPECT_EQ(hub::pull("org/s:Q8_0", no_proj).mmproj_path, "");
}

TEST_F(HubTest, ResumesWithRangeAfterAConnectionCut) {
  start({{"cut_after", {{"org/m/m-Q4_K_M.gguf", 3000}}}});
  const std::string sha = add("org/m", "m-Q4_K_M.gguf", 1, 4096);
  const hub::PullResult r = hub::pull("org/m", options());
  EXPECT_EQ(sha256_file(r.model_path, nullptr), sha);
  std::vector<std::string> ranges;
  for (const auto& req : hub_->requests()) {
    if (contains(req["path"], "/resolve/")) ranges.push_back(req["range"]);
  }
  EXPECT_EQ(ranges, (std::vector<std::string>{"", "bytes=3000-"}));
}

TEST_F(HubTest, RedirectsToAnotherHostWithoutTheToken) {
  start({{"redirect", {"org/r"}}, {"gated", {{"org/r", "secret"}}}});
  const std::string sha = add("org/r", "r-Q4_K_M.gguf", 5);
  hub::PullOptions o = options();
  o.token = "secret";
  const hub::PullResult r = hub::pull("org/r", o);
  EXPECT_EQ(sha256_file(r.model_path, nullptr), sha);
  bool via_cdn = false;
  for (const auto& req : hub_->requests()) {
    if (req["server"] == "cdn") {
      via_cdn = true;
      EXPECT_EQ(req["auth"], "") << "the token must stay with the hub";
    }
  }
  EXPECT_TRUE(via_cdn);
}

TEST_F(HubTest, GatedRepoNamesHfTokenThenWorksWithIt) {
  start({{"gated", {{"org/g", "hf_good"}}}});
  const std::string sha = add("org/g", "g-Q4_K_M.gguf", 7);
  std::string e = pull_error("org/g", options());
  EXPECT_TRUE(contains(e, "HTTP 401")) << e;
  EXPECT_TRUE(contains(e, "set HF_TOKEN")) << e;
  EXPECT_TRUE(contains(e, "g-Q4_K_M.gguf")) << e;
  ::setenv("HF_TOKEN", "hf_wrong", 1);
  e = pull_error("org/g", options());
  EXPECT_TRUE(contains(e, "HF_TOKEN is set but was refused")) << e;
  ::setenv("HF_TOKEN", "hf_good", 1);
  const hub::PullResult r = hub::pull("org/g", options());
  ::unsetenv("HF_TOKEN");
  EXPECT_EQ(sha256_file(r.model_path, nullptr), sha);
}

TEST_F(HubTest, ReportsProgressPhasesInOrder) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1, 100000);
  std::vector<hub::Phase> phases;
  uint64_t last_done = 0, total = 0;
  hub::pull("org/m", options(), [&](const hub::Progress& p) {
    if (phases.empty() || phases.back() != p.phase) phases.push_back(p.phase);
    if (p.phase == hub::Phase::kDownloading) {
      EXPECT_GE(p.bytes_done, last_done);
      EXPECT_EQ(p.file, "m-Q4_K_M.gguf");
      last_done = p.bytes_done;
      total = p.bytes_total;
    }
  });
  EXPECT_EQ(phases, (std::vector<hub::Phase>{hub::Phase::kResolving, hub::Phase::kDownloading,
                                             hub::Phase::kVerifying, hub::Phase::kDone}));
  EXPECT_EQ(last_done, total);
  EXPECT_EQ(total, std::filesystem::file_size(cache_ + "/models/org/m/m-Q4_K_M.gguf"));
}

TEST_F(HubTest, CancelKeepsThePartialFileAndTheNextPullResumes) {
  start();
  const std::string sha = add("org/m", "m-Q4_K_M.gguf", 1, 1 << 20);  // 4 MiB: many chunks
  std::atomic<bool> cancel{false};
  try {
    hub::pull("org/m", options(), [&](const hub::Progress& p) {
      if (p.phase == hub::Phase::kDownloading) cancel = true;
    }, &cancel);
    FAIL() << "not cancelled";
  } catch (const hub::HubError& e) {
    EXPECT_TRUE(contains(e.what(), "cancelled")) << e.what();
  }
  ASSERT_EQ(leftovers().size(), 1u);
  EXPECT_TRUE(contains(leftovers()[0], ".part"));
  const hub::PullResult r = hub::pull("org/m", options());
  EXPECT_EQ(sha256_file(r.model_path, nullptr), sha);
  const auto reqs = hub_->requests();
  EXPECT_TRUE(contains(reqs.back()["range"], "bytes=")) << reqs.back().dump();
}

TEST_F(HubTest, PullsAPlainHttpsUrlAndItsSplitParts) {
  start();
  const std::string a = add("org/u", "u-00001-of-00002.gguf", 30);
  const std::string b = add("org/u", "u-00002-of-00002.gguf", 31);
  const std::string url = hub_->endpoint() + "/org/u/resolve/main/u-00001-of-00002.gguf?download=true";
  hub::PullOptions o = options();
  o.token = "never-sent";
  const hub::PullResult r = hub::pull(url, o);
  EXPECT_EQ(r.id, "127.0.0.1:" + std::to_string(std::stoi(hub_->endpoint().substr(18))) +
                      "/org/u/resolve/main/u-00001-of-00002.gguf");
  ASSERT_EQ(r.parts.size(), 2u);
  EXPECT_EQ(sha256_file(r.parts[0], nullptr), a);
  EXPECT_EQ(sha256_file(r.parts[1], nullptr), b);
  for (const auto& req : hub_->requests()) EXPECT_EQ(req["auth"], "");
  hub::PullOptions offline = options();
  offline.offline = true;
  EXPECT_EQ(hub::pull(url, offline).parts, r.parts) << "the id leaves the query out";
}

TEST_F(HubTest, FollowsTheFileListsPages) {
  start({{"page_size", 2}});
  for (uint32_t i = 0; i < 4; ++i) add("org/p", "a" + std::to_string(i) + "-Q2_K.gguf", i);
  const std::string sha = add("org/p", "z-Q4_K_M.gguf", 9);  // on the third page
  const hub::PullResult r = hub::pull("org/p", options());
  EXPECT_EQ(r.id, "org/p:Q4_K_M");
  EXPECT_EQ(sha256_file(r.model_path, nullptr), sha);
}

TEST_F(HubTest, RefusesAPageOnAnotherHost) {
  start({{"page_size", 1}, {"page_elsewhere", true}});
  add("org/p", "a-Q2_K.gguf", 1);
  add("org/p", "b-Q4_K_M.gguf", 2);
  const std::string e = pull_error("org/p", options());
  EXPECT_TRUE(contains(e, "points to another host")) << e;
}

}  // namespace
}  // namespace ggufd::test
