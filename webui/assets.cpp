#include "webui/assets.h"

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "embedded_table.inc"  // GGUFD_WEBUI_FILES and the .incbin symbols (generated)

namespace webui {

namespace {

std::string_view span(const char* begin, const char* end) {
  return {begin, static_cast<size_t>(end - begin)};
}

struct Embedded {
  const char* path;
  const char* content_type;
  std::string_view bytes;
  std::string_view gzip;
};

// FNV-1a, 64 bits: the ETag only has to change when the file does.
std::string etag_of(std::string_view bytes) {
  uint64_t h = 14695981039346656037ull;
  for (const char c : bytes) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  char text[24];
  std::snprintf(text, sizeof text, "\"%016llx\"", static_cast<unsigned long long>(h));
  return text;
}

struct Table {
  std::vector<std::string> etags;
  std::vector<Asset> assets;
  Table() {
    const Embedded files[] = {GGUFD_WEBUI_FILES};
    etags.reserve(std::size(files));
    for (const Embedded& f : files) {
      etags.push_back(etag_of(f.bytes));
      assets.push_back({f.path, f.content_type, f.bytes, f.gzip, etags.back()});
    }
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

std::span<const Asset> assets() { return table().assets; }

const Asset* find_asset(std::string_view path) {
  for (const Asset& a : assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace webui
