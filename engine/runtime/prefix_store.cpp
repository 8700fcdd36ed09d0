// Prefix blocks on disk: keys, the file format, the index and its LRU bound. See prefix_store.h.
#include "engine/runtime/prefix_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>

#include "engine/model/kv_cache.h"
#include "engine/model/model.h"

namespace engine {

namespace fs = std::filesystem;

namespace {

constexpr int32_t kTokens = PrefixStore::kBlockTokens;
constexpr uint32_t kVersion = 1;
constexpr char kMagic[8] = {'G', 'G', 'U', 'F', 'D', 'P', 'B', 'K'};

// The fixed-size head of a block file, then kv_bytes of K/V and snapshot_bytes of snapshot.
struct Header {
  char magic[8];
  uint32_t version;
  uint32_t block_tokens;
  uint64_t fingerprint;
  uint64_t key_a, key_b;
  uint64_t parent_a, parent_b;
  int32_t tokens[kTokens];
  uint64_t kv_bytes;
  uint64_t snapshot_bytes;
  uint64_t checksum;  // of the payload (kv then snapshot)
};
static_assert(sizeof(Header) == 8 + 4 + 4 + 8 + 32 + 4 * kTokens + 24);

// splitmix64's finalizer.
uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A 64-bit checksum of bytes: four multiply-rotate lanes over 8-byte words, then the tail; it
// catches torn writes and flipped bits, not forgery (the keys are what an attacker cannot choose).
uint64_t checksum(uint64_t h, std::span<const uint8_t> data) {
  constexpr uint64_t P1 = 0x9e3779b185ebca87ull, P2 = 0xc2b2ae3d27d4eb4full;
  std::array<uint64_t, 4> lane = {h + P1, h + P2, h, h - P1};
  size_t i = 0;
  for (; i + 32 <= data.size(); i += 32) {
    for (size_t l = 0; l < 4; ++l) {
      uint64_t w;
      std::memcpy(&w, data.data() + i + 8 * l, 8);
      lane[l] = rotl(lane[l] + w * P2, 31) * P1;
    }
  }
  uint64_t r = mix(lane[0]) ^ rotl(mix(lane[1]), 17) ^ rotl(mix(lane[2]), 29) ^ rotl(mix(lane[3]), 43);
  for (; i < data.size(); ++i) r = mix(r + data[i] + P1);
  return mix(r ^ data.size());
}

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

bool parse_hex(const std::string& s, uint64_t& v) {
  if (s.size() != 16) return false;
  v = 0;
  for (char c : s) {
    const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) return false;
    v = v << 4 | static_cast<uint64_t>(d);
  }
  return true;
}

int64_t now_ns() { return fs::file_time_type::clock::now().time_since_epoch().count(); }

// DIR/secret: 16 random bytes made once. A file of another size is replaced (its keys are lost).
void read_secret(const std::string& dir, uint64_t secret[2], const std::function<void(const std::string&)>& warn) {
  const std::string path = dir + "/secret";
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    const size_t n = std::fread(secret, 1, 16, f);
    const bool more = std::fgetc(f) != EOF;
    std::fclose(f);
    if (n == 16 && !more) return;
    if (warn) warn("prefix cache: " + path + " is not 16 bytes; making a new secret (the cached blocks are lost)");
  }
  std::random_device rd;
  for (int i = 0; i < 2; ++i) secret[i] = (static_cast<uint64_t>(rd()) << 32) ^ rd();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0 || ::write(fd, secret, 16) != 16 || ::close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    throw std::runtime_error("prefix cache: cannot write " + path + ": " + std::strerror(errno));
  }
}

}  // namespace

uint64_t PrefixStore::fingerprint(const Model& model, KvType kv_type, bool nextn) {
  const gguf::FileSet& files = model.files();
  uint64_t h = mix(files.first().file_size() ^ (uint64_t{kVersion} << 56) ^ (static_cast<uint64_t>(kv_type) << 48) ^
                   (uint64_t{nextn} << 47));
  for (const gguf::File& f : files.parts()) {  // (a split set: each part in turn)
    const std::span<const uint8_t> bytes = f.bytes();
    if (&f != &files.first()) h = mix(h ^ f.file_size());
    h = checksum(h, bytes.first(std::min<size_t>(bytes.size(), f.data_offset())));  // metadata + tensor table
    for (const gguf::TensorInfo& t : f.tensors()) {  // a sample of each tensor: its first and last 64 bytes
      const uint64_t begin = f.data_offset() + t.offset, n = std::min<uint64_t>(t.n_bytes, 64);
      if (begin + t.n_bytes > bytes.size()) continue;
      h = checksum(h, bytes.subspan(begin, n));
      h = checksum(h, bytes.subspan(begin + t.n_bytes - n, n));
    }
  }
  return h;
}

PrefixStore::PrefixStore(const PrefixStoreOptions& options, uint64_t fingerprint)
    : opt_(options), fingerprint_(fingerprint) {
  std::error_code ec;
  fs::create_directories(opt_.dir, ec);
  if (ec) throw std::runtime_error("prefix cache: cannot create directory " + opt_.dir + ": " + ec.message());
  read_secret(opt_.dir, secret_, opt_.warn);
  model_dir_ = opt_.dir + "/" + hex(fingerprint_);
  fs::create_directories(model_dir_, ec);
  if (ec) throw std::runtime_error("prefix cache: cannot create directory " + model_dir_ + ": " + ec.message());
  first_ = {mix(secret_[0] ^ fingerprint_), mix(secret_[1] + fingerprint_)};
  // The files already there: <32 hex digits>.blk; anything else is not ours and left alone.
  for (const fs::directory_entry& e : fs::directory_iterator(model_dir_, ec)) {
    const std::string name = e.path().filename().string();
    Key key;
    if (name.size() != 36 || name.substr(32) != ".blk" || !parse_hex(name.substr(0, 16), key.a) ||
        !parse_hex(name.substr(16, 16), key.b) || !e.is_regular_file(ec)) {
      continue;
    }
    const uint64_t bytes = e.file_size(ec);
    if (ec) continue;
    Entry& entry = index_[key];
    entry.bytes = bytes;
    entry.used = e.last_write_time(ec).time_since_epoch().count();
    lru_.insert({entry.used, key});
    bytes_ += bytes;
  }
  evict();
}

PrefixStore::Key PrefixStore::next(Key before, const int32_t* tokens) const {
  Key k{mix(before.a ^ secret_[0]), mix(before.b + secret_[1])};
  for (int32_t i = 0; i < kTokens; ++i) {
    const auto t = static_cast<uint32_t>(tokens[i]);
    k.a = mix(k.a + 0x9e3779b97f4a7c15ull + t);
    k.b = mix(k.b ^ (0xc2b2ae3d27d4eb4full * (t + 1)));
  }
  return k;
}

std::string PrefixStore::path_of(Key key) const { return model_dir_ + "/" + hex(key.a) + hex(key.b) + ".blk"; }

void PrefixStore::warn(const std::string& what) const {
  if (opt_.warn) opt_.warn("prefix cache: " + what);
}

void PrefixStore::forget(Key key, bool remove_file) {
  const auto it = index_.find(key);
  if (it != index_.end()) {
    lru_.erase({it->second.used, key});
    bytes_ -= it->second.bytes;
    index_.erase(it);
  }
  if (remove_file) {
    std::error_code ec;
    fs::remove(path_of(key), ec);
  }
}

void PrefixStore::touch(Key key, uint64_t bytes, bool set_mtime) {
  const auto [it, inserted] = index_.try_emplace(key);
  Entry& e = it->second;
  if (!inserted) lru_.erase({e.used, key});
  bytes_ = bytes_ - e.bytes + bytes;
  e.bytes = bytes;
  // (the file clock's counts may be negative: its epoch is not the system clock's)
  e.used = lru_.empty() ? now_ns() : std::max(now_ns(), lru_.rbegin()->first + 1);
  lru_.insert({e.used, key});
  if (set_mtime) {
    std::error_code ec;
    fs::last_write_time(path_of(key), fs::file_time_type(fs::file_time_type::duration(e.used)), ec);
  }
}

void PrefixStore::evict() {
  while (bytes_ > opt_.max_bytes && !lru_.empty()) {
    forget(lru_.begin()->second, true);
    ++evicted_;
  }
}

void PrefixStore::save(Key key, Key parent, const int32_t* tokens, std::span<const uint8_t> kv,
                       std::span<const uint8_t> snapshot) {
  const uint64_t bytes = sizeof(Header) + kv.size() + snapshot.size();
  if (contains(key) || bytes > opt_.max_bytes) return;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof kMagic);
  h.version = kVersion;
  h.block_tokens = kTokens;
  h.fingerprint = fingerprint_;
  h.key_a = key.a, h.key_b = key.b, h.parent_a = parent.a, h.parent_b = parent.b;
  std::copy_n(tokens, kTokens, h.tokens);
  h.kv_bytes = kv.size();
  h.snapshot_bytes = snapshot.size();
  h.checksum = checksum(checksum(fingerprint_, kv), snapshot);
  const std::string path = path_of(key), tmp = path + ".tmp." + std::to_string(getpid());
  FILE* f = std::fopen(tmp.c_str(), "wb");
  bool ok = f != nullptr && std::fwrite(&h, sizeof h, 1, f) == 1 &&
            (kv.empty() || std::fwrite(kv.data(), kv.size(), 1, f) == 1) &&
            (snapshot.empty() || std::fwrite(snapshot.data(), snapshot.size(), 1, f) == 1);
  const int err = errno;
  if (f != nullptr) ok = std::fclose(f) == 0 && ok;
  if (!ok || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    if (!write_failed_) warn("cannot write " + path + ": " + std::strerror(err) + " (further write errors are not reported)");
    write_failed_ = true;
    return;
  }
  ++saved_;
  touch(key, bytes, false);
  evict();
}

bool PrefixStore::load(Key key, Key parent, const int32_t* tokens, std::span<uint8_t> kv, std::span<uint8_t> snapshot,
                       bool& has_snapshot) {
  has_snapshot = false;
  if (!contains(key)) return false;
  const std::string path = path_of(key);
  FILE* f = std::fopen(path.c_str(), "rb");
  if (f == nullptr) {  // another server sharing the directory evicted it
    forget(key, false);
    return false;
  }
  std::string bad;
  Header h{};
  const auto expect = [&](bool ok, const std::string& what) {
    if (!ok && bad.empty()) bad = what;
  };
  expect(std::fread(&h, sizeof h, 1, f) == 1, "shorter than a block header");
  expect(std::memcmp(h.magic, kMagic, sizeof kMagic) == 0, "not a ggufd prefix block (magic)");
  expect(h.version == kVersion, "format version " + std::to_string(h.version) + ", expected " + std::to_string(kVersion));
  expect(h.block_tokens == kTokens, "block of " + std::to_string(h.block_tokens) + " tokens, expected 32");
  expect(h.fingerprint == fingerprint_, "another model's block (fingerprint)");
  expect(h.key_a == key.a && h.key_b == key.b, "its key is not its name");
  expect(h.parent_a == parent.a && h.parent_b == parent.b && std::equal(tokens, tokens + kTokens, h.tokens),
         "it does not continue this prefix (parent key or tokens differ)");
  expect(h.kv_bytes == kv.size(), "K/V of " + std::to_string(h.kv_bytes) + " bytes, expected " + std::to_string(kv.size()));
  expect(h.snapshot_bytes == 0 || h.snapshot_bytes == snapshot.size(),
         "snapshot of " + std::to_string(h.snapshot_bytes) + " bytes, expected " + std::to_string(snapshot.size()));
  if (bad.empty()) {
    const std::span<uint8_t> snap = snapshot.first(h.snapshot_bytes);
    expect((kv.empty() || std::fread(kv.data(), kv.size(), 1, f) == 1) &&
               (snap.empty() || std::fread(snap.data(), snap.size(), 1, f) == 1) && std::fgetc(f) == EOF,
           "its size is not header + payload");
    expect(bad.empty() && checksum(checksum(fingerprint_, kv), snap) == h.checksum, "checksum mismatch");
    has_snapshot = !snap.empty();
  }
  std::fclose(f);
  if (!bad.empty()) {
    ++rejected_;
    warn("ignored and removed " + path + ": " + bad);
    forget(key, true);
    has_snapshot = false;
    return false;
  }
  ++loaded_;
  touch(key, index_[key].bytes, true);
  return true;
}

PrefixStoreStats PrefixStore::stats() const {
  PrefixStoreStats s;
  s.files = static_cast<int64_t>(index_.size());
  s.bytes = bytes_;
  s.loaded = loaded_;
  s.saved = saved_;
  s.rejected = rejected_;
  s.evicted = evicted_;
  return s;
}

}  // namespace engine
