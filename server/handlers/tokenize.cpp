// POST /tokenize {"content", "add_special"?, "parse_special"?, "with_pieces"?} -> {"tokens"}
// POST /detokenize {"tokens": [ids]} -> {"content"}
#include <nlohmann/json.hpp>

#include "engine/tokenizer/tokenizer.h"
#include "server/api_error.h"
#include "server/handlers/handlers.h"
#include "server/request_json.h"

namespace server {

void add_tokenize_routes(Router& router, App& app) {
  router.add("POST", "/tokenize", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    ctx.stats->endpoint = "/tokenize";
    require_ready(app);
    const nlohmann::json body = parse_object(req.body);
    const std::string content = get_string(body, "content").value_or("");
    if (!body.contains("content")) throw invalid_field("content", "'content' is required");
    const bool add_special = get_bool(body, "add_special").value_or(false);
    const bool parse_special = get_bool(body, "parse_special").value_or(true);
    const bool with_pieces = get_bool(body, "with_pieces").value_or(false);
    const std::vector<int32_t> ids = app.tokenizer->encode(content, add_special, parse_special);
    nlohmann::json tokens = nlohmann::json::array();
    for (int32_t id : ids) {
      if (with_pieces) {
        tokens.push_back({{"id", id}, {"piece", std::string(app.tokenizer->piece(id))}});
      } else {
        tokens.push_back(id);
      }
    }
    co_return HttpResponse::json(200, dump_json({{"tokens", std::move(tokens)}}));
  });
  router.add("POST", "/detokenize", [&app](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
    ctx.stats->endpoint = "/detokenize";
    require_ready(app);
    const nlohmann::json body = parse_object(req.body);
    const std::vector<int32_t> ids = get_token_ids(body, "tokens", app.tokenizer->n_vocab()).value_or(std::vector<int32_t>{});
    co_return HttpResponse::json(200, dump_json({{"content", app.tokenizer->decode(ids)}}));
  });
}

}  // namespace server
