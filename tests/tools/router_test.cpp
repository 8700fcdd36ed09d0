// Many models in one server (server/model_registry.h): a models directory with a generation
// model (two files of it), an embedding model, a reranker and a file that is not a model;
// routing by the `model` field, on-demand loading, eviction under --models-max and --models-ram,
// sleep and wake, a failed load, unloading while a request runs, aliases and the router
// endpoints.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "tests/server/fixture.h"
#include "tests/support/synth_reference.h"

namespace ggufd::test {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

// The directory: stories.gguf, sub/stories-v1.gguf, bert.gguf, ranker.gguf, broken.gguf.
class ModelsDir {
 public:
  ModelsDir() : ranker_(read_reference("rerank-bert.json"), "F32") {
    dir_ = fs::path(testing::TempDir()) / ("ggufd-router-" + std::to_string(::getpid()) + "-" + std::to_string(count_++));
    fs::create_directories(dir_ / "sub");
    fs::create_symlink(shared_path(kStories), dir_ / "stories.gguf");
    fs::create_symlink(shared_path("models/stories260K-v1.gguf"), dir_ / "sub" / "stories-v1.gguf");
    fs::create_symlink(shared_path("models/synth/synth-bert-Q8_0.gguf"), dir_ / "bert.gguf");
    fs::create_symlink(ranker_.path(), dir_ / "ranker.gguf");
    std::ofstream(dir_ / "broken.gguf") << "GGUF but not really a model file";
    std::ofstream(dir_ / "notes.txt") << "not a model";
  }
  ~ModelsDir() { fs::remove_all(dir_); }
  std::string path() const { return dir_.string(); }

 private:
  static inline int count_ = 0;
  fs::path dir_;
  SynthReferenceModel ranker_;
};

server::ServiceOptions router_options(const ModelsDir& dir) {
  server::ServiceOptions o = test_options();
  o.model.path.clear();
  o.model.alias.clear();
  o.model.engine.prefix_cache_bytes = 1 << 20;  // small models, small caches
  o.router.enabled = true;
  o.router.models_dir = dir.path();
  o.router.load_wait_s = 60;
  o.shutdown_grace_s = 2;
  return o;
}

json list(uint16_t port) { return http_request(port, "GET", "/v1/models").json(); }

std::string status_of(uint16_t port, const std::string& id) {
  const json models = list(port);
  for (const json& m : models["data"]) {
    if (m["id"] == id) return m["status"];
  }
  return "absent";
}

// Polls /v1/models until the model shows `status` (about 10 s at most); returns the last one seen.
std::string wait_for_status(uint16_t port, const std::string& id, const std::string& status) {
  std::string seen;
  for (int i = 0; i < 200 && (seen = status_of(port, id)) != status; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return seen;
}

HttpReply chat(uint16_t port, const std::string& model, int max_tokens = 4) {
  return post_json(port, "/v1/chat/completions",
                   {{"model", model}, {"messages", one_user_message("Once upon a time")}, {"max_tokens", max_tokens}});
}

HttpReply embed(uint16_t port, const std::string& model) {
  return post_json(port, "/v1/embeddings", {{"model", model}, {"input", "a cat"}});
}

TEST(Router, ListsEveryModelOfTheDirectoryUnloaded) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  RunningService s(router_options(dir));
  ASSERT_TRUE(s.ready());
  EXPECT_EQ(http_request(s.port(), "GET", "/health").status, 200);  // the router is up; models load on demand
  std::vector<std::string> ids;
  const json models = list(s.port());
  for (const json& m : models["data"]) {
    ids.push_back(m["id"]);
    EXPECT_EQ(m["status"], "unloaded") << m.dump();
    EXPECT_EQ(m["object"], "model");
    EXPECT_GT(m["size"].get<int64_t>(), 0);
  }
  EXPECT_EQ(ids, (std::vector<std::string>{"bert", "broken", "ranker", "stories", "sub/stories-v1"}));
  // What the file's header says, before any load.
  EXPECT_EQ(models["data"][0]["architecture"], "bert");
  EXPECT_EQ(models["data"][3]["architecture"], "llama");
  EXPECT_EQ(models["data"][3]["context_length"], 2048);
  EXPECT_GT(models["data"][3]["parameters"].get<int64_t>(), 200000);
  EXPECT_FALSE(models["data"][1].contains("architecture")) << "the broken file has none";
  const json router = http_request(s.port(), "GET", "/models").json();  // llama-server's shape
  ASSERT_EQ(router["data"].size(), 5u);
  EXPECT_EQ(router["data"][3]["status"]["value"], "unloaded");
  EXPECT_EQ(router["data"][3]["source"], "dir");
}

TEST(Router, RoutesEachRequestToItsModelAndLabelsMetrics) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  RunningService s(router_options(dir));
  ASSERT_TRUE(s.ready());
  HttpReply r = chat(s.port(), "stories");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["model"], "stories");
  r = embed(s.port(), "bert");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["data"][0]["embedding"].size(), 128u);
  r = post_json(s.port(), "/v1/rerank", {{"model", "ranker"}, {"query", "cats"}, {"documents", {"a cat", "a car"}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["results"].size(), 2u);
  // an embedding model can't chat, whichever model is loaded
  EXPECT_EQ(chat(s.port(), "bert").status, 400);
  EXPECT_EQ(status_of(s.port(), "stories"), "loaded");
  EXPECT_EQ(status_of(s.port(), "bert"), "loaded");
  EXPECT_EQ(status_of(s.port(), "sub/stories-v1"), "unloaded");
  const json stories = http_request(s.port(), "GET", "/v1/models/stories").json();
  EXPECT_EQ(stories["capabilities"], json::array({"completion", "chat"}));
  EXPECT_GT(stories["memory_bytes"].get<int64_t>(), 0);
  const std::string metrics = http_request(s.port(), "GET", "/metrics").body;
  EXPECT_NE(metrics.find("ggufd_generated_tokens_total{model=\"stories\"} 4\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("ggufd_embedding_inputs_total{model=\"bert\"} 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("vllm:num_requests_running{model_name=\"sub/stories-v1\"} 0\n"), std::string::npos);
  EXPECT_EQ(metrics.find("# TYPE ggufd_slots_total gauge"), metrics.rfind("# TYPE ggufd_slots_total gauge"));
  // /props of one model, and the router's own
  EXPECT_EQ(http_request(s.port(), "GET", "/props?model=stories").json()["model"], "stories");
  EXPECT_EQ(http_request(s.port(), "GET", "/props").json()["router"], true);
}

TEST(Router, UnknownOrMissingModelIsAClientError) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  RunningService s(router_options(dir));
  ASSERT_TRUE(s.ready());
  HttpReply r = chat(s.port(), "gpt-4o");
  EXPECT_EQ(r.status, 404);
  EXPECT_EQ(r.json()["error"]["code"], "model_not_found");
  EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("stories, sub/stories-v1"), std::string::npos) << r.body;
  r = post_json(s.port(), "/v1/chat/completions", {{"messages", one_user_message("hi")}});
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["param"], "model");
  EXPECT_EQ(http_request(s.port(), "GET", "/props?model=nope").status, 404);
  EXPECT_EQ(post_json(s.port(), "/models/load", {{"model", "nope"}}).status, 404);
}

TEST(Router, EvictsTheLeastRecentlyUsedModelBeyondModelsMax) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  o.router.models_max = 2;
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  ASSERT_EQ(chat(s.port(), "stories").status, 200);
  ASSERT_EQ(embed(s.port(), "bert").status, 200);
  ASSERT_EQ(chat(s.port(), "sub/stories-v1").status, 200);  // stories was used least recently
  EXPECT_EQ(status_of(s.port(), "stories"), "unloaded");
  EXPECT_EQ(status_of(s.port(), "bert"), "loaded");
  EXPECT_EQ(status_of(s.port(), "sub/stories-v1"), "loaded");
  ASSERT_EQ(chat(s.port(), "stories").status, 200);  // back, in place of bert
  EXPECT_EQ(status_of(s.port(), "bert"), "unloaded");
}

TEST(Router, KeepsLoadedModelsWithinModelsRam) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  int64_t one = 0;
  {
    RunningService s(router_options(dir));
    ASSERT_TRUE(s.ready());
    ASSERT_EQ(chat(s.port(), "stories").status, 200);
    one = http_request(s.port(), "GET", "/v1/models/stories").json()["memory_bytes"];
  }
  server::ServiceOptions o = router_options(dir);
  o.router.models_ram = one + one / 2;  // room for one such model, not two
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  ASSERT_EQ(chat(s.port(), "stories").status, 200);
  ASSERT_EQ(chat(s.port(), "sub/stories-v1").status, 200);
  EXPECT_EQ(status_of(s.port(), "stories"), "unloaded");
  // a model larger than the whole budget fails with the figures
  o.router.models_ram = 4096;
  RunningService tiny(o);
  const HttpReply r = chat(tiny.port(), "stories");
  EXPECT_EQ(r.status, 500);
  EXPECT_NE(r.body.find("more than --models-ram"), std::string::npos) << r.body;
}

TEST(Router, AFailedLoadAnswersWithItsCauseAndIsRetried) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  RunningService s(router_options(dir));
  ASSERT_TRUE(s.ready());
  for (int attempt = 0; attempt < 2; ++attempt) {
    const HttpReply r = chat(s.port(), "broken");
    EXPECT_EQ(r.status, 500);
    EXPECT_EQ(r.json()["error"]["code"], "load_failed");
    EXPECT_NE(r.json()["error"]["message"].get<std::string>().find("broken"), std::string::npos) << r.body;
    EXPECT_EQ(status_of(s.port(), "broken"), "failed");
  }
  EXPECT_EQ(chat(s.port(), "stories").status, 200);  // the others are untouched
}

TEST(Router, SleepsWhenIdleAndWakesOnTheNextRequest) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  o.router.sleep_idle_s = 1;
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  ASSERT_EQ(chat(s.port(), "stories").status, 200);
  EXPECT_EQ(wait_for_status(s.port(), "stories", "sleeping"), "sleeping");
  EXPECT_EQ(chat(s.port(), "stories").status, 200);
  EXPECT_EQ(status_of(s.port(), "stories"), "loaded");
}

// Ollama's keep_alive, in any dialect: 0 unloads the model once the request is done; a duration
// keeps it past --sleep-idle-seconds; a malformed one is a 400 naming the field.
TEST(Router, KeepAliveOfARequestOverridesTheIdleTimeout) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  o.router.sleep_idle_s = 1;
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  const json messages = one_user_message("Once upon a time");
  auto chat_keeping = [&](const json& keep_alive) {
    return post_json(s.port(), "/v1/chat/completions",
                     {{"model", "stories"}, {"messages", messages}, {"max_tokens", 2}, {"keep_alive", keep_alive}});
  };
  ASSERT_EQ(chat_keeping(0).status, 200);
  EXPECT_EQ(wait_for_status(s.port(), "stories", "sleeping"), "sleeping");

  const HttpReply kept = chat_keeping("1h");
  ASSERT_EQ(kept.status, 200);
  EXPECT_EQ(kept.headers.count("x-ggufd-ignored-fields"), 0u) << "keep_alive is read, not ignored";
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // past --sleep-idle-seconds
  EXPECT_EQ(status_of(s.port(), "stories"), "loaded");
  ASSERT_EQ(chat(s.port(), "stories").status, 200);  // none: the idle timeout rules again
  EXPECT_EQ(wait_for_status(s.port(), "stories", "sleeping"), "sleeping");

  for (const json& bad : {json("5 minutes"), json("m"), json::array(), json(true)}) {
    const HttpReply r = chat_keeping(bad);
    EXPECT_EQ(r.status, 400) << bad;
    EXPECT_NE(r.body.find("keep_alive"), std::string::npos) << r.body;
  }
}

// Ollama's load and unload requests: no prompt (or no messages) loads the model; with keep_alive 0
// too it unloads it once no request holds it, and a model that is not loaded is not loaded to be
// unloaded. Both answer at once, done_reason "load" or "unload".
TEST(Router, OllamaUnloadRequestUnloadsWithoutLoading) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  RunningService s(router_options(dir));
  ASSERT_TRUE(s.ready());
  const std::string before = status_of(s.port(), "stories");
  ASSERT_NE(before, "loaded");
  HttpReply r = post_json(s.port(), "/api/generate", {{"model", "stories"}, {"keep_alive", 0}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["done_reason"], "unload") << r.body;
  EXPECT_EQ(r.json()["response"], "") << r.body;
  EXPECT_EQ(r.json()["model"], "stories") << r.body;
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_EQ(status_of(s.port(), "stories"), before) << "not loaded to be unloaded";

  r = post_json(s.port(), "/api/generate", {{"model", "stories"}, {"prompt", ""}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["done_reason"], "load") << r.body;
  EXPECT_EQ(status_of(s.port(), "stories"), "loaded");

  r = post_json(s.port(), "/api/chat", {{"model", "stories"}, {"messages", json::array()}, {"keep_alive", "0s"}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["done_reason"], "unload") << r.body;
  EXPECT_EQ(r.json()["message"]["content"], "") << r.body;
  EXPECT_EQ(wait_for_status(s.port(), "stories", "sleeping"), "sleeping");

  // with something to generate, keep_alive 0 only unloads after the answer
  r = post_json(s.port(), "/api/chat", {{"model", "stories"}, {"messages", one_user_message("Hi")}, {"keep_alive", 0},
                                        {"stream", false}, {"options", {{"num_predict", 2}}}});
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.json()["done_reason"], "length") << r.body;
  EXPECT_EQ(r.json()["eval_count"], 2) << r.body;
  EXPECT_EQ(wait_for_status(s.port(), "stories", "sleeping"), "sleeping");

  r = post_json(s.port(), "/api/generate", {{"model", "nope"}, {"keep_alive", 0}});
  EXPECT_EQ(r.status, 404) << r.body;
  EXPECT_TRUE(r.json()["error"].is_string()) << r.body;
  r = post_json(s.port(), "/api/generate", {{"model", "stories"}, {"keep_alive", "soon"}});
  EXPECT_EQ(r.status, 400) << r.body;
  EXPECT_NE(r.body.find("keep_alive"), std::string::npos) << r.body;
}

TEST(Router, ExplicitLoadAndUnloadWithoutAutoload) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  o.router.autoload = false;
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  HttpReply r = chat(s.port(), "stories");
  EXPECT_EQ(r.status, 400);
  EXPECT_EQ(r.json()["error"]["code"], "model_not_loaded");
  EXPECT_EQ(post_json(s.port(), "/models/load", {{"model", "stories"}}).status, 200);
  wait_for_status(s.port(), "stories", "loaded");
  EXPECT_EQ(chat(s.port(), "stories").status, 200);
  EXPECT_EQ(post_json(s.port(), "/models/unload", {{"model", "stories"}}).status, 200);
  EXPECT_EQ(wait_for_status(s.port(), "stories", "unloaded"), "unloaded");
  EXPECT_EQ(post_json(s.port(), "/models/load", json::object()).status, 400);
}

TEST(Router, UnloadingWaitsForARunningRequestThenCancelsIt) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  o.shutdown_grace_s = 1;
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  ASSERT_EQ(chat(s.port(), "stories").status, 200);
  HttpReply streamed;
  std::thread client([&] {
    streamed = post_json(s.port(), "/v1/completions",
                         {{"model", "stories"}, {"prompt", "Once"}, {"max_tokens", 100000}, {"stream", true},
                          {"ignore_eos", true}});
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(post_json(s.port(), "/models/unload", {{"model", "stories"}}).status, 200);
  client.join();  // cancelled after the grace second (the context of 256 may end it first)
  EXPECT_EQ(streamed.status, 200);
  EXPECT_EQ(wait_for_status(s.port(), "stories", "unloaded"), "unloaded");
  EXPECT_EQ(chat(s.port(), "stories").status, 200);  // and loads again
}

TEST(Router, AnAliasNamesTheSameModel) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  const server::ModelOptions base = o.model;
  o.router.options_for = [base](const std::string& id, const std::string& path) {
    server::ModelOptions m = base;
    m.path = path;
    m.alias = id == "stories" ? "storyteller" : id;
    return m;
  };
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  EXPECT_EQ(chat(s.port(), "storyteller").status, 200);
  EXPECT_EQ(status_of(s.port(), "stories"), "loaded");  // by id and by alias: one model
  EXPECT_EQ(chat(s.port(), "stories").status, 200);
  EXPECT_EQ(http_request(s.port(), "GET", "/v1/models/storyteller").json()["id"], "stories");
}

TEST(Router, ServesDifferentModelsConcurrently) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  RunningService s(router_options(dir));
  ASSERT_TRUE(s.ready());
  std::vector<int> statuses(6);
  std::vector<std::thread> clients;
  for (int i = 0; i < 6; ++i) {
    clients.emplace_back([&, i] {
      statuses[i] = i % 3 == 2 ? embed(s.port(), "bert").status
                               : chat(s.port(), i % 3 == 0 ? "stories" : "sub/stories-v1", 16).status;
    });
  }
  for (std::thread& t : clients) t.join();
  for (int st : statuses) EXPECT_EQ(st, 200);
}

TEST(Router, ACommandLineModelIsLoadedAtStartBesideTheDirectory) {
  GGUFD_REQUIRE_SHARED(kStories);
  const ModelsDir dir;
  server::ServiceOptions o = router_options(dir);
  o.model.path = shared_path("models/llama-2-tiny-random.gguf");
  o.model.alias = "tiny";
  RunningService s(o);
  ASSERT_TRUE(s.ready());
  EXPECT_EQ(status_of(s.port(), "tiny"), "loaded");
  EXPECT_EQ(status_of(s.port(), "stories"), "unloaded");
  EXPECT_EQ(chat(s.port(), "tiny").status, 200);
}

}  // namespace
}  // namespace ggufd::test
