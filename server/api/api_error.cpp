#include "server/api/api_error.h"

namespace server {

nlohmann::json error_json(const ApiError& e) {
  using nlohmann::json;
  return {{"error",
           {{"message", e.what()},
            {"type", e.type()},
            {"param", e.param() ? json(*e.param()) : json(nullptr)},
            {"code", e.code() ? json(*e.code()) : json(nullptr)}}}};
}

}  // namespace server
