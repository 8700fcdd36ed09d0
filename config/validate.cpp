// Start-up checks beyond one value's type and range.
#include "config/validate.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "config/values.h"

namespace config {

namespace {

// `path` names a readable regular file; otherwise throws "<label>: '<path>' ...".
void check_readable_file(const std::string& label, const std::string& path) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (!std::filesystem::exists(status)) throw std::invalid_argument(label + ": '" + path + "' does not exist");
  if (!std::filesystem::is_regular_file(status)) {
    throw std::invalid_argument(label + ": '" + path + "' is not a regular file");
  }
  if (!std::ifstream(path)) throw std::invalid_argument(label + ": '" + path + "' cannot be read");
}

// Keys are secrets: the message never shows them.
void check_key(const std::string& label, const std::string& key) {
  const bool bad = key.empty() || std::any_of(key.begin(), key.end(), [](char c) {
                     return std::isspace(static_cast<unsigned char>(c)) || std::iscntrl(static_cast<unsigned char>(c));
                   });
  if (bad) throw std::invalid_argument(label + ": a key must be non-empty, without blanks or control characters");
}

// "*" or scheme://host[:port] with scheme http or https and no path.
bool is_origin(const std::string& s) {
  if (s == "*") return true;
  for (const std::string scheme : {"http://", "https://"}) {
    if (s.starts_with(scheme)) {
      const std::string rest = s.substr(scheme.size());
      return !rest.empty() && rest.find_first_of("/ \t") == std::string::npos;
    }
  }
  return false;
}

// --spec draft needs --model-draft, which nothing else uses; --draft-min at most --draft-max.
void check_speculation(const ServeConfig& cfg, const std::map<std::string, std::string>& labels) {
  const EngineConfig& e = cfg.engine;
  if (!cfg.model.draft.empty()) {
    check_readable_file(labels.at("model-draft"), cfg.model.draft);
    if (e.spec != "auto" && e.spec != "draft") {
      throw std::invalid_argument(labels.at("model-draft") + ": a draft model is used by --spec draft (or auto), not --spec " +
                                  e.spec);
    }
  } else if (e.spec == "draft") {
    throw std::invalid_argument(labels.at("spec") + ": 'draft' needs a draft model: --model-draft FILE");
  }
  if (e.draft_min > e.draft_max) {
    throw std::invalid_argument(labels.at("draft-min") + ": " + std::to_string(e.draft_min) +
                                " is more than --draft-max (" + std::to_string(e.draft_max) + ")");
  }
}

// org/repo[:QUANT]: two non-empty names, no blanks.
void check_hf(const ServeConfig& cfg, const std::map<std::string, std::string>& labels) {
  const std::string& hf = cfg.model.hf;
  if (hf.empty()) return;
  if (!cfg.model.path.empty()) {
    throw std::invalid_argument(labels.at("hf") + ": serves one model, as --model does: give one of them");
  }
  const std::string repo = hf.substr(0, hf.find(':'));
  const size_t slash = repo.find('/');
  const bool ok = slash != std::string::npos && slash > 0 && slash + 1 < repo.size() &&
                  repo.find('/', slash + 1) == std::string::npos && hf.find_first_of(" \t\r\n") == std::string::npos &&
                  (hf.find(':') == std::string::npos || hf.find(':') + 1 < hf.size());
  if (!ok) throw std::invalid_argument(labels.at("hf") + ": '" + hf + "' is not a repository: expected org/repo[:QUANT]");
}

void check_router(const ServeConfig& cfg, const std::map<std::string, std::string>& labels) {
  const std::string& dir = cfg.router.models_dir;
  std::error_code ec;
  if (!dir.empty() && !std::filesystem::is_directory(dir, ec)) {
    throw std::invalid_argument(labels.at("models-dir") + ": '" + dir + "' is not a directory");
  }
  if (!cfg.download.ca_file.empty()) check_readable_file(labels.at("ca-file"), cfg.download.ca_file);
}

}  // namespace

void merge_api_key_file(HttpConfig& http, const std::string& label) {
  if (http.api_key_file.empty()) return;
  check_readable_file(label, http.api_key_file);
  std::ifstream in(http.api_key_file);
  size_t found = 0;
  for (std::string line; std::getline(in, line);) {
    const std::string key = trim(line);
    if (key.empty() || key.front() == '#') continue;
    check_key(label, key);
    ++found;
    if (std::find(http.api_keys.begin(), http.api_keys.end(), key) == http.api_keys.end()) {
      http.api_keys.push_back(key);
    }
  }
  if (found == 0) throw std::invalid_argument(label + ": '" + http.api_key_file + "' holds no keys");
}

HostPort parse_host_port(const std::string& text, const std::string& label) {
  const size_t colon = text.rfind(':');
  const auto bad = [&](const std::string& why) {
    return std::invalid_argument(label + ": '" + text + "' " + why + ": expected HOST:PORT such as 127.0.0.1:11434");
  };
  if (colon == std::string::npos) throw bad("has no port");
  if (colon == 0) throw bad("has no host");
  std::string host = text.substr(0, colon);
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);  // [::1]
  const std::string port = text.substr(colon + 1);
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) {
    throw bad("has no port");
  }
  const int n = std::stoi(port);
  if (n > 65535) throw bad("has a port beyond 65535");
  for (char c : host) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == ':')) throw bad("has a bad host");
  }
  return {host, static_cast<uint16_t>(n)};
}

void validate(const ServeConfig& cfg, const std::map<std::string, std::string>& labels) {
  if (!cfg.model.path.empty()) check_readable_file(labels.at("model"), cfg.model.path);
  if (!cfg.model.chat_template_file.empty()) {
    check_readable_file(labels.at("chat-template-file"), cfg.model.chat_template_file);
  }
  check_speculation(cfg, labels);
  check_hf(cfg, labels);
  check_router(cfg, labels);
  if (cfg.http.host.empty()) {
    throw std::invalid_argument(labels.at("host") + ": '' is not allowed: expected an address such as 127.0.0.1");
  }
  if (!cfg.http.ollama_listen.empty()) parse_host_port(cfg.http.ollama_listen, labels.at("ollama-listen"));
  for (const std::string& key : cfg.http.api_keys) check_key(labels.at("api-key"), key);
  for (const std::string& origin : cfg.http.cors_origins) {
    if (!is_origin(origin)) {
      throw std::invalid_argument(labels.at("cors-origin") + ": '" + origin +
                                  "' is not an origin: expected * or http(s)://host[:port]");
    }
  }
}

}  // namespace config
