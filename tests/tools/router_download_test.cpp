// The router downloading for its clients (server/model_downloads.h): POST /models/load of a Hub
// name not on disk pulls it from the local HTTPS hub (tests/support/fake_hub.py) into the cache,
// with download events on GET /models/events, then loads it; the model answers under its cache id
// and under the name it was asked by. What cannot be pulled is refused saying why.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "server/hub/hub.h"
#include "tests/server/fixture.h"
#include "tests/support/fake_hub.h"

namespace ggufd::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

class RouterDownload : public ::testing::Test {
 protected:
  void SetUp() override {
    GGUFD_REQUIRE_HUB_TOOLS();
    ::setenv("NO_PROXY", "*", 1);
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::path(::testing::TempDir()) / ("ggufd-router-dl-" + std::to_string(::getpid()) + "-" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
    hub_ = std::make_unique<FakeHub>((dir_ / "hub").string());
    ASSERT_TRUE(hub_->ready()) << "the fake hub did not start (python3 tests/support/fake_hub.py)";
  }
  void TearDown() override {
    hub_.reset();
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  server::ServiceOptions options() const {
    server::ServiceOptions o = test_options();
    o.model.path.clear();
    o.model.alias.clear();
    o.model.engine.prefix_cache_bytes = 1 << 20;
    o.router.enabled = true;
    o.router.models_dir = (dir_ / "models").string();
    o.router.load_wait_s = 60;
    o.router.hub.cache_dir = (dir_ / "cache").string();
    o.router.hub.endpoint = hub_->endpoint();
    o.router.hub.ca_file = hub_->ca_file();
    const std::string cache = o.router.hub.cache_dir;
    o.router.cached_models = [cache] {
      std::vector<std::pair<std::string, std::string>> out;
      for (const hub::CacheEntry& e : hub::Cache(cache).list()) out.emplace_back(e.id, e.path);
      return out;
    };
    o.shutdown_grace_s = 2;
    return o;
  }

  fs::path dir_;
  std::unique_ptr<FakeHub> hub_;
};

HttpReply load_model(uint16_t port, const std::string& model) {
  return post_json(port, "/models/load", {{"model", model}});
}

HttpReply ask(uint16_t port, const std::string& model) {
  return post_json(port, "/v1/chat/completions",
                   {{"model", model}, {"messages", one_user_message("Once upon a time")}, {"max_tokens", 3}});
}

TEST_F(RouterDownload, LoadOfAHubNameDownloadsItWithEventsThenLoadsIt) {
  GGUFD_REQUIRE_SHARED(kStories);
  fs::create_directories(hub_->repos() + "/org/stories");
  fs::copy_file(shared_path(kStories), hub_->repos() + "/org/stories/stories-Q8_0.gguf");
  RunningService s(options());
  ASSERT_TRUE(s.ready());
  HttpReply asked;
  const std::string events = watch_stream(
      s.port(), "/models/events",
      [](const std::string& got) { return got.find(R"("status":"loaded")") != std::string::npos; },
      std::chrono::seconds(60), [&] { asked = load_model(s.port(), "hf.co/org/stories:latest"); });
  ASSERT_EQ(asked.status, 200) << asked.body;
  EXPECT_EQ(asked.json()["status"], "downloading");
  EXPECT_NE(events.find(R"("type":"download")"), std::string::npos) << events;
  EXPECT_NE(events.find(R"("phase":"downloading")"), std::string::npos) << events;
  EXPECT_NE(events.find(R"("status":"downloaded")"), std::string::npos) << events;
  EXPECT_NE(events.find(R"("id":"org/stories:Q8_0")"), std::string::npos) << events;
  ASSERT_NE(events.find(R"("status":"loaded")"), std::string::npos) << events;

  EXPECT_EQ(ask(s.port(), "org/stories:Q8_0").status, 200);
  EXPECT_EQ(ask(s.port(), "hf.co/org/stories:latest").status, 200);  // the name it was pulled by
  EXPECT_EQ(ask(s.port(), "org/stories").status, 200);
  const json listed = http_request(s.port(), "GET", "/v1/models").json();
  ASSERT_EQ(listed["data"].size(), 1u) << listed;
  EXPECT_EQ(listed["data"][0]["id"], "org/stories:Q8_0");
  EXPECT_EQ(listed["data"][0]["status"], "loaded");
  // Asked again: on disk now, nothing to download.
  EXPECT_EQ(load_model(s.port(), "hf.co/org/stories").json()["status"], "loaded");
}

TEST_F(RouterDownload, AFailedDownloadIsAnEventAndNotAModel) {
  RunningService s(options());
  ASSERT_TRUE(s.ready());
  HttpReply asked;
  const std::string events = watch_stream(
      s.port(), "/models/events",
      [](const std::string& got) { return got.find(R"("status":"failed")") != std::string::npos; },
      std::chrono::seconds(30), [&] { asked = load_model(s.port(), "org/absent:Q4_K_M"); });
  ASSERT_EQ(asked.status, 200) << asked.body;
  ASSERT_NE(events.find(R"("status":"failed")"), std::string::npos) << events;
  EXPECT_NE(events.find("org/absent"), std::string::npos) << events;
  EXPECT_EQ(ask(s.port(), "org/absent:Q4_K_M").status, 404);
}

// Ollama's /api/pull (NDJSON progress), then /api/copy, /api/ps, /api/delete.
TEST_F(RouterDownload, OllamaPullCopyAndDelete) {
  GGUFD_REQUIRE_SHARED(kStories);
  fs::create_directories(hub_->repos() + "/org/stories");
  fs::copy_file(shared_path(kStories), hub_->repos() + "/org/stories/stories-Q8_0.gguf");
  RunningService s(options());
  ASSERT_TRUE(s.ready());
  const HttpReply pulled = post_json(s.port(), "/api/pull", {{"model", "hf.co/org/stories:Q8_0"}});
  ASSERT_EQ(pulled.status, 200) << pulled.body;
  EXPECT_EQ(pulled.headers.at("content-type"), "application/x-ndjson");
  std::vector<json> lines;
  for (size_t at = 0, end; (end = pulled.body.find('\n', at)) != std::string::npos; at = end + 1) {
    lines.push_back(json::parse(pulled.body.substr(at, end - at)));
  }
  ASSERT_GE(lines.size(), 3u) << pulled.body;
  EXPECT_EQ(lines.front()["status"], "pulling manifest");
  EXPECT_EQ(lines.back()["status"], "success");
  bool bytes = false;
  for (const json& l : lines) bytes |= l.contains("digest") && l["digest"].get<std::string>().rfind("sha256:", 0) == 0 && l["total"] > 0;
  EXPECT_TRUE(bytes) << pulled.body;
  // Pulled again without streaming: cached, one object.
  EXPECT_EQ(post_json(s.port(), "/api/pull", {{"model", "org/stories:Q8_0"}, {"stream", false}}).body,
            R"({"status":"success"})");

  ASSERT_EQ(post_json(s.port(), "/api/copy", {{"source", "org/stories:Q8_0"}, {"destination", "tiny"}}).status, 200);
  EXPECT_EQ(ask(s.port(), "tiny").status, 200);
  const json ps = http_request(s.port(), "GET", "/api/ps").json();
  ASSERT_EQ(ps["models"].size(), 1u) << ps;
  EXPECT_EQ(ps["models"][0]["name"], "org/stories:Q8_0");

  const HttpReply removed = http_request(s.port(), "DELETE", "/api/delete", json{{"model", "tiny"}}.dump());
  EXPECT_EQ(removed.status, 200) << removed.body;
  EXPECT_EQ(ask(s.port(), "org/stories:Q8_0").status, 404);
  EXPECT_TRUE(http_request(s.port(), "GET", "/api/tags").json()["models"].empty());
  EXPECT_FALSE(fs::exists(dir_ / "cache" / "models" / "org" / "stories" / "stories-Q8_0.gguf"));
  EXPECT_EQ(http_request(s.port(), "DELETE", "/api/delete", json{{"model", "tiny"}}.dump()).status, 404);
}

TEST_F(RouterDownload, OllamaPullRefusesWhatItCannotReach) {
  RunningService s(options());
  ASSERT_TRUE(s.ready());
  const HttpReply registry = post_json(s.port(), "/api/pull", {{"model", "llama3.2"}});
  EXPECT_EQ(registry.status, 400);
  EXPECT_NE(registry.body.find("hf.co/org/repo"), std::string::npos) << registry.body;
  EXPECT_TRUE(registry.json().contains("error")) << "Ollama's error shape";
  const HttpReply absent = post_json(s.port(), "/api/pull", {{"model", "hf.co/org/absent"}, {"stream", false}});
  EXPECT_EQ(absent.status, 404) << absent.body;
  const HttpReply streamed = post_json(s.port(), "/api/pull", {{"model", "hf.co/org/absent"}});
  EXPECT_EQ(streamed.status, 200);
  EXPECT_NE(streamed.body.find(R"({"error":)"), std::string::npos) << streamed.body;
  EXPECT_EQ(post_json(s.port(), "/api/pull", json::object()).status, 400);
  EXPECT_EQ(post_json(s.port(), "/api/copy", {{"source", "nope"}, {"destination", "x"}}).status, 404);
}

TEST_F(RouterDownload, WhatCannotBePulledIsRefused) {
  server::ServiceOptions o = options();
  {
    RunningService s(o);
    ASSERT_TRUE(s.ready());
    // Plain URLs stay with `ggufd pull` on the host: clients never make the server fetch an address.
    EXPECT_EQ(load_model(s.port(), "https://127.0.0.1:1/x.gguf").status, 404);
    EXPECT_EQ(load_model(s.port(), "not a name").status, 404);
  }
  o.router.hub.offline = true;
  {
    RunningService s(o);
    ASSERT_TRUE(s.ready());
    const HttpReply r = load_model(s.port(), "org/stories");
    EXPECT_EQ(r.status, 503);
    EXPECT_NE(r.body.find("--offline"), std::string::npos) << r.body;
  }
  o.router.hub.offline = false;
  o.router.pull = false;
  {
    RunningService s(o);
    ASSERT_TRUE(s.ready());
    EXPECT_EQ(load_model(s.port(), "org/stories").status, 404);
  }
  EXPECT_TRUE(hub_->requests().empty()) << "nothing reached the hub";
}

}  // namespace
}  // namespace ggufd::test
