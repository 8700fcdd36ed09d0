#include "server/api/output_constraint.h"

#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/grammar_cache.h"
#include "engine/text/grammar/json_schema.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;
using ojson = nlohmann::ordered_json;
namespace g = engine::grammar;

namespace {

// What to compile: a cache key, the field errors name, and how to build the grammar.
struct Source {
  std::string param;
  std::string key;
  std::function<std::shared_ptr<const g::Grammar>()> build;
};

// The schema at `path` in the body, read again with its key order.
ojson ordered_at(std::string_view text, const json::json_pointer& path) {
  return ojson::parse(text).at(ojson::json_pointer(path.to_string()));
}

Source schema_source(std::string param, std::string_view text, const json::json_pointer& path) {
  auto schema = std::make_shared<ojson>(ordered_at(text, path));
  std::string key = "schema:" + schema->dump();
  return {std::move(param), std::move(key), [schema] { return g::json_schema_grammar(*schema); }};
}

Source any_object(std::string param) {
  return {std::move(param), "json_object", [] { return g::any_json_grammar(true); }};
}

std::optional<Source> from_response_format(const json& rf, std::string_view text) {
  const std::string p = "response_format";
  if (!rf.is_object()) throw invalid_field(p, "'response_format' must be an object, found " + json_type_name(rf));
  const auto type = get_string(rf, "type");
  if (!type) throw invalid_field(p, "'response_format' needs a 'type': \"text\", \"json_object\" or \"json_schema\"");
  if (*type == "text") return std::nullopt;
  if (*type == "json_object") {  // llama-server also takes a schema here
    if (rf.contains("schema") && !rf["schema"].is_null()) return schema_source(p, text, json::json_pointer("/response_format/schema"));
    return any_object(p);
  }
  if (*type != "json_schema") {
    throw invalid_field(p, "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", found \"" +
                               excerpt(*type) + "\"");
  }
  const auto js = rf.find("json_schema");
  if (js == rf.end() || !js->is_object()) {
    throw invalid_field(p, "'response_format.json_schema' must be an object {\"name\", \"schema\", \"strict\"}");
  }
  (void)get_string(*js, "name");   // type-checked only
  (void)get_bool(*js, "strict");   // every schema is enforced strictly
  if (!js->contains("schema") || (*js)["schema"].is_null()) return any_object(p);
  return schema_source(p, text, json::json_pointer("/response_format/json_schema/schema"));
}

std::vector<Source> sources(const json& body, std::string_view text) {
  std::vector<Source> out;
  if (const auto rf = body.find("response_format"); rf != body.end() && !rf->is_null()) {
    if (auto s = from_response_format(*rf, text)) out.push_back(std::move(*s));
  }
  if (const auto js = body.find("json_schema"); js != body.end() && !js->is_null()) {
    if (!js->is_object() && !js->is_boolean()) throw invalid_field("json_schema", "'json_schema' must be a JSON schema object");
    out.push_back(schema_source("json_schema", text, json::json_pointer("/json_schema")));
  }
  if (const auto gr = get_string(body, "grammar"); gr && !gr->empty()) {
    auto gbnf = std::make_shared<std::string>(*gr);
    out.push_back({"grammar", "gbnf:" + *gbnf, [gbnf] { return g::parse_gbnf(*gbnf); }});
  }
  return out;
}


// The compiled grammar of `s`, from the App's cache when it has one.
std::shared_ptr<const g::CompiledGrammar> compile(const App& app, const Source& s) {
  try {
    if (app.grammars) return app.grammars->get(s.key, s.build);
    return std::make_shared<const g::CompiledGrammar>(s.build(), g::TokenVocab::from_tokenizer(*app.tokenizer));
  } catch (const g::GrammarError& e) {
    const std::string what = s.param == "grammar" ? "invalid grammar: " : "invalid JSON schema: ";
    throw invalid_field(s.param, what + e.what());
  } catch (const nlohmann::json::exception& e) {  // a schema value of a type no check expected
    throw invalid_field(s.param, std::string("invalid JSON schema: ") + e.what());
  }
}

}  // namespace

std::shared_ptr<const g::CompiledGrammar> parse_output_constraint(const json& body, std::string_view text,
                                                                  const App& app) {
  std::vector<Source> found = sources(body, text);
  if (found.empty()) return nullptr;
  if (found.size() > 1) {
    throw invalid_field(found[1].param, "only one of 'response_format' (json_object / json_schema), 'json_schema' and "
                                        "'grammar' may be given");
  }
  return compile(app, found[0]);
}

std::shared_ptr<const g::CompiledGrammar> schema_constraint(const App& app, const std::string& param,
                                                            std::string_view text, const std::string& pointer) {
  return compile(app, schema_source(param, text, json::json_pointer(pointer)));
}

std::shared_ptr<const g::CompiledGrammar> json_object_constraint(const App& app, const std::string& param) {
  return compile(app, any_object(param));
}

}  // namespace server
