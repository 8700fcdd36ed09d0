// hub::pull: resolve a spec, fetch what is missing, verify, move into the cache (see hub.h).
#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "server/hub/http.h"
#include "server/hub/hub.h"
#include "server/hub/spec.h"
#include "server/hub/store.h"

namespace hub {

namespace fs = std::filesystem;
using namespace detail;

namespace {

// What one pull needs besides the spec.
struct Context {
  std::string root;
  std::string endpoint;  // without a trailing '/'
  HttpOptions http;
  int retries = 5;
  const ProgressFn* progress = nullptr;
  const std::atomic<bool>* cancel = nullptr;
};

std::string env_or(const std::string& given, const char* name, const std::string& fallback) {
  if (!given.empty()) return given;
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::string(v) : fallback;
}

Context make_context(const PullOptions& o, const ProgressFn& progress, const std::atomic<bool>* cancel) {
  Context c;
  c.root = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
  c.endpoint = env_or(o.endpoint, "HF_ENDPOINT", "https://huggingface.co");
  while (!c.endpoint.empty() && c.endpoint.back() == '/') c.endpoint.pop_back();
  if (c.endpoint.rfind("https://", 0) != 0) throw HubError("hub endpoint must be an https URL: " + c.endpoint);
  c.http.ca_file = o.ca_file;
  c.http.token = env_or(o.token, "HF_TOKEN", "");
  c.http.low_speed_seconds = o.low_speed_seconds;
  c.http.cancel = cancel;
  c.retries = std::max(0, o.retries);
  c.progress = &progress;
  c.cancel = cancel;
  return c;
}

void report(const Context& c, const std::string& file, uint64_t done, uint64_t total, Phase phase,
            const std::string& sha256 = {}) {
  if (*c.progress) (*c.progress)(Progress{file, done, total, phase, sha256});
}

// The repo's files, following the Hub's pagination (on the endpoint's host only) up to the
// listing caps. `rejected` counts entries dropped for a bad path, size or checksum.
std::vector<RemoteFile> fetch_listing(const Context& c, const std::string& repo, size_t& rejected) {
  std::string url = c.endpoint + "/api/models/" + repo + "/tree/main?recursive=true";
  std::vector<RemoteFile> files;
  size_t bytes = 0;
  for (int page = 0; !url.empty(); ++page) {
    if (page == 100) throw HubError("file list of " + repo + " has more than 100 pages");
    const Reply r = http_get(url, c.http, kMaxListingBytes - bytes);
    if (r.status != 200) throw HubError(status_message(r.status, url, "repo " + repo, r.body, !c.http.token.empty()));
    bytes += r.body.size();
    size_t bad = 0;
    for (RemoteFile& f : parse_listing(r.body, url, &bad)) files.push_back(std::move(f));
    rejected += bad;
    if (files.size() > kMaxListingEntries) throw HubError("file list of " + repo + " is too long");
    if (!r.next_page.empty() && r.next_page.rfind(c.endpoint + "/", 0) != 0) {
      throw HubError("file list of " + repo + " points to another host for its next page: " + r.next_page);
    }
    url = r.next_page;
  }
  return files;
}

StoredFile stored(const std::string& repo, const RemoteFile& f) {
  return StoredFile{"models/" + repo + "/" + f.path, f.size, f.sha256};
}

void check_space(const std::string& dir, uint64_t need) {
  struct statvfs st {};
  if (need == 0 || ::statvfs(dir.c_str(), &st) != 0) return;
  const uint64_t free_bytes = uint64_t(st.f_bavail) * st.f_frsize;
  if (free_bytes < need) {
    throw HubError("not enough space in " + dir + ": the download needs " + std::to_string(need) + " bytes, " +
                   std::to_string(free_bytes) + " are free");
  }
}

// True when the final file is already there and right (a manifest vouches, or its sha256 matches).
bool already_cached(const Context& c, const StoredFile& f) {
  const fs::path final_path = fs::path(c.root) / f.path;
  std::error_code ec;
  const uint64_t size = fs::file_size(final_path, ec);
  if (ec) return false;
  if (f.sha256.empty()) return f.size == 0 || size == f.size;
  if (size != f.size) return false;
  for (const Manifest& m : all_manifests(c.root)) {
    for (const StoredFile& p : m.parts) if (p.path == f.path && p.sha256 == f.sha256) return true;
    if (m.mmproj && m.mmproj->path == f.path && m.mmproj->sha256 == f.sha256) return true;
  }
  return sha256_file(final_path.string(), c.cancel) == f.sha256;
}

void discard(const std::string& part) {
  std::error_code ec;
  fs::remove(part, ec);
}

// Size, checksum and GGUF magic of a finished partial file; deletes it when any is wrong.
void verify(const Context& c, const std::string& part, const std::string& url, StoredFile& f) {
  std::error_code ec;
  const uint64_t size = fs::file_size(part, ec);
  std::string problem;
  if (f.size != 0 && size != f.size) {
    problem = "size mismatch for " + url + ": the hub announced " + std::to_string(f.size) + " bytes, " +
              std::to_string(size) + " arrived";
  } else {
    const std::string sha = sha256_file(part, c.cancel);
    if (!f.sha256.empty() && sha != f.sha256) {
      problem = "checksum mismatch for " + url + ": the hub reports sha256 " + f.sha256 + ", the download has " + sha;
    }
    f.sha256 = sha;
    f.size = size;
    char magic[4] = {};
    std::ifstream(part, std::ios::binary).read(magic, 4);
    if (problem.empty() && std::memcmp(magic, "GGUF", 4) != 0) problem = url + " is not a GGUF file (no GGUF magic)";
  }
  if (!problem.empty()) {
    discard(part);
    throw HubError(problem + "; the download was deleted");
  }
}

// Downloads `url` into the cache as `f` (`name` in progress events, `what` in errors), unless it
// is there already; fills in the size and sha256 of files that came without them.
void fetch_file(const Context& c, const std::string& url, StoredFile& f, const std::string& name,
                const std::string& what) {
  const std::string key = f.sha256.empty() ? sha256_hex(url).substr(0, 32) : f.sha256;
  FileLock lock(c.root + "/tmp/" + key + ".lock", c.cancel);
  if (already_cached(c, f)) {
    if (f.sha256.empty()) f.size = fs::file_size(fs::path(c.root) / f.path);
    report(c, name, f.size, f.size, Phase::kDone, f.sha256);
    return;
  }
  const std::string part = c.root + "/tmp/" + key + ".part";
  std::error_code ec;
  const uint64_t have = fs::exists(part, ec) ? fs::file_size(part, ec) : 0;
  check_space(c.root + "/tmp", f.size > have ? f.size - have : 0);
  const auto on_bytes = [&](uint64_t done, uint64_t total) {
    report(c, name, done, total, Phase::kDownloading, f.sha256);
  };
  try {
    download(url, part, f.size, c.http, c.retries, what, on_bytes);
  } catch (const TransferError& e) {
    if (!e.keep_partial || fs::file_size(part, ec) == 0) discard(part);  // an empty part resumes nothing
    throw HubError(e.message);
  }
  report(c, name, f.size, f.size, Phase::kVerifying, f.sha256);
  verify(c, part, url, f);
  const fs::path final_path = fs::path(c.root) / f.path;
  ensure_dir(final_path.parent_path().string());
  if (std::rename(part.c_str(), final_path.c_str()) != 0) {
    const int err = errno;
    discard(part);
    throw HubError("cannot move " + part + " to " + final_path.string() + ": " + std::strerror(err));
  }
  report(c, name, f.size, f.size, Phase::kDone, f.sha256);
}

PullResult result_of(const std::string& root, const Manifest& m) {
  const CacheEntry e = entry_of(root, m);
  PullResult r{e.id, e.path, {}, e.mmproj, e.bytes};
  r.parts.assign(e.files.begin(), e.files.begin() + long(m.parts.size()));
  return r;
}

std::string spec_id(const Spec& spec) {
  if (spec.kind == Spec::Kind::kUrl) return url_id(spec);
  if (spec.kind == Spec::Kind::kRepoFile) return spec.repo + ":" + file_tag(spec.file);
  return spec.tag.empty() ? spec.repo : spec.repo + ":" + spec.tag;
}

PullResult from_cache(const Context& c, const Spec& spec) {
  const std::string id = spec_id(spec);
  const std::optional<CacheEntry> e = Cache(c.root).find(id);
  if (!e) throw HubError("offline: " + id + " is not in the cache " + c.root + " (pull it without --offline first)");
  const std::optional<Manifest> m = read_manifest(manifest_file(c.root, e->id));
  if (!m) throw HubError("offline: the cache entry of " + e->id + " vanished while reading it");
  return result_of(c.root, *m);
}

Manifest resolve(const Context& c, const Spec& spec, const std::string& source, bool with_mmproj) {
  Manifest m;
  m.source = source;
  if (spec.kind == Spec::Kind::kUrl) {
    m.id = url_id(spec);
    m.quant = split_info(spec.path).tag;
    for (const std::string& p : split_parts(spec.path)) m.parts.push_back({"urls/" + spec.host + "/" + p, 0, ""});
    return m;
  }
  size_t rejected = 0;
  const std::vector<RemoteFile> files = fetch_listing(c, spec.repo, rejected);
  Plan plan;
  try {
    plan = plan_files(files, spec, with_mmproj);
  } catch (const HubError& e) {
    if (rejected == 0) throw;
    throw HubError(std::string(e.what()) + " (" + std::to_string(rejected) +
                   " entries of the file list were ignored: bad path, size or checksum)");
  }
  m.id = plan_id(spec, plan);
  m.quant = plan.tag;
  for (const RemoteFile& f : plan.parts) m.parts.push_back(stored(spec.repo, f));
  if (plan.mmproj) m.mmproj = stored(spec.repo, *plan.mmproj);
  return m;
}

// A stored file's name in its repo ("models/<repo>/" removed) or on its host ("urls/<host>/").
std::string remote_name(const Spec& spec, const StoredFile& f) {
  const size_t prefix = spec.kind == Spec::Kind::kUrl ? 6 + spec.host.size() : 8 + spec.repo.size();
  return f.path.substr(prefix);
}

// Fetches one stored file from where the spec says.
void fetch(const Context& c, const Spec& spec, StoredFile& f) {
  const std::string name = remote_name(spec, f);
  if (spec.kind == Spec::Kind::kUrl) {
    fetch_file(c, "https://" + spec.host + "/" + name + spec.query, f, name, "file " + name + " on " + spec.host);
  } else {
    fetch_file(c, c.endpoint + "/" + spec.repo + "/resolve/main/" + name, f, name,
               "file " + name + " of repo " + spec.repo);
  }
}

}  // namespace

PullResult pull(const std::string& spec_text, const PullOptions& options, const ProgressFn& progress,
                const std::atomic<bool>* cancel) {
  Context c = make_context(options, progress, cancel);
  const Spec spec = parse_spec(spec_text);
  if (options.offline) return from_cache(c, spec);
  if (spec.kind == Spec::Kind::kUrl) c.http.token.clear();  // the token is for the hub only
  report(c, spec_text, 0, 0, Phase::kResolving);
  ensure_dir(c.root + "/tmp");
  Manifest m = resolve(c, spec, spec_text, options.mmproj);
  for (StoredFile& f : m.parts) fetch(c, spec, f);
  if (m.mmproj) fetch(c, spec, *m.mmproj);
  write_manifest(c.root, m);
  PullResult result = result_of(c.root, m);
  report(c, m.id, result.bytes, result.bytes, Phase::kDone);
  return result;
}

}  // namespace hub
