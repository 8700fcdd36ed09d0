// A blocking HTTP/1.1 client for tests, plus SSE parsing. Boost.Beast stays in http_client.cpp
// (the test_support library): this header is included by every server test, and Beast's
// templates instantiated in each of them cost more compile time than the tests themselves.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>
#include <chrono>
#include <functional>

namespace ggufd::test {

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names

  nlohmann::json json() const { return nlohmann::json::parse(body); }
  // The "data:" payloads of a server-sent-event body, in order.
  std::vector<std::string> events() const;
};

// One request on a fresh connection to 127.0.0.1:port; the whole reply (body up to 64 MiB).
// A body is sent as application/json unless `headers` say otherwise. Throws on a socket error.
HttpReply http_request(uint16_t port, const std::string& method, const std::string& target,
                       const std::string& body = "", const std::map<std::string, std::string>& headers = {});

inline HttpReply post_json(uint16_t port, const std::string& target, const nlohmann::json& body,
                           const std::map<std::string, std::string>& headers = {}) {
  return http_request(port, "POST", target, body.dump(), headers);
}

// Sends raw bytes and returns everything the server answers until it closes (or 5 s pass).
std::string raw_exchange(uint16_t port, const std::string& bytes);

// Watches a never-ending response (server-sent events): GETs `target` and returns the raw bytes
// received (headers and chunked framing included) once `done` says so of them, or when
// `timeout` passes, then hangs up. `during` (optional) runs once the response has begun.
std::string watch_stream(uint16_t port, const std::string& target, const std::function<bool(const std::string&)>& done,
                         std::chrono::milliseconds timeout, const std::function<void()>& during = {});

}  // namespace ggufd::test
