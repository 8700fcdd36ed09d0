// A real ggufd Service on 127.0.0.1 (free port) serving a shared model, for endpoint tests.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "server/service.h"
#include "tests/support/http_client.h"
#include "tests/support/shared.h"

namespace ggufd::test {

inline constexpr const char* kStories = "models/stories260K.gguf";

// RFC 4648 base64 of `bytes` (image parts in requests).
inline std::string base64(const std::string& bytes) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    acc = acc << 8 | c;
    bits += 8;
    while (bits >= 6) out += k[(acc >> (bits -= 6)) & 63];
  }
  if (bits > 0) out += k[(acc << (6 - bits)) & 63];
  while (out.size() % 4) out += '=';
  return out;
}

inline server::ServiceOptions test_options(const std::string& model = kStories) {
  server::ServiceOptions o;
  o.model.path = shared_path(model);
  o.model.alias = "stories";
  o.http.host = "127.0.0.1";
  o.http.port = 0;
  o.model.engine.n_slots = 4;
  o.model.engine.n_ctx = 256;
  o.model.engine.max_queue = 8;
  o.model.engine.prefill_chunk = 64;
  o.model.engine.n_threads = 2;
  o.shutdown_grace_s = 5;
  return o;
}

// Starts a Service and stops it at the end of the scope.
class RunningService {
 public:
  explicit RunningService(server::ServiceOptions options) : service_(std::move(options)) {
    service_.start();
    ready_ = service_.wait_ready();
  }
  ~RunningService() {
    service_.shutdown();
    service_.wait();
  }
  bool ready() const { return ready_; }
  uint16_t port() const { return service_.port(); }
  server::Service& service() { return service_; }

 private:
  server::Service service_;
  bool ready_ = false;
};

// A service on the shared model with test_options() changed by `edit` (check ready() first).
inline std::unique_ptr<RunningService> start_service(
    const std::function<void(server::ServiceOptions&)>& edit = nullptr) {
  server::ServiceOptions o = test_options();
  if (edit) edit(o);
  return std::make_unique<RunningService>(std::move(o));
}

// The value of the sample `name` on the service's /metrics (the first series: without labels, or
// of the first model), or -1 when it is absent.
inline double metric(uint16_t port, const std::string& name) {
  const std::string body = "\n" + http_request(port, "GET", "/metrics").body;
  for (size_t at = body.find("\n" + name); at != std::string::npos; at = body.find("\n" + name, at + 1)) {
    const size_t end = at + 1 + name.size();
    if (body[end] == ' ') return std::stod(body.substr(end + 1));
    if (body[end] == '{') return std::stod(body.substr(body.find("} ", end) + 2));
  }
  return -1;
}

// A chat's messages: one user message saying `text`.
inline nlohmann::json one_user_message(const std::string& text) {
  return nlohmann::json::array({{{"role", "user"}, {"content", text}}});
}

// The text of a streamed OpenAI reply's chunks (chat deltas or completion text), in order.
inline std::string streamed_text(const HttpReply& r) {
  std::string text;
  for (const std::string& e : r.events()) {
    if (e == "[DONE]") break;
    const nlohmann::json chunk = nlohmann::json::parse(e);
    for (const nlohmann::json& c : chunk["choices"]) {
      if (c.contains("text")) text += c["text"].get<std::string>();
      if (c.contains("delta") && c["delta"].contains("content") && c["delta"]["content"].is_string()) {
        text += c["delta"]["content"].get<std::string>();
      }
    }
  }
  return text;
}

// One service shared by all tests of a suite (loading it per test would dominate the run time),
// on test_options() changed by Suite::edit(ServiceOptions&), a static function of the suite.
template <class Suite>
class EditedServerTest : public testing::Test {
 public:
  static uint16_t port() { return running_->port(); }

 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(shared_path(kStories))) return;
    running_ = start_service(&Suite::edit).release();
  }
  static void TearDownTestSuite() {
    delete running_;
    running_ = nullptr;
  }
  void SetUp() override {
    GGUFD_REQUIRE_SHARED(kStories);
    ASSERT_NE(running_, nullptr);
    ASSERT_TRUE(running_->ready()) << running_->service().load_error();
  }

  static inline RunningService* running_ = nullptr;
};

// The same on test_options() as they are.
class ServerTest : public EditedServerTest<ServerTest> {
 public:
  static void edit(server::ServiceOptions&) {}
};

}  // namespace ggufd::test
