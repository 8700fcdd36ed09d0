// hub::Cache and the cache-only paths of pull: list, find, remove, --offline, concurrent pulls.
#include <gtest/gtest.h>

#include <thread>

#include "tests/hub/hub_fixture.h"

namespace ggufd::test {
namespace {

TEST_F(HubTest, OfflineUsesTheCacheOnly) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1);
  hub::PullOptions offline = options();
  offline.offline = true;
  std::string e = pull_error("org/m", offline);
  EXPECT_TRUE(contains(e, "offline: org/m is not in the cache " + cache_)) << e;
  EXPECT_TRUE(hub_->requests().empty());
  const hub::PullResult online = hub::pull("org/m", options());
  const size_t requests = hub_->requests().size();
  for (const std::string spec : {"org/m", "org/m:Q4_K_M", "hf://org/m/m-Q4_K_M.gguf"}) {
    const hub::PullResult r = hub::pull(spec, offline);
    EXPECT_EQ(r.id, "org/m:Q4_K_M") << spec;
    EXPECT_EQ(r.model_path, online.model_path) << spec;
  }
  EXPECT_EQ(hub_->requests().size(), requests) << "offline made requests";
  e = pull_error("org/m:Q8_0", offline);
  EXPECT_TRUE(contains(e, "org/m:Q8_0 is not in the cache")) << e;
}

TEST_F(HubTest, AnUpToDateFileIsNotFetchedAgain) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1);
  hub::pull("org/m", options());
  hub::pull("org/m", options());
  EXPECT_EQ(file_requests("m-Q4_K_M.gguf"), 1u);
}

TEST_F(HubTest, ListsAndRemovesEntriesKeepingSharedFiles) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1);
  add("org/m", "m-Q8_0.gguf", 2);
  add("org/m", "mmproj-m-f16.gguf", 3);
  const hub::PullResult q4 = hub::pull("org/m", options());
  const hub::PullResult q8 = hub::pull("org/m:Q8_0", options());
  EXPECT_EQ(q4.mmproj_path, q8.mmproj_path);
  const hub::Cache cache(cache_);
  const std::vector<hub::CacheEntry> all = cache.list();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, "org/m:Q4_K_M");
  EXPECT_EQ(all[0].quant, "Q4_K_M");
  EXPECT_EQ(all[0].path, q4.model_path);
  EXPECT_EQ(all[0].mmproj, q4.mmproj_path);
  EXPECT_EQ(all[0].files.size(), 2u);
  EXPECT_EQ(all[0].bytes, q4.bytes);
  EXPECT_GT(all[0].mtime, 0);
  EXPECT_EQ(all[1].id, "org/m:Q8_0");
  ASSERT_TRUE(cache.find("org/m"));
  EXPECT_EQ(cache.find("org/m")->id, "org/m:Q4_K_M");
  EXPECT_FALSE(cache.find("org/other"));

  cache.remove("org/m:Q4_K_M");
  EXPECT_FALSE(std::filesystem::exists(q4.model_path));
  EXPECT_TRUE(std::filesystem::exists(q8.mmproj_path)) << "still used by Q8_0";
  ASSERT_EQ(cache.list().size(), 1u);
  EXPECT_EQ(cache.find("org/m")->id, "org/m:Q8_0") << "the only entry of the repo";
  try {
    cache.remove("org/m:Q4_K_M");
    FAIL();
  } catch (const hub::HubError& e) {
    EXPECT_TRUE(contains(e.what(), "no cached model org/m:Q4_K_M")) << e.what();
    EXPECT_TRUE(contains(e.what(), "cached: org/m:Q8_0")) << e.what();
  }
  cache.remove("org/m:Q8_0");
  EXPECT_TRUE(cache.list().empty());
  EXPECT_FALSE(std::filesystem::exists(cache_ + "/models/org")) << "empty folders go too";
}

TEST_F(HubTest, AnEntryWithAMissingFileIsNotListed) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1);
  const hub::PullResult r = hub::pull("org/m", options());
  std::filesystem::remove(r.model_path);
  EXPECT_TRUE(hub::Cache(cache_).list().empty());
  EXPECT_FALSE(hub::Cache(cache_).find("org/m:Q4_K_M"));
  EXPECT_EQ(hub::pull("org/m", options()).model_path, r.model_path) << "pulled again";
}

TEST_F(HubTest, ConcurrentPullsOfOneFileDownloadItOnce) {
  start();
  const std::string sha = add("org/m", "m-Q4_K_M.gguf", 1, 1 << 18);
  std::vector<hub::PullResult> results(4);
  std::vector<std::string> errors(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&, i] {
      try {
        results[i] = hub::pull("org/m", options());
      } catch (const std::exception& e) {
        errors[i] = e.what();
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(errors[i], "");
    EXPECT_EQ(hub::detail::sha256_file(results[i].model_path, nullptr), sha);
  }
  EXPECT_EQ(file_requests("m-Q4_K_M.gguf"), 1u);
  EXPECT_EQ(hub::Cache(cache_).list().size(), 1u);
}

}  // namespace
}  // namespace ggufd::test
