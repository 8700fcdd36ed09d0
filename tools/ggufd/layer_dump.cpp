#include "tools/ggufd/layer_dump.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace ggufd {

LayerDump::LayerDump(std::set<int64_t> positions, std::set<std::string> ops)
    : positions_(std::move(positions)), ops_(std::move(ops)) {}

void LayerDump::observe(const char* name, int64_t layer, int64_t first, int64_t n, int64_t width,
                        const float* rows) {
  if (!wants(name)) return;
  // rows (n, width): row t is position first + t (one sequence from position 0)
  for (auto it = positions_.lower_bound(first); it != positions_.end() && *it < first + n; ++it) {
    add(name, layer, *it, rows + (*it - first) * width, width);
  }
}

void LayerDump::add(const std::string& name, int64_t layer, int64_t pos, const float* row, int64_t width) {
  if (positions_.count(pos) == 0) return;
  records_.push_back({name, layer, pos, std::vector<float>(row, row + width)});
}

namespace {

// One float as JSON: 9 significant digits (an f32 round-trips), null for NaN and infinities.
void put_float(std::FILE* f, float x) {
  if (!std::isfinite(x)) {
    std::fputs("null", f);
    return;
  }
  std::fprintf(f, "%.9g", static_cast<double>(x));
}

}  // namespace

void LayerDump::write(const std::string& path, nlohmann::json head) const {
  head["format"] = "ggufd-layer-dump/1";
  head["source"] = "ggufd";
  head["positions"] = positions_;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> f(std::fopen(path.c_str(), "w"), &std::fclose);
  if (!f) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
  std::string text = head.dump();
  text.pop_back();  // the closing brace: the tensors follow
  std::fputs(text.c_str(), f.get());
  std::fputs(",\"tensors\":[", f.get());
  for (size_t i = 0; i < records_.size(); ++i) {
    const Record& r = records_[i];
    std::fprintf(f.get(), "%s\n{\"name\":%s,\"layer\":%lld,\"pos\":%lld,\"data\":[", i ? "," : "",
                 nlohmann::json(r.name).dump().c_str(), static_cast<long long>(r.layer),
                 static_cast<long long>(r.pos));
    for (size_t j = 0; j < r.data.size(); ++j) {
      if (j) std::fputc(',', f.get());
      put_float(f.get(), r.data[j]);
    }
    std::fputs("]}", f.get());
  }
  std::fputs("\n]}\n", f.get());
  if (std::ferror(f.get())) throw std::runtime_error(path + ": write failed");
}

std::set<int64_t> parse_positions(const std::string& s, int64_t n) {
  std::set<int64_t> out;
  if (s == "all") {
    for (int64_t p = 0; p < n; ++p) out.insert(p);
    return out;
  }
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    if (*p == ',' || *p == ' ') {
      ++p;
      continue;
    }
    int64_t v = 0;
    const auto [next, ec] = std::from_chars(p, end, v);
    if (ec != std::errc()) throw std::invalid_argument("--positions: not a position at '" + std::string(p, end) + "'");
    if (v < -n || v >= n) {
      throw std::invalid_argument("--positions: " + std::to_string(v) + " is outside the " + std::to_string(n) +
                                  " positions (negative counts from the end)");
    }
    out.insert(v < 0 ? n + v : v);
    p = next;
  }
  if (out.empty()) throw std::invalid_argument("--positions: no positions");
  return out;
}

}  // namespace ggufd
