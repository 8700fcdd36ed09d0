// libFuzzer target: a block file of the disk prefix cache (--cache-dir) as PrefixStore::load reads
// it. Byte 0 picks the mode: odd, the rest of the input is the whole file; even, bytes 1-2 give an
// offset into a valid block file and the rest is XORed onto it from there.
//
// Checked: load() never crashes, reads out of bounds or allocates from the file's sizes; it
// accepts a file only when it is exactly a valid block (a patched file is accepted only when the
// patch changed nothing), and then the K/V and snapshot it returns are the ones saved; a refused
// file is removed.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/runtime/prefix_store.h"

namespace {

using engine::PrefixStore;
constexpr uint64_t kFingerprint = 0x5eed;

[[noreturn]] void bug(const char* what) {
  std::fprintf(stderr, "fuzz_prefix_store: %s\n", what);
  std::abort();
}

struct Fixture {
  std::string dir;
  std::vector<int32_t> tokens = std::vector<int32_t>(PrefixStore::kBlockTokens);
  std::vector<uint8_t> kv = std::vector<uint8_t>(1000), snapshot = std::vector<uint8_t>(72);
  PrefixStore::Key key;
  std::string path;           // the block's file
  std::vector<uint8_t> file;  // its valid bytes

  Fixture() {
    char tmpl[] = "/tmp/fuzz_prefix_store_XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) bug("mkdtemp");
    dir = tmpl;
    for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(i * 37 + 5);
    for (size_t i = 0; i < kv.size(); ++i) kv[i] = static_cast<uint8_t>(i * 13);
    for (size_t i = 0; i < snapshot.size(); ++i) snapshot[i] = static_cast<uint8_t>(i * 7 + 1);
    engine::PrefixStoreOptions o;
    o.dir = dir;
    PrefixStore store(o, kFingerprint);
    key = store.next(store.first(), tokens.data());
    store.save(key, store.first(), tokens.data(), kv, snapshot);
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
      if (e.path().extension() == ".blk") path = e.path().string();
    }
    std::ifstream in(path, std::ios::binary);
    file.assign(std::istreambuf_iterator<char>(in), {});
    if (file.empty()) bug("no valid block file to start from");
  }
  ~Fixture() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Fixture f;
  if (size < 1) return 0;
  std::vector<uint8_t> bytes;
  if (data[0] & 1) {
    bytes.assign(data + 1, data + size);
  } else {
    bytes = f.file;
    if (size < 3) return 0;
    const size_t at = (size_t{data[1]} | size_t{data[2]} << 8) % bytes.size();
    for (size_t i = 3; i < size && at + i - 3 < bytes.size(); ++i) bytes[at + i - 3] ^= data[i];
  }
  {
    std::ofstream out(f.path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  }
  engine::PrefixStoreOptions o;
  o.dir = f.dir;
  o.warn = [](const std::string&) {};
  PrefixStore store(o, kFingerprint);
  std::vector<uint8_t> kv(f.kv.size()), snapshot(f.snapshot.size());
  bool has_snapshot = false;
  const bool ok = store.load(f.key, store.first(), f.tokens.data(), kv, snapshot, has_snapshot);
  if (ok != (bytes == f.file)) bug(ok ? "accepted a damaged block file" : "refused the valid block file");
  if (ok && (kv != f.kv || !has_snapshot || snapshot != f.snapshot)) bug("loaded other bytes than were saved");
  if (!ok && std::filesystem::exists(f.path)) bug("a refused file was left in place");
  return 0;
}
