// The Hub layer's pure parts: parsing a pull spec, checking names that come from users or from a
// server, parsing the Hub's file listing, and choosing the files a spec means (llama-server's
// rules: common/download.cpp). No I/O; every function is thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace hub::detail {

// Largest file size believed from a listing or a server: 4 TiB.
inline constexpr uint64_t kMaxFileBytes = uint64_t{1} << 42;
// Largest file listing read (bytes of JSON, entries).
inline constexpr size_t kMaxListingBytes = size_t{32} << 20;
inline constexpr size_t kMaxListingEntries = 200000;

struct Spec {
  enum class Kind { kRepo, kRepoFile, kUrl };
  Kind kind = Kind::kRepo;
  std::string repo;  // "org/repo" (kRepo, kRepoFile)
  std::string tag;   // the QUANT asked for, upper case; "" = default (kRepo)
  std::string file;  // path in the repo (kRepoFile)
  std::string url;    // the https URL as given (kUrl)
  std::string host;   // the URL's host (kUrl)
  std::string path;   // the URL's path without the leading '/' (kUrl)
  std::string query;  // "?..." when the URL has one (signed URLs), sent with every part (kUrl)
};

// Throws HubError naming what is wrong with `spec`.
Spec parse_spec(const std::string& spec);

bool valid_repo_id(std::string_view repo);  // "org/name", each [A-Za-z0-9][A-Za-z0-9._-]*, ≤ 96
bool valid_tag(std::string_view tag);       // [A-Za-z0-9_]{1,32}
// A relative path to store under the cache: '/'-separated components of [A-Za-z0-9._+-], none
// empty, "." or "..", none starting with '.', at most 512 bytes in all.
bool valid_rel_path(std::string_view path);

struct RemoteFile {
  std::string path;    // in the repo
  uint64_t size = 0;
  std::string sha256;  // lower-case hex of the LFS object; "" when the Hub gives none
};

// The Hub's /api/models/<repo>/tree/<rev>?recursive=true answer → its files. Entries with a bad
// path, size or oid are dropped and counted in `rejected`. Throws HubError on malformed JSON.
std::vector<RemoteFile> parse_listing(const std::string& json, const std::string& where,
                                      size_t* rejected = nullptr);

struct SplitInfo {
  std::string prefix;  // the path without ".gguf" and without "-0000i-of-0000n"
  std::string tag;     // the trailing quant tag, upper case ("Q4_K_M"), or ""
  int index = 1, count = 1;
};
SplitInfo split_info(const std::string& path);

struct Plan {
  std::vector<RemoteFile> parts;     // the model, every part in order
  std::optional<RemoteFile> mmproj;  // the projector beside it
  std::string tag;                   // the id's tag: the one asked for, else the file's
};

// Chooses the files `spec` (kRepo or kRepoFile) means in `files`. Throws HubError listing the
// GGUF files there when nothing matches, or when a split set is incomplete.
Plan plan_files(const std::vector<RemoteFile>& files, const Spec& spec, bool with_mmproj);

// The tag a file gives its cache id: its quant tag ("Q4_K_M"), else its name without ".gguf".
std::string file_tag(const std::string& path);

// The cache id of a plan ("org/repo:TAG") or of a URL spec ("host/path").
std::string plan_id(const Spec& spec, const Plan& plan);
std::string url_id(const Spec& spec);

// "https://host/path/file-00001-of-00003.gguf" → every part's path; one entry when not split.
std::vector<std::string> split_parts(const std::string& path);

}  // namespace hub::detail
