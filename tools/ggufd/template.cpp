// `ggufd template (-m FILE | --template FILE.jinja)`: renders a chat from stdin JSON
// {messages, add_generation_prompt?, bos_token?, eos_token?, tools?, reasoning_effort?,
// chat_template_kwargs?} and prints the prompt. Messages, tools and variables go to the template as
// the server hands them over (keys in the order given, tool-call arguments parsed, the tool syntax
// and system-message support found by the server's own detect_chat_features, the generic tool
// prompt for templates that know no tools).
#include <cstdio>
#include <iostream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "engine/text/chat_template.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "server/api/app.h"
#include "server/api/chat_prompt.h"
#include "server/api/core/request.h"
#include "server/api/request_json.h"
#include "server/api/tool_request.h"
#include "tools/ggufd/commands.h"
#include "tools/ggufd/files.h"

namespace ggufd {

namespace {

struct Options {
  std::string model;
  std::string template_file;
};

// Template text and, with -m, the model's tokenizer (its BOS/EOS text are the defaults).
std::string load_template(const Options& o, std::optional<engine::Tokenizer>& tok) {
  if (!o.template_file.empty()) return read_text_file(o.template_file);
  const gguf::File file = gguf::File::open(o.model);
  tok.emplace(engine::Tokenizer::from_gguf(file));
  const auto t = file.find_string("tokenizer.chat_template");
  return t ? std::string(*t) : std::string(engine::kChatMLTemplate);
}

}  // namespace

Command add_template(CLI::App& app) {
  auto o = std::make_shared<Options>();
  auto* source = app.add_option_group("source", "where the template comes from");
  source->add_option("-m,--model", o->model, "GGUF file whose tokenizer.chat_template to use (ChatML if none)");
  source->add_option("--template", o->template_file, "a Jinja template file");
  source->require_option(1);
  return [o] {
    std::optional<engine::Tokenizer> tok;
    const engine::ChatTemplate tmpl = engine::ChatTemplate::parse(load_template(*o, tok));
    const std::string input((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    (void)server::parse_object(input, server::kDefaultMaxJsonDepth);  // JSON, an object, within the depth limit
    const nlohmann::ordered_json j = nlohmann::ordered_json::parse(input);
    if (!j.contains("messages")) {
      throw std::invalid_argument("stdin must be a JSON object with \"messages\"");
    }
    const server::ToolRequest tools = server::parse_tool_request(j);
    // what the server finds in the same template (and vocabulary, with -m)
    const server::ChatFeatures features = server::detect_chat_features(tmpl, tok ? &*tok : nullptr);
    engine::ChatInput in;
    in.messages = server::to_jinja(server::template_messages(j["messages"], tools, features));
    in.add_generation_prompt = j.value("add_generation_prompt", false);
    if (tok && tok->bos() >= 0) in.bos_token = std::string(tok->token_text(tok->bos()));
    if (tok && tok->eos() >= 0) in.eos_token = std::string(tok->token_text(tok->eos()));
    in.bos_token = j.value("bos_token", in.bos_token);
    in.eos_token = j.value("eos_token", in.eos_token);
    server::ReasoningOptions reasoning;  // as the chat route reads them (its checks are the server's)
    if (const auto e = j.find("reasoning_effort"); e != j.end() && !e->is_null()) {
      static const std::set<std::string> kEfforts = {"none", "minimal", "low", "medium", "high"};
      if (!e->is_string() || kEfforts.count(e->get<std::string>()) == 0) {
        throw std::invalid_argument("'reasoning_effort' must be one of none, minimal, low, medium, high");
      }
      reasoning.effort = e->get<std::string>();
    }
    const auto kwargs = j.find("chat_template_kwargs");
    if (kwargs != j.end() && !kwargs->is_null() && !kwargs->is_object()) {
      throw std::invalid_argument("'chat_template_kwargs' must be an object");
    }
    in.extra_variables = server::to_jinja(server::template_variables(
        reasoning, kwargs != j.end() && kwargs->is_object() ? *kwargs : nlohmann::ordered_json::object(), ""));
    if (!tools.tools.empty() && engine::tools::template_renders_tools(features.syntax)) {
      in.tools = server::to_jinja(tools.tools_json);
    }
    const std::string out = tmpl.render(in);
    std::fwrite(out.data(), 1, out.size(), stdout);
    return 0;
  };
}

}  // namespace ggufd
