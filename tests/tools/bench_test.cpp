// `ggufd bench`: the JSON report's shape on a small model (speed itself is never asserted).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/support/run.h"
#include "tests/support/shared.h"

namespace {

using ggufd::test::run_ggufd;
using ggufd::test::shared_path;
using nlohmann::json;

TEST(BenchCommand, JsonReportHasBothTestsAndTheRoofline) {
  const std::string model = shared_path("models/stories260K.gguf");
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  // A small probe buffer is enough to check the roofline fields.
  const auto r = run_ggufd("bench -m " + model + " -p 16 -n 8 -r 3 -t 1 --json --probe-mib 16");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["threads"], 1);
  EXPECT_GT(j["params"].get<uint64_t>(), 200000u);
  ASSERT_EQ(j["tests"].size(), 2u);
  EXPECT_EQ(j["tests"][0]["test"], "pp16");
  EXPECT_EQ(j["tests"][1]["test"], "tg8");
  for (const json& t : j["tests"]) {
    EXPECT_EQ(t["tok_s"].size(), 3u);
    EXPECT_GT(t["median_tok_s"].get<double>(), 0.0);
    EXPECT_LE(t["min_tok_s"].get<double>(), t["median_tok_s"].get<double>());
    EXPECT_GE(t["max_tok_s"].get<double>(), t["median_tok_s"].get<double>());
  }
  EXPECT_GT(j["roofline"]["read_bandwidth_gbs"].get<double>(), 0.0);
  EXPECT_GT(j["roofline"]["weight_bytes_per_token"].get<uint64_t>(), 0u);
  // The pass over the model's own weights after each tg run, and tg against it.
  EXPECT_GT(j["roofline"]["paired_read_gbs"].get<double>(), 0.0);
  EXPECT_GT(j["roofline"]["tg_fraction_of_paired_bound"].get<double>(), 0.0);
  EXPECT_GT(j["peak_rss_bytes"].get<uint64_t>(), 0u);
}

// --depth: both tests run on top of D cached tokens; the report names the depth like llama-bench.
TEST(BenchCommand, DepthFillsTheContextFirst) {
  const std::string model = shared_path("models/stories260K.gguf");
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const auto r = run_ggufd("bench -m " + model + " -p 8 -n 4 -d 40 -r 2 -t 1 --json --no-roofline --kv-type f32");
  ASSERT_EQ(r.status, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["n_depth"], 40);
  EXPECT_EQ(j["kv_type"], "f32");
  ASSERT_EQ(j["tests"].size(), 2u);
  EXPECT_EQ(j["tests"][0]["test"], "pp8 @ d40");
  EXPECT_EQ(j["tests"][1]["test"], "tg4 @ d40");
  for (const json& t : j["tests"]) {
    EXPECT_EQ(t["n_depth"], 40);
    EXPECT_EQ(t["tok_s"].size(), 2u);
  }
  EXPECT_GT(j["kv_cache_bytes"].get<uint64_t>(), 0u);
}

TEST(BenchCommand, BadArgumentsAreRefused) {
  const auto missing = run_ggufd("bench -m /nonexistent.gguf");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("/nonexistent.gguf"), std::string::npos) << missing.err;
  const auto reps = run_ggufd("bench -m /dev/null -r 0");
  EXPECT_NE(reps.status, 0);
  EXPECT_NE(reps.err.find("--repetitions"), std::string::npos) << reps.err;
  const auto depth = run_ggufd("bench -m /dev/null -d -1");
  EXPECT_NE(depth.status, 0);
  EXPECT_NE(depth.err.find("--depth"), std::string::npos) << depth.err;
  const auto kv = run_ggufd("bench -m /dev/null --kv-type q4");
  EXPECT_NE(kv.status, 0);
  EXPECT_NE(kv.err.find("--kv-type"), std::string::npos) << kv.err;
}

}  // namespace
