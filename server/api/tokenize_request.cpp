#include "server/api/tokenize_request.h"

#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;

std::string tokenize_response(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  if (!body.contains("content")) throw invalid_field("content", "'content' is required");
  const std::string content = get_string(body, "content").value_or("");
  const bool add_special = get_bool(body, "add_special").value_or(false);
  const bool parse_special = get_bool(body, "parse_special").value_or(true);
  const bool with_pieces = get_bool(body, "with_pieces").value_or(false);
  const std::vector<int32_t> ids = app.tokenizer->encode(content, add_special, parse_special);
  std::string out = "{\"tokens\":[";
  out.reserve(out.size() + ids.size() * (with_pieces ? 24 : 6) + 2);
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) out += ',';
    if (!with_pieces) {
      out += std::to_string(ids[i]);
      continue;
    }
    out += "{\"id\":" + std::to_string(ids[i]) + ",\"piece\":";
    out += dump_json(std::string(app.tokenizer->piece(ids[i])));
    out += '}';
  }
  out += "]}";
  return out;
}

std::string detokenize_response(const App& app, std::string_view text) {
  const json body = parse_object(text, app.settings.max_json_depth);
  const std::vector<int32_t> ids =
      get_token_ids(body, "tokens", app.tokenizer->n_vocab()).value_or(std::vector<int32_t>{});
  return dump_json({{"content", app.tokenizer->decode(ids)}});
}

}  // namespace server
