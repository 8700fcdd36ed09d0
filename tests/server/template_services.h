// Services on stories260K, one per chat template, for suites parameterized over templates (tool
// calling with each syntax), and the checks of their tool-call replies.
#pragma once

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "tests/server/fixture.h"
#include "tests/support/json_schema_check.h"

namespace ggufd::test {

// A test suite's services: Start() one per template file ("" : the model's own template), in
// SetUpTestSuite(); Stop() in TearDownTestSuite(). Owns them; used by one test thread.
class TemplateServices {
 public:
  void start(const std::vector<std::string>& template_files) {
    if (!std::filesystem::exists(shared_path(kStories))) return;
    for (const std::string& file : template_files) {
      server::ServiceOptions o = test_options();
      o.model.engine.n_ctx = 2048;
      o.model.engine.n_slots = 2;
      if (!file.empty()) {
        std::ifstream in(file);
        std::stringstream ss;
        ss << in.rdbuf();
        o.model.chat_template = ss.str();
        o.model.chat_template_origin = "file";
      }
      services_.push_back(std::make_unique<RunningService>(o));
    }
  }
  void stop() { services_.clear(); }
  // The i-th service, checked ready (in a test's SetUp).
  RunningService& at(size_t i) const { return *services_.at(i); }
  void expect_ready(size_t i) const {
    GGUFD_REQUIRE_SHARED(kStories);
    ASSERT_LT(i, services_.size());
    ASSERT_TRUE(at(i).ready()) << at(i).service().load_error();
  }

 private:
  std::vector<std::unique_ptr<RunningService>> services_;
};

// The calls of a non-streamed reply, checked: finish_reason tool_calls, at least one call, each a
// function among `tools` (OpenAI tool definitions) with arguments that validate against its
// parameters.
inline nlohmann::json checked_calls(const nlohmann::json& reply, const nlohmann::json& tools) {
  using nlohmann::json;
  EXPECT_TRUE(reply.contains("choices")) << reply.dump();
  if (!reply.contains("choices")) return json::array();
  const json& c = reply["choices"][0];
  EXPECT_EQ(c["finish_reason"], "tool_calls") << reply.dump();
  json calls = c["message"].value("tool_calls", json::array());
  EXPECT_FALSE(calls.empty()) << reply.dump();
  for (const json& call : calls) {
    const std::string name = call["function"]["name"];
    const json* schema = nullptr;
    for (const json& t : tools) {
      if (t["function"]["name"] == name) schema = &t["function"]["parameters"];
    }
    EXPECT_NE(schema, nullptr) << name << " was not offered";
    if (schema == nullptr) continue;
    const json args = json::parse(call["function"]["arguments"].get<std::string>());
    EXPECT_EQ(test_support::schema_violation(args, *schema), "") << args.dump();
  }
  return calls;
}

}  // namespace ggufd::test
