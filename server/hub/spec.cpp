// Spec parsing, name checks, the Hub listing and file choice (see spec.h).
#include "server/hub/spec.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "server/hub/hub.h"

namespace hub::detail {

namespace {

bool name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '-';
}

bool valid_name(std::string_view s) {
  if (s.empty() || s.size() > 96 || !std::isalnum(static_cast<unsigned char>(s[0]))) return false;
  if (s.find("..") != std::string_view::npos) return false;
  return std::all_of(s.begin(), s.end(), name_char);
}

bool is_hex(std::string_view s, size_t n) {
  return s.size() == n && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Spec parse_url(const std::string& spec) {
  Spec s;
  s.kind = Spec::Kind::kUrl;
  std::string rest = spec.substr(8);  // after "https://"
  rest = rest.substr(0, rest.find('#'));
  if (const size_t q = rest.find('?'); q != std::string::npos) {
    s.query = rest.substr(q);
    rest.resize(q);
    const bool query_ok = std::all_of(s.query.begin(), s.query.end(), [](char c) { return c > 0x20 && c < 0x7f; });
    if (!query_ok) throw HubError("bad characters in the URL's query: " + spec);
  }
  const size_t slash = rest.find('/');
  if (slash == std::string::npos) throw HubError("URL without a path: " + spec);
  s.host = rest.substr(0, slash);
  s.path = rest.substr(slash + 1);
  const bool host_ok = !s.host.empty() && s.host.size() <= 253 &&
                       std::all_of(s.host.begin(), s.host.end(), [](char c) { return name_char(c) || c == ':'; });
  if (!host_ok) throw HubError("bad host in URL: " + spec);
  if (!valid_rel_path(s.path) || !ends_with(s.path, ".gguf")) {
    throw HubError("URL path must be a plain path to a .gguf file (letters, digits, . _ + -): " + spec);
  }
  s.url = "https://" + rest + s.query;
  return s;
}

Spec parse_repo_file(const std::string& spec) {
  Spec s;
  s.kind = Spec::Kind::kRepoFile;
  const std::string rest = spec.substr(5);  // after "hf://"
  const size_t first = rest.find('/');
  const size_t second = first == std::string::npos ? first : rest.find('/', first + 1);
  if (second == std::string::npos) throw HubError("expected hf://org/repo/path/file.gguf, got " + spec);
  s.repo = rest.substr(0, second);
  s.file = rest.substr(second + 1);
  if (!valid_repo_id(s.repo)) throw HubError("bad repo id '" + s.repo + "' in " + spec);
  if (!valid_rel_path(s.file) || !ends_with(s.file, ".gguf")) {
    throw HubError("bad file path '" + s.file + "' in " + spec + " (a relative path to a .gguf file)");
  }
  return s;
}

}  // namespace

bool valid_repo_id(std::string_view repo) {
  const size_t slash = repo.find('/');
  if (slash == std::string_view::npos) return false;
  return valid_name(repo.substr(0, slash)) && valid_name(repo.substr(slash + 1));
}

bool valid_tag(std::string_view tag) {
  return !tag.empty() && tag.size() <= 32 && std::all_of(tag.begin(), tag.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  });
}

bool valid_rel_path(std::string_view path) {
  if (path.empty() || path.size() > 512) return false;
  size_t start = 0;
  while (start <= path.size()) {
    const size_t end = std::min(path.find('/', start), path.size());
    const std::string_view part = path.substr(start, end - start);
    if (part.empty() || part[0] == '.' || part.size() > 255) return false;
    for (char c : part) {
      if (!name_char(c) && c != '+') return false;
    }
    start = end + 1;
  }
  return true;
}

Spec parse_spec(const std::string& spec) {
  if (spec.size() > 2048) throw HubError("model spec longer than 2048 characters");
  if (spec.rfind("https://", 0) == 0) return parse_url(spec);
  if (spec.rfind("http://", 0) == 0) throw HubError("plain http is not allowed (use https): " + spec);
  if (spec.rfind("hf://", 0) == 0) return parse_repo_file(spec);
  // Ollama's names for Hub models: hf.co/org/repo[:QUANT] (":latest" is its default tag).
  std::string_view name = spec;
  for (std::string_view host : {"hf.co/", "huggingface.co/"}) {
    if (name.substr(0, host.size()) == host) name.remove_prefix(host.size());
  }
  Spec s;
  const size_t colon = name.find(':');
  s.repo = std::string(name.substr(0, colon));
  if (!valid_repo_id(s.repo)) {
    throw HubError("bad model spec '" + spec + "': expected org/repo[:QUANT], hf://org/repo/file.gguf or an https URL");
  }
  if (colon != std::string::npos) {
    s.tag = std::string(name.substr(colon + 1));
    if (!valid_tag(s.tag)) throw HubError("bad quant tag '" + s.tag + "' in " + spec + " (letters, digits, _)");
    s.tag = upper(s.tag);
    if (name.size() != spec.size() && s.tag == "LATEST") s.tag.clear();
  }
  return s;
}

std::vector<RemoteFile> parse_listing(const std::string& text, const std::string& where, size_t* rejected) {
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw HubError("malformed JSON file list from " + where + ": " + e.what());
  }
  if (!json.is_array()) throw HubError("file list from " + where + " is not a JSON array");
  if (json.size() > kMaxListingEntries) {
    throw HubError("file list from " + where + " has " + std::to_string(json.size()) + " entries (limit " +
                   std::to_string(kMaxListingEntries) + ")");
  }
  std::vector<RemoteFile> files;
  size_t bad = 0;
  for (const auto& item : json) {
    if (!item.is_object() || item.value("type", "") != "file") continue;
    const auto path = item.find("path");
    const auto lfs = item.find("lfs");
    const bool has_lfs = lfs != item.end() && lfs->is_object();
    const nlohmann::json& size_node = has_lfs && lfs->contains("size") ? (*lfs)["size"] : item.value("size", nlohmann::json());
    RemoteFile f;
    if (path == item.end() || !path->is_string() || !size_node.is_number_unsigned()) {
      ++bad;
      continue;
    }
    f.path = path->get<std::string>();
    f.size = size_node.get<uint64_t>();
    if (has_lfs) f.sha256 = lfs->value("oid", lfs->value("sha256", ""));
    if (!valid_rel_path(f.path) || f.size > kMaxFileBytes || (has_lfs && !is_hex(f.sha256, 64))) {
      ++bad;
      continue;
    }
    files.push_back(std::move(f));
  }
  if (rejected) *rejected = bad;
  return files;
}

SplitInfo split_info(const std::string& path) {
  SplitInfo s;
  if (!ends_with(path, ".gguf")) return s;
  s.prefix = path.substr(0, path.size() - 5);
  // "-00001-of-00003": 15 characters at the end.
  const std::string& p = s.prefix;
  const auto digits = [&](size_t at) {
    return std::all_of(p.begin() + long(at), p.begin() + long(at + 5), [](char c) { return c >= '0' && c <= '9'; });
  };
  if (p.size() > 15 && p[p.size() - 15] == '-' && p.compare(p.size() - 9, 4, "-of-") == 0 && digits(p.size() - 14) &&
      digits(p.size() - 5)) {
    s.index = std::atoi(p.c_str() + p.size() - 14);
    s.count = std::atoi(p.c_str() + p.size() - 5);
    s.prefix = p.substr(0, p.size() - 15);
  }
  size_t start = s.prefix.size();
  while (start > 0 && (std::isalnum(static_cast<unsigned char>(s.prefix[start - 1])) || s.prefix[start - 1] == '_')) {
    --start;
  }
  if (start > 0 && start < s.prefix.size() && (s.prefix[start - 1] == '-' || s.prefix[start - 1] == '.')) {
    s.tag = upper(s.prefix.substr(start));
  }
  return s;
}

std::vector<std::string> split_parts(const std::string& path) {
  const SplitInfo s = split_info(path);
  if (s.count <= 1) return {path};
  std::vector<std::string> parts;
  for (int i = 1; i <= s.count; ++i) {
    char suffix[32];
    std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", i, s.count);
    parts.push_back(s.prefix + suffix);
  }
  return parts;
}

}  // namespace hub::detail
