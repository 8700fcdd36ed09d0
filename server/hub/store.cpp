// Manifests, locks and checksums of the model cache (see store.h).
#include "server/hub/store.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/file.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <thread>

#include "server/hub/hub.h"

namespace hub::detail {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

std::string encode_id(const std::string& id) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : id) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      out += char(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

json file_json(const StoredFile& f) { return {{"path", f.path}, {"size", f.size}, {"sha256", f.sha256}}; }

StoredFile file_from(const json& j) {
  StoredFile f{j.at("path").get<std::string>(), j.at("size").get<uint64_t>(), j.value("sha256", "")};
  if (f.path.empty() || f.path[0] == '/' || f.path.find("..") != std::string::npos) throw HubError("bad path");
  return f;
}

std::set<std::string> paths_of(const Manifest& m) {
  std::set<std::string> out;
  for (const StoredFile& f : m.parts) out.insert(f.path);
  if (m.mmproj) out.insert(m.mmproj->path);
  return out;
}

// Deletes `candidates` no manifest names, and the folders that leaves empty.
void prune(const std::string& root, const std::set<std::string>& candidates) {
  std::set<std::string> used;
  for (const Manifest& m : all_manifests(root)) used.merge(paths_of(m));
  std::error_code ec;
  for (const std::string& rel : candidates) {
    if (used.count(rel) != 0) continue;
    fs::path p = fs::path(root) / rel;
    fs::remove(p, ec);
    for (p = p.parent_path(); p.has_parent_path() && p.parent_path() != fs::path(root); p = p.parent_path()) {
      if (!fs::is_empty(p, ec) || !fs::remove(p, ec)) break;
    }
  }
}

std::string lock_path(const std::string& root) { return root + "/tmp/manifests.lock"; }

}  // namespace

std::string manifest_file(const std::string& root, const std::string& id) {
  return root + "/manifests/" + encode_id(id) + ".json";
}

std::optional<Manifest> read_manifest(const std::string& file) {
  std::ifstream in(file);
  if (!in) return std::nullopt;
  try {
    const json j = json::parse(in);
    Manifest m{j.at("id").get<std::string>(), j.value("quant", ""), j.value("source", ""), {}, std::nullopt};
    for (const json& f : j.at("parts")) m.parts.push_back(file_from(f));
    if (j.contains("mmproj") && j["mmproj"].is_object()) m.mmproj = file_from(j["mmproj"]);
    if (m.parts.empty()) return std::nullopt;
    return m;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::vector<Manifest> all_manifests(const std::string& root) {
  std::vector<Manifest> out;
  std::error_code ec;
  for (fs::directory_iterator it(root + "/manifests", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().extension() != ".json") continue;
    if (auto m = read_manifest(it->path().string())) out.push_back(std::move(*m));
  }
  return out;
}

bool complete(const std::string& root, const Manifest& m) {
  std::error_code ec;
  for (const std::string& rel : paths_of(m)) {
    const auto size = fs::file_size(fs::path(root) / rel, ec);
    if (ec) return false;
    const bool match = [&] {
      for (const StoredFile& f : m.parts) if (f.path == rel) return f.size == size;
      return m.mmproj && m.mmproj->size == size;
    }();
    if (!match) return false;
  }
  return true;
}

void write_manifest(const std::string& root, const Manifest& m) {
  ensure_dir(root + "/manifests");
  ensure_dir(root + "/tmp");
  FileLock lock(lock_path(root), nullptr);
  json j = {{"id", m.id}, {"quant", m.quant}, {"source", m.source}, {"parts", json::array()}, {"mmproj", nullptr}};
  for (const StoredFile& f : m.parts) j["parts"].push_back(file_json(f));
  if (m.mmproj) j["mmproj"] = file_json(*m.mmproj);
  const std::string file = manifest_file(root, m.id);
  const std::optional<Manifest> old = read_manifest(file);
  const std::string tmp = file + ".tmp" + std::to_string(::getpid()) + "-" +
                          std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id()));
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump(2) << '\n';
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw HubError("cannot write " + tmp + ": " + std::strerror(errno));
    }
  }
  if (std::rename(tmp.c_str(), file.c_str()) != 0) {
    const int err = errno;
    std::error_code ec;
    fs::remove(tmp, ec);
    throw HubError("cannot move " + tmp + " to " + file + ": " + std::strerror(err));
  }
  if (old) prune(root, paths_of(*old));
}

bool remove_manifest(const std::string& root, const std::string& id) {
  const std::string file = manifest_file(root, id);
  ensure_dir(root + "/tmp");
  FileLock lock(lock_path(root), nullptr);
  const std::optional<Manifest> m = read_manifest(file);
  std::error_code ec;
  if (!fs::remove(file, ec)) return false;
  if (m) prune(root, paths_of(*m));
  return true;
}

void ensure_dir(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) {
    throw HubError("cannot create cache directory " + dir + ": " + (ec ? ec.message() : "not a directory") +
                   " (GGUFD_CACHE chooses another place)");
  }
}

FileLock::FileLock(const std::string& path, const std::atomic<bool>* cancel) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) throw HubError("cannot open lock file " + path + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno != EWOULDBLOCK && errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      throw HubError("cannot lock " + path + ": " + std::strerror(err));
    }
    if (cancel != nullptr && cancel->load()) {
      ::close(fd_);
      throw HubError("cancelled");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

FileLock::~FileLock() { ::close(fd_); }  // closing releases the flock

namespace {

struct MdDeleter {
  void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

std::string hex_digest(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &len) != 1) throw HubError("OpenSSL: SHA-256 failed");
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < len; ++i) {
    out += hex[digest[i] >> 4];
    out += hex[digest[i] & 15];
  }
  return out;
}

std::unique_ptr<EVP_MD_CTX, MdDeleter> new_sha256() {
  std::unique_ptr<EVP_MD_CTX, MdDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) throw HubError("OpenSSL: no SHA-256");
  return ctx;
}

}  // namespace

std::string sha256_file(const std::string& path, const std::atomic<bool>* cancel) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw HubError("cannot read " + path + ": " + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  auto ctx = new_sha256();
  std::vector<char> buf(size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw HubError("cannot read " + path + ": " + std::strerror(errno));
    if (n == 0) break;
    if (cancel != nullptr && cancel->load()) throw HubError("cancelled");
    EVP_DigestUpdate(ctx.get(), buf.data(), size_t(n));
  }
  return hex_digest(ctx.get());
}

}  // namespace hub::detail

namespace hub {

std::string sha256_hex(const std::string& data) {
  auto ctx = detail::new_sha256();
  EVP_DigestUpdate(ctx.get(), data.data(), data.size());
  return detail::hex_digest(ctx.get());
}

}  // namespace hub
