#include "server/api/request_fields.h"

#include <algorithm>
#include <optional>

#include "server/api/api_error.h"
#include "server/api/request_json.h"

namespace server {

using nlohmann::json;

namespace {

constexpr size_t kMaxNameBytes = 40;   // of one name in the header, before encoding
constexpr size_t kMaxHeaderNames = 20;

// Printable ASCII other than the list separator and the escape character itself.
bool plain_header_byte(unsigned char c) { return c > 0x20 && c < 0x7f && c != ',' && c != '%'; }

// `name` cut to kMaxNameBytes and percent-encoded where plain_header_byte() says no.
std::string header_name(const std::string& name) {
  static const char* kHex = "0123456789ABCDEF";
  const bool cut = name.size() > kMaxNameBytes;
  std::string out;
  for (size_t i = 0; i < std::min(name.size(), kMaxNameBytes); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (plain_header_byte(c)) {
      out += static_cast<char>(c);
    } else {
      out += {'%', kHex[c >> 4], kHex[c & 15]};
    }
  }
  if (cut) out += "...";
  return out.empty() ? "\"\"" : out;  // the empty key, shown as ""
}

}  // namespace

std::vector<std::string> check_fields(const json& body, const std::set<std::string>& known,
                                      const std::set<std::string>& unsupported, bool strict) {
  std::vector<std::string> ignored;
  for (const auto& [key, value] : body.items()) {
    if (unsupported.count(key) != 0) {
      if (!value.is_null()) throw invalid_field(key, "'" + key + "' is not supported by this server");
      continue;
    }
    if (known.count(key) != 0) continue;
    if (key == "keep_alive") continue;  // every dialect's: read by the router (lease_for_body)
    if (strict) throw invalid_field(excerpt(key), "Unrecognized request argument supplied: " + excerpt(key));
    ignored.push_back(key);
  }
  return ignored;
}

void check_request_model(const json& body, const App& app) {
  const std::optional<std::string> model = get_string(body, "model");
  if (model && app.settings.strict_api) require_model(app, *model);
}

void check_text_modalities(const json& body) {
  const auto it = body.find("modalities");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_array()) {
    throw invalid_field("modalities", "'modalities' must be an array such as [\"text\"], found " + json_type_name(*it));
  }
  for (const json& m : *it) {
    if (!m.is_string()) {
      throw invalid_field("modalities", "'modalities' items must be strings such as \"text\", found " + json_type_name(m));
    }
    if (m.get_ref<const std::string&>() != "text") {
      throw invalid_field("modalities", "'modalities' may only ask for [\"text\"]: this server cannot produce '" +
                                            excerpt(m.get_ref<const std::string&>()) + "' output");
    }
  }
}

std::string ignored_fields_header(const std::vector<std::string>& names) {
  std::set<std::string> shown;
  for (const std::string& name : names) shown.insert(header_name(name));
  std::string out;
  size_t count = 0;
  for (const std::string& name : shown) {
    if (count == kMaxHeaderNames) {
      out += ", ...";
      break;
    }
    out += (count++ == 0 ? "" : ", ") + name;
  }
  return out;
}

}  // namespace server
