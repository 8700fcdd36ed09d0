// `ggufd template`: shared template cases through the command line, and a raise_exception error.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/support/run.h"
#include "tests/support/shared.h"

namespace {

using ggufd::test::run_ggufd;
using ggufd::test::shared_path;
using nlohmann::json;

json load_cases(const std::string& name) {
  std::ifstream in(shared_path("templates/" + name + ".json"));
  return json::parse(in);
}

TEST(TemplateCommand, RendersSharedCaseExactly) {
  GGUFD_REQUIRE_SHARED("templates/Qwen-Qwen2.5-7B-Instruct.json");
  const json cases = load_cases("Qwen-Qwen2.5-7B-Instruct");
  for (const json& c : cases["cases"]) {
    const json input = {{"messages", c["messages"]}, {"add_generation_prompt", c["add_generation_prompt"]},
                        {"bos_token", c["bos_token"]}, {"eos_token", c["eos_token"]}};
    const auto r = run_ggufd("template --template " + shared_path("templates/Qwen-Qwen2.5-7B-Instruct.jinja"),
                             input.dump());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << c["name"];
  }
}

TEST(TemplateCommand, RendersSharedToolCasesAsTheServerDoes) {
  GGUFD_REQUIRE_SHARED("templates/tools/Qwen-Qwen3-0.6B.json");
  std::ifstream in(shared_path("templates/tools/Qwen-Qwen3-0.6B.json"));
  const nlohmann::ordered_json cases = nlohmann::ordered_json::parse(in);
  for (const auto& c : cases["cases"]) {
    // as a client sends them: arguments as JSON strings, null content, keys in their order
    const nlohmann::ordered_json input = {{"messages", c["messages"]}, {"tools", c["tools"]},
                                          {"add_generation_prompt", true}, {"bos_token", c["bos_token"]},
                                          {"eos_token", c["eos_token"]}};
    const auto r = run_ggufd("template --template " + shared_path("templates/Qwen-Qwen3-0.6B.jinja"), input.dump());
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.out, c["expected"].get<std::string>()) << c["name"];
  }
}

TEST(TemplateCommand, RaiseExceptionExitsNonZeroWithTheMessage) {
  GGUFD_REQUIRE_SHARED("templates/google-gemma-2-2b-it.json");
  const json cases = load_cases("google-gemma-2-2b-it");
  const json& c = cases["cases"][0];
  ASSERT_TRUE(c.contains("expected_error"));
  const json input = {{"messages", c["messages"]}, {"add_generation_prompt", true}};
  const auto r = run_ggufd("template --template " + shared_path("templates/google-gemma-2-2b-it.jinja"),
                           input.dump());
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(c["expected_error"].get<std::string>()), std::string::npos) << r.err;
}

TEST(TemplateCommand, ModelWithoutTemplateUsesChatML) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const json input = {{"messages", {{{"role", "user"}, {"content", "Hi"}}}}, {"add_generation_prompt", true}};
  const auto r = run_ggufd("template -m " + shared_path("models/stories260K.gguf"), input.dump());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
}

}  // namespace
