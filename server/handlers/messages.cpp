// POST /v1/messages (Anthropic's Messages API; `?beta=true` too) and POST /v1/messages/count_tokens,
// with Anthropic's error shape. anthropic-version / anthropic-beta headers are accepted and not
// needed; x-api-key works as well as Authorization: Bearer (http_server.cpp).
#include "server/api/anthropic_messages/messages_request.h"
#include "server/api/anthropic_messages/messages_response.h"
#include "server/api/request_json.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/remote_media.h"

namespace server {

void add_messages_routes(Router& router, ModelRegistry& models) {
  const RouteOptions options = RouteOptions::json_api().with_errors(anthropic_error_json);
  router.add("POST", "/v1/messages", generation_handler<MessagesRequest, MessagesFormatter>(models, translate_messages),
             options);
  router.add("POST", "/v1/messages/count_tokens",
             [&models](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
               const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
               App& app = lease->app();
               const nlohmann::json body = co_await prepare_in_steps<nlohmann::json>(
                   app, ctx, [&app, &req](nlohmann::json&) { return translate_message_count(app, req.body); },
                   [&app](CoreRequest core, nlohmann::json& out) { out = count_message_tokens(app, core); });
               co_return HttpResponse::json(200, dump_json(body));
             },
             options);
}

}  // namespace server
