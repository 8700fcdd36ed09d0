// hub::Cache: the cached models, from their manifests (see hub.h).
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include "server/hub/hub.h"
#include "server/hub/spec.h"
#include "server/hub/store.h"

namespace hub {

namespace fs = std::filesystem;
using namespace detail;

const char* phase_name(Phase p) {
  switch (p) {
    case Phase::kResolving: return "resolving";
    case Phase::kDownloading: return "downloading";
    case Phase::kVerifying: return "verifying";
    case Phase::kDone: return "done";
  }
  return "?";
}

std::string default_cache_dir() {
  if (const char* dir = std::getenv("GGUFD_CACHE"); dir != nullptr && *dir != '\0') return dir;
  const char* home = std::getenv("HOME");
  if (home == nullptr || *home == '\0') throw HubError("neither GGUFD_CACHE nor HOME is set: no place for the cache");
  return std::string(home) + "/.cache/ggufd";
}

namespace detail {

CacheEntry entry_of(const std::string& root, const Manifest& m) {
  CacheEntry e;
  e.id = m.id;
  e.quant = m.quant;
  for (const StoredFile& f : m.parts) {
    e.files.push_back((fs::path(root) / f.path).string());
    e.bytes += f.size;
  }
  e.path = e.files.front();
  if (m.mmproj) {
    e.mmproj = (fs::path(root) / m.mmproj->path).string();
    e.files.push_back(e.mmproj);
    e.bytes += m.mmproj->size;
  }
  struct stat st {};
  if (::stat(manifest_file(root, m.id).c_str(), &st) == 0) e.mtime = st.st_mtime;
  return e;
}

}  // namespace detail

Cache::Cache(std::string root) : root_(root.empty() ? default_cache_dir() : std::move(root)) {}

std::vector<CacheEntry> Cache::list() const {
  std::vector<CacheEntry> out;
  for (const Manifest& m : all_manifests(root_)) {
    if (complete(root_, m)) out.push_back(entry_of(root_, m));
  }
  std::sort(out.begin(), out.end(), [](const CacheEntry& a, const CacheEntry& b) { return a.id < b.id; });
  return out;
}

std::optional<CacheEntry> Cache::find(const std::string& id) const {
  const auto exact = [&](const std::string& want) -> std::optional<CacheEntry> {
    const std::optional<Manifest> m = read_manifest(manifest_file(root_, want));
    if (!m || m->id != want || !complete(root_, *m)) return std::nullopt;
    return entry_of(root_, *m);
  };
  if (auto e = exact(id)) return e;
  if (!valid_repo_id(id)) return std::nullopt;  // tagged ids and URLs match exactly only
  for (const char* tag : {":Q4_K_M", ":Q8_0"}) {
    if (auto e = exact(id + tag)) return e;
  }
  for (CacheEntry& e : list()) {
    if (e.id.rfind(id + ":", 0) == 0) return std::move(e);
  }
  return std::nullopt;
}

void Cache::remove(const std::string& id) const {
  if (remove_manifest(root_, id)) return;
  std::string known;
  for (const CacheEntry& e : list()) known += (known.empty() ? "" : ", ") + e.id;
  throw HubError("no cached model " + id + " in " + root_ + "; cached: " + (known.empty() ? "none" : known));
}

}  // namespace hub
