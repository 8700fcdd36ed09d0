#include "server/api/app.h"

#include <algorithm>

#include "engine/text/chat_template.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "engine/text/harmony.h"
#include "engine/text/reasoning.h"
#include "server/api/api_error.h"
#include "server/api/chat_prompt.h"
#include "server/api/request_json.h"

namespace server {

void require_model(const App& app, const std::string& id) {
  if (id != app.model_id) {
    throw ApiError(404, "The model '" + excerpt(id) + "' does not exist", "invalid_request_error", "model",
                   "model_not_found");
  }
}

ChatFeatures detect_chat_features(const engine::ChatTemplate& tmpl, const engine::Tokenizer* tok) {
  ChatFeatures f;
  const std::string& src = tmpl.source();
  f.syntax = engine::tools::detect_tool_syntax(src, tok != nullptr && engine::HarmonyParser::applies_to(*tok));
  f.thinks = engine::template_thinks(src);
  f.think_tags = engine::template_think_tags(src);
  const auto control_tokens = [tok](const std::vector<std::string>& texts) {
    std::vector<int32_t> ids;
    for (const std::string& text : texts) {
      const int32_t id = tok != nullptr ? tok->find_token(text) : -1;
      if (id >= 0 && tok->is_control(id) && !tok->is_eog(id)) ids.push_back(id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
  };
  f.marker_tokens = control_tokens(engine::tools::syntax_texts(f.syntax));
  if (f.thinks && f.think_tags.open == engine::kGemma4ThoughtTags.open) {
    f.reasoning_tokens = control_tokens({"<|channel>", "<channel|>"});
  }
  // a system message the template renders: its text shows in the prompt
  const std::string probe = "ggufd system probe 7Q";
  engine::ChatInput in;
  in.messages = to_jinja(nlohmann::ordered_json{{{"role", "system"}, {"content", probe}}, {{"role", "user"}, {"content", "hi"}}});
  in.add_generation_prompt = true;
  if (tok != nullptr && tok->bos() >= 0) in.bos_token = std::string(tok->token_text(tok->bos()));
  if (tok != nullptr && tok->eos() >= 0) in.eos_token = std::string(tok->token_text(tok->eos()));
  try {
    f.system_role = tmpl.render(in).find(probe) != std::string::npos;
  } catch (const std::exception&) {
    f.system_role = false;
  }
  return f;
}

ChatFeatures detect_chat_features(const App& app) { return detect_chat_features(*app.chat_template, app.tokenizer); }

void require_generation(const App& app) {
  if (!app.generates) {
    throw ApiError(400, "model " + app.model_id + " is an embedding model (" + engine::pooling_name(app.pooling) +
                            " pooling); it cannot generate text: use " +
                            (app.pooling == engine::PoolingType::kRank ? "/v1/rerank" : "/v1/embeddings"));
  }
}

std::vector<std::string> capabilities(const App& app) {
  std::vector<std::string> c;
  if (app.generates) c = {"completion", "chat"};
  if (app.pooling == engine::PoolingType::kRank) {
    c.push_back("rerank");
  } else if (app.pooling != engine::PoolingType::kNone) {
    c.push_back("embeddings");
  }
  if (app.vision) c.push_back("vision");
  return c;
}

nlohmann::json model_kind_json(const App& app) {
  nlohmann::json inputs = {"text"};
  if (app.vision) inputs.push_back("image");
  return {{"capabilities", capabilities(app)}, {"pooling", engine::pooling_name(app.pooling)}, {"n_embd", app.n_embd},
          {"architecture", app.architecture}, {"input_modalities", inputs}};
}

}  // namespace server
