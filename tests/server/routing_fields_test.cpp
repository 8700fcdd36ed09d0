// What the router reads before a request is parsed: the model id and Ollama's keep_alive
// (server/api/request_json.h peek_routing, server/api/keep_alive.h).
#include <gtest/gtest.h>

#include <string>

#include "server/api/api_error.h"
#include "server/api/keep_alive.h"
#include "server/api/request_json.h"

namespace server {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

TEST(RoutingFields, ReadsTopLevelModelAndKeepAliveOnly) {
  RoutingFields f = peek_routing(R"({"messages":[{"model":"no","keep_alive":1}],"keep_alive":"5m","model":"m"})");
  EXPECT_EQ(f.model, "m");
  EXPECT_EQ(f.keep_alive, json("5m"));
  f = peek_routing(R"({"model":"m","options":{"keep_alive":0}})");
  EXPECT_EQ(f.model, "m");
  EXPECT_FALSE(f.keep_alive);
  f = peek_routing(R"({"keep_alive":-1,"model":7})");
  EXPECT_FALSE(f.model);
  EXPECT_EQ(f.keep_alive, json(-1));
  EXPECT_EQ(peek_routing(R"({"keep_alive":{"a":1},"model":"m"})").keep_alive, json(nullptr));  // kept to be refused
  EXPECT_EQ(peek_routing(R"({"keep_alive":[1],"model":"m"})").keep_alive, json(nullptr));
  EXPECT_FALSE(peek_routing("\"model\"").model);
  EXPECT_FALSE(peek_routing("not json").model);
  EXPECT_EQ(peek_routing(R"({"model":"m", broken)").model, "m");  // the request's own parse says what is wrong
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_FALSE(peek_routing(R"({"a":)" + deep + R"(,"model":"m"})").keep_alive);  // iterative
}

// Ollama's load and unload requests have no input: no prompt, "" or null, no messages or [].
TEST(RoutingFields, WhetherThereIsInputToGenerateFrom) {
  auto input = [](const std::string& body) { return peek_routing(body, true).has_input; };
  EXPECT_FALSE(input(R"({"model":"m","keep_alive":0})"));
  EXPECT_FALSE(input(R"({"model":"m","prompt":"","keep_alive":0})"));
  EXPECT_FALSE(input(R"({"model":"m","prompt":null,"messages":[]})"));
  EXPECT_FALSE(input(R"({"model":"m","options":{"prompt":"x"},"x":{"messages":[1]}})"));  // top level only
  EXPECT_TRUE(input(R"({"model":"m","prompt":"Hi","keep_alive":0})"));
  EXPECT_TRUE(input(R"({"messages":[{"role":"user","content":"Hi"}],"keep_alive":0,"model":"m"})"));
  EXPECT_TRUE(input(R"({"messages":[[]],"model":"m"})"));
  EXPECT_TRUE(input(R"({"messages":[null],"model":"m"})"));
  // what the request's own parse refuses is input: it gets that 400, not an unload
  EXPECT_TRUE(input(R"({"prompt":7,"model":"m"})"));
  EXPECT_TRUE(input(R"({"prompt":["a"],"model":"m"})"));
  EXPECT_TRUE(input(R"({"messages":{},"model":"m"})"));
  EXPECT_TRUE(input(R"({"messages":"Hi","model":"m"})"));
  EXPECT_FALSE(peek_routing(R"({"prompt":"Hi","model":"m"})").has_input);  // read only when asked
  RoutingFields f = peek_routing(R"({"messages":[],"keep_alive":"0","model":"m","prompt":"x"})", true);
  EXPECT_EQ(f.model, "m");
  EXPECT_EQ(f.keep_alive, json("0"));
  EXPECT_TRUE(f.has_input);
}

TEST(RoutingFields, KeepAliveIsOllamasDuration) {
  EXPECT_EQ(parse_keep_alive(json(0)), milliseconds(0));
  EXPECT_EQ(parse_keep_alive(json(300)), milliseconds(300000));
  EXPECT_EQ(parse_keep_alive(json(1.5)), milliseconds(1500));
  EXPECT_EQ(parse_keep_alive(json(-1)), milliseconds(-1));
  EXPECT_EQ(parse_keep_alive(json("0")), milliseconds(0));
  EXPECT_EQ(parse_keep_alive(json("-1")), milliseconds(-1));
  EXPECT_EQ(parse_keep_alive(json("-1m")), milliseconds(-1));
  EXPECT_EQ(parse_keep_alive(json("5m")), milliseconds(300000));
  EXPECT_EQ(parse_keep_alive(json("1h30m")), milliseconds(5400000));
  EXPECT_EQ(parse_keep_alive(json("1.5h")), milliseconds(5400000));
  EXPECT_EQ(parse_keep_alive(json("250ms")), milliseconds(250));
  EXPECT_EQ(parse_keep_alive(json("90s")), milliseconds(90000));
  EXPECT_EQ(parse_keep_alive(json("100000h")), milliseconds(-1));  // over ten years: forever
  EXPECT_EQ(parse_keep_alive(json(1e300)), milliseconds(-1));
  for (const json& bad : {json("5 minutes"), json("m"), json(""), json("5x"), json("1..5s"), json(true), json(nullptr), json::array(), json("5m-")}) {
    try {
      parse_keep_alive(bad);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const ApiError& e) {
      EXPECT_EQ(e.status(), 400);
      EXPECT_NE(std::string(e.what()).find("keep_alive"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace server
