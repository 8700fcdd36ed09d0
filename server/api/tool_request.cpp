#include "server/api/tool_request.h"

#include <algorithm>

#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

namespace tools = engine::tools;

namespace {

bool valid_name(const std::string& n, size_t max) {
  if (n.empty() || n.size() > max) return false;
  return std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.';
  });
}

}  // namespace

tools::ToolDef function_def(const ojson& f, const std::string& field, const std::string& where, size_t max_name) {
  if (!f.is_object()) throw invalid_field(field, where + " must be an object");
  const auto name = f.find("name");
  if (name == f.end() || !name->is_string() || !valid_name(name->get<std::string>(), max_name)) {
    throw invalid_field(field, where + ".name must be 1 to " + std::to_string(max_name) +
                                   " letters, digits, '_', '-' or '.'");
  }
  tools::ToolDef def;
  def.name = name->get<std::string>();
  if (auto d = f.find("description"); d != f.end() && !d->is_null()) {
    if (!d->is_string()) throw invalid_field(field, where + ".description must be a string");
    def.description = d->get<std::string>();
  }
  if (auto p = f.find("parameters"); p != f.end() && !p->is_null()) {
    if (!p->is_object()) throw invalid_field(field, where + ".parameters must be a JSON Schema object");
    def.parameters = *p;
  }
  return def;
}

void add_function(ToolRequest& r, tools::ToolDef def, const std::string& field, const std::string& where) {
  for (const tools::ToolDef& t : r.tools) {
    if (t.name == def.name) throw invalid_field(field, where + ": the function name '" + def.name + "' is offered twice");
  }
  ojson fn = {{"name", def.name}};
  if (!def.description.empty()) fn["description"] = def.description;
  fn["parameters"] = def.parameters;
  r.tools_json.push_back({{"type", "function"}, {"function", std::move(fn)}});
  r.tools.push_back(std::move(def));
}

namespace {

// The chat shape's tools, kept in tools_json as sent (the legacy `functions` converted).
void add_tool(ToolRequest& r, tools::ToolDef def, const std::string& field, const std::string& where) {
  for (const tools::ToolDef& t : r.tools) {
    if (t.name == def.name) throw invalid_field(field, where + ": the function name '" + def.name + "' is offered twice");
  }
  r.tools.push_back(std::move(def));
}

void read_tools(const ojson& body, ToolRequest& r) {
  if (auto t = body.find("tools"); t != body.end() && !t->is_null()) {
    if (!t->is_array()) throw invalid_field("tools", "'tools' must be an array");
    for (size_t i = 0; i < t->size(); ++i) {
      const ojson& tool = (*t)[i];
      const std::string where = "tools[" + std::to_string(i) + "]";
      if (!tool.is_object() || tool.value("type", std::string()) != "function" || !tool.contains("function")) {
        throw invalid_field("tools", where + " must be {\"type\": \"function\", \"function\": {...}}");
      }
      add_tool(r, function_def(tool["function"], "tools", where + ".function"), "tools", where);
    }
    r.tools_json = *t;
  }
  if (auto f = body.find("functions"); f != body.end() && !f->is_null()) {  // the legacy form
    if (!f->is_array()) throw invalid_field("functions", "'functions' must be an array");
    for (size_t i = 0; i < f->size(); ++i) {
      const std::string where = "functions[" + std::to_string(i) + "]";
      add_tool(r, function_def((*f)[i], "functions", where), "functions", where);
      r.tools_json.push_back({{"type", "function"}, {"function", (*f)[i]}});
    }
  }
}

void read_choice(const ojson& body, ToolRequest& r) {
  const char* field = "tool_choice";
  auto c = body.find("tool_choice");
  if (c == body.end() || c->is_null()) {
    field = "function_call";
    c = body.find("function_call");
  }
  if (c == body.end() || c->is_null()) return;
  if (c->is_string()) {
    const std::string s = c->get<std::string>();
    if (s == "none") r.choice = ToolRequest::Choice::kNone;
    else if (s == "auto") r.choice = ToolRequest::Choice::kAuto;
    else if (s == "required" || s == "any") r.choice = ToolRequest::Choice::kRequired;
    else throw invalid_field(field, std::string("'") + field + "' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}");
  } else if (c->is_object()) {
    const ojson* fn = c->contains("function") ? &(*c)["function"] : &*c;  // function_call: {"name"}
    if (!fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string()) {
      throw invalid_field(field, std::string("'") + field + "' must name a function: {\"type\": \"function\", \"function\": {\"name\": ...}}");
    }
    r.choice = ToolRequest::Choice::kNamed;
    r.named = (*fn)["name"].get<std::string>();
  } else {
    throw invalid_field(field, std::string("'") + field + "' must be a string or an object, found " + json_type_name(*c));
  }
  if (r.choice == ToolRequest::Choice::kNamed &&
      std::none_of(r.tools.begin(), r.tools.end(), [&](const tools::ToolDef& t) { return t.name == r.named; })) {
    throw invalid_field(field, std::string("'") + field + "' names the function '" + excerpt(r.named) +
                                   "', which is not among the request's tools");
  }
  if (r.choice == ToolRequest::Choice::kRequired && r.tools.empty()) {
    throw invalid_field(field, std::string("'") + field + "' is \"required\" but the request offers no tools");
  }
}

}  // namespace

std::vector<tools::ToolDef> ToolRequest::callable() const {
  if (choice != Choice::kNamed && !allowed) return tools;
  std::vector<tools::ToolDef> out;
  for (const tools::ToolDef& t : tools) {
    const bool ok = choice == Choice::kNamed ? t.name == named
                                             : std::find(allowed->begin(), allowed->end(), t.name) != allowed->end();
    if (ok) out.push_back(t);
  }
  return out;
}

std::vector<std::string> ToolRequest::callable_names() const {
  std::vector<std::string> out;
  for (const tools::ToolDef& t : callable()) out.push_back(t.name);
  return out;
}

ToolRequest parse_tool_request(const ojson& body) {
  ToolRequest r;
  read_tools(body, r);
  read_choice(body, r);
  if (auto p = body.find("parallel_tool_calls"); p != body.end() && !p->is_null()) {
    if (!p->is_boolean()) throw invalid_field("parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
    r.parallel_requested = p->get<bool>();
  }
  return r;
}

}  // namespace server
