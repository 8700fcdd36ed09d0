#include "gguf/naming.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <stdexcept>
#include <system_error>

namespace gguf {

namespace {

// The spec's validation expression with its named groups numbered:
// 1 BaseName, 2 SizeLabel, 4 FineTune, 5 Version, 6 Encoding, 7 Type, 8 Shard.
const char kPattern[] =
    R"(^([A-Za-z0-9\s]*(?:(?:-(?:(?:[A-Za-z\s][A-Za-z0-9\s]*)|(?:[0-9\s]*)))*)))"
    R"(-(?:((?:\d+x)?(?:\d+\.)?\d+[A-Za-z](?:-[A-Za-z]+(\d+\.)?\d+[A-Za-z]+)?))"
    R"((?:-([A-Za-z0-9\s-]+))?)?)"
    R"(-(?:(v\d+(?:\.\d+)*)))"
    R"((?:-((?!LoRA|vocab)[\w_]+))?)"
    R"((?:-(LoRA|vocab))?)"
    R"((?:-(\d{5}-of-\d{5}))?\.gguf$)";

std::optional<std::string> group(const std::smatch& m, size_t i) {
  if (!m[i].matched) return std::nullopt;
  return m[i].str();
}

}  // namespace

std::optional<NameParts> parse_file_name(std::string_view file_name) {
  const size_t slash = file_name.find_last_of('/');
  if (slash != std::string_view::npos) file_name.remove_prefix(slash + 1);
  static const std::regex re(kPattern);  // immutable after construction
  const std::string name(file_name);
  std::smatch m;
  if (!std::regex_match(name, m, re)) return std::nullopt;
  NameParts p;
  p.base_name = m[1].str();
  p.size_label = group(m, 2);
  p.fine_tune = group(m, 4);
  if (m[5].matched) p.version = m[5].str();
  p.encoding = group(m, 6);
  p.type = group(m, 7);
  p.shard = group(m, 8);
  return p;
}

namespace {

// The value of five decimal digits at s[0..5), or -1 when they are not all digits.
int five_digits(std::string_view s) {
  int v = 0;
  for (char c : s.substr(0, 5)) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v;
}

}  // namespace

std::optional<SplitName> parse_split_name(std::string_view path) {
  constexpr std::string_view kOf = "-of-", kExt = ".gguf";
  constexpr size_t kPostfix = 1 + 5 + kOf.size() + 5 + kExt.size();  // "-00001-of-00003.gguf"
  if (path.size() <= kPostfix) return std::nullopt;
  const std::string_view post = path.substr(path.size() - kPostfix);
  if (post[0] != '-' || post.substr(6, kOf.size()) != kOf || post.substr(kPostfix - kExt.size()) != kExt) {
    return std::nullopt;
  }
  const int no = five_digits(post.substr(1, 5)), count = five_digits(post.substr(6 + kOf.size(), 5));
  if (no < 1 || count < 1 || no > count) return std::nullopt;
  const std::string_view prefix = path.substr(0, path.size() - kPostfix);
  if (prefix.back() == '/') return std::nullopt;  // a bare "-00001-of-00002.gguf" has no name
  return SplitName{std::string(prefix), no, count};
}

std::string split_path(std::string_view prefix, int no, int count) {
  char post[32];
  std::snprintf(post, sizeof post, "-%05d-of-%05d.gguf", no, count);
  return std::string(prefix) + post;
}

std::vector<std::string> split_parts(const std::string& path) {
  const std::optional<SplitName> s = parse_split_name(path);
  if (!s) return {path};
  std::vector<std::string> parts;
  for (int no = 1; no <= s->count; ++no) parts.push_back(split_path(s->prefix, no, s->count));
  return parts;
}

bool is_later_split_part(std::string_view path) {
  const std::optional<SplitName> s = parse_split_name(path);
  return s && s->no > 1;
}

uint64_t model_files_size(const std::string& path) {
  uint64_t total = 0;
  for (const std::string& part : split_parts(path)) {
    std::error_code ec;
    const uintmax_t n = std::filesystem::file_size(part, ec);
    if (ec) throw std::runtime_error(part + ": cannot read the size: " + ec.message());
    total += n;
  }
  return total;
}

std::string size_label(uint64_t n_params, uint64_t n_experts) {
  const double n = static_cast<double>(n_params);
  double scaled = n * 1e-3;
  char suffix = 'K';
  if (n > 1e15) {
    scaled = n * 1e-15;
    suffix = 'Q';
  } else if (n > 1e12) {
    scaled = n * 1e-12;
    suffix = 'T';
  } else if (n > 1e9) {
    scaled = n * 1e-9;
    suffix = 'B';
  } else if (n > 1e6) {
    scaled = n * 1e-6;
    suffix = 'M';
  }
  // Keep at least two significant digits: 1.1B, 14B, 260K.
  const int whole_digits = scaled < 1 ? 0 : static_cast<int>(std::to_string(std::llround(scaled)).size());
  const int decimals = std::max(2 - whole_digits, 0);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%c", decimals, scaled, suffix);
  std::string label = buf;
  return n_experts > 1 ? std::to_string(n_experts) + "x" + label : label;
}

}  // namespace gguf
