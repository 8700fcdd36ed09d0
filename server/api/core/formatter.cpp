#include "server/api/core/formatter.h"

#include <chrono>
#include <random>

#include "server/api/request_json.h"

namespace server {

std::string sse_data(const nlohmann::json& data) { return "data: " + dump_json(data) + "\n\n"; }

std::string sse_event(std::string_view name, const nlohmann::json& data) {
  std::string out = "event: ";
  out += name;
  out += "\ndata: " + dump_json(data) + "\n\n";
  return out;
}

std::string make_id(const std::string& prefix) {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = prefix;
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof kAlphabet - 1)];
  return id;
}

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace server
