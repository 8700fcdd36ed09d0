// POST /v1/responses (OpenAI's Responses API), POST /v1/responses/input_tokens, and
// GET / DELETE /v1/responses/{id} over the bounded store of recent responses.
#include "server/api/openai_responses/response_store.h"
#include "server/api/openai_responses/responses_request.h"
#include "server/api/openai_responses/responses_response.h"
#include "server/api/request_json.h"
#include "server/event_stream.h"
#include "server/generation.h"
#include "server/handlers/handlers.h"
#include "server/remote_media.h"

namespace server {

namespace {

ApiError no_such_response(const std::string& id) {
  return ApiError(404, "Response with id '" + excerpt(id) + "' not found (never stored, deleted, or dropped from the "
                       "server's bounded store).",
                  "invalid_request_error", std::nullopt, "not_found");
}

net::awaitable<HttpResponse> create(ModelRegistry& models, HttpRequest& req, RequestContext& ctx) {
  const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
  App& app = lease->app();
  require_generation(app);
  auto request = std::make_shared<const ResponsesRequest>(co_await prepare_in_steps<ResponsesRequest>(
      app, ctx, [&app, &req](ResponsesRequest& out) { return translate_responses(app, req.body, out); },
      [&app](CoreRequest core, ResponsesRequest& out) { prepare_responses(app, std::move(core), out); }));
  HttpResponse response;
  if (request->failure) {  // streamed, and the prompt does not fit: the stream says so
    response.content_type = "text/event-stream";
    response.stream = make_fixed_stream(responses_failed_stream(app, request, *request->failure));
  } else {
    response = co_await serve_generation(app, ctx, *request, std::make_shared<const ResponsesFormatter>(app, request));
  }
  name_ignored_fields(response, request->ignored_fields);
  response.hold = lease;
  co_return response;
}

}  // namespace

void add_responses_routes(Router& router, ModelRegistry& models) {
  router.add("POST", "/v1/responses",
             [&models](HttpRequest& req, RequestContext& ctx) { return create(models, req, ctx); }, RouteOptions::json_api());
  router.add("POST", "/v1/responses/input_tokens",
             [&models](HttpRequest& req, RequestContext& ctx) -> net::awaitable<HttpResponse> {
               const std::shared_ptr<ModelLease> lease = co_await lease_for_body(models, req, ctx);
               App& app = lease->app();
               const nlohmann::json body = co_await prepare_in_steps<nlohmann::json>(
                   app, ctx,
                   [&app, &req](nlohmann::json&) {
                     ResponsesRequest unused;  // its id and echo: only for a response
                     return translate_responses(app, req.body, unused);
                   },
                   [&app](CoreRequest core, nlohmann::json& out) { out = count_response_tokens(app, core); });
               co_return HttpResponse::json(200, dump_json(body));
             },
             RouteOptions::json_api());
  router.add("GET", "/v1/responses/{id}", [&models](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    const std::string& id = req.params["id"];
    ResponseStore* store = models.responses();
    std::shared_ptr<const StoredResponse> r = store != nullptr ? store->get(id) : nullptr;
    if (!r) throw no_such_response(id);
    co_return HttpResponse::json(200, dump_json(r->object));
  });
  router.add("DELETE", "/v1/responses/{id}", [&models](HttpRequest& req, RequestContext&) -> net::awaitable<HttpResponse> {
    const std::string& id = req.params["id"];
    ResponseStore* store = models.responses();
    if (store == nullptr || !store->erase(id)) throw no_such_response(id);
    co_return HttpResponse::json(200, dump_json({{"id", id}, {"object", "response.deleted"}, {"deleted", true}}));
  });
}

}  // namespace server
