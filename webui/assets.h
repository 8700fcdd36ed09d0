// The chat page's files, embedded into the binary at build time (webui/CMakeLists.txt).
#pragma once

#include <span>
#include <string_view>

namespace webui {

// One file of the page. All views point into the binary's read-only data: valid for the
// program's lifetime, shared by all threads.
struct Asset {
  std::string_view path;          // below /webui/: "app.js", "fonts/KaTeX_Main-Regular.woff2"; "index.html"
  std::string_view content_type;  // "text/javascript; charset=utf-8"
  std::string_view bytes;         // the file as it is
  std::string_view gzip;          // the same, gzip-compressed; empty when that would not pay
  std::string_view etag;          // "\"<16 hex digits>\"": a hash of `bytes`, for If-None-Match
};

// Every file, in a fixed order. Thread-safe (built once, on first use).
std::span<const Asset> assets();

// The file at `path` (as in Asset::path), or nullptr.
const Asset* find_asset(std::string_view path);

}  // namespace webui
