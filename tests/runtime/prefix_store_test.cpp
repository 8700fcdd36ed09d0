// The prefix cache on disk (--cache-dir): block files written, read back, verified and bounded;
// on real models (../shared), a new evaluator -- a restarted server -- attaches the blocks an
// earlier one computed and gets the logits of computing everything itself.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/prefix_store.h"
#include "tests/runtime/model_eval.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

namespace fs = std::filesystem;
using ggufd::test::shared_path;

constexpr int32_t kStoreBlock = PrefixStore::kBlockTokens;

// A new empty directory per call (ctest runs test processes in parallel in one TempDir).
std::string fresh_dir() {
  static int calls = 0;
  const std::string d = testing::TempDir() + "/ggufd_store_" + std::to_string(::getpid()) + "_" + std::to_string(calls++);
  fs::remove_all(d);
  return d;
}

std::vector<int32_t> block_tokens(int32_t salt) {
  std::vector<int32_t> t(kStoreBlock);
  for (int32_t i = 0; i < kStoreBlock; ++i) t[static_cast<size_t>(i)] = salt * 1000 + i;
  return t;
}

std::vector<uint8_t> payload(size_t n, uint8_t salt) {
  std::vector<uint8_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = static_cast<uint8_t>(i * 31 + salt);
  return p;
}

struct Warnings {
  std::vector<std::string> seen;
  PrefixStoreOptions options(const std::string& dir, uint64_t max_bytes = uint64_t{1} << 30) {
    PrefixStoreOptions o;
    o.dir = dir;
    o.max_bytes = max_bytes;
    o.warn = [this](const std::string& w) { seen.push_back(w); };
    return o;
  }
};

// Inverts the byte `back` bytes before the end of the file.
void flip(const fs::path& p, int back) {
  std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
  f.seekg(-back, std::ios::end);
  const int c = f.get();
  f.seekp(-back, std::ios::end);
  f.put(static_cast<char>(~c));
}

// The only .blk file under dir.
fs::path only_block_file(const std::string& dir) {
  std::vector<fs::path> found;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.path().extension() == ".blk") found.push_back(e.path());
  }
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? fs::path() : found[0];
}

TEST(PrefixStore, ABlockSurvivesReopeningTheDirectory) {
  const std::string dir = fresh_dir();
  Warnings w;
  const std::vector<int32_t> t = block_tokens(1);
  const std::vector<uint8_t> kv = payload(1000, 7), snap = payload(96, 9);
  PrefixStore::Key key;
  {
    PrefixStore store(w.options(dir), 42);
    key = store.next(store.first(), t.data());
    EXPECT_FALSE(store.contains(key));
    store.save(key, store.first(), t.data(), kv, snap);
    EXPECT_TRUE(store.contains(key));
    EXPECT_EQ(store.stats().saved, 1);
  }
  PrefixStore again(w.options(dir), 42);
  ASSERT_EQ(again.next(again.first(), t.data()), key) << "the secret and the keys persist";
  EXPECT_EQ(again.stats().files, 1);
  std::vector<uint8_t> kv_in(kv.size()), snap_in(snap.size());
  bool has_snapshot = false;
  ASSERT_TRUE(again.load(key, again.first(), t.data(), kv_in, snap_in, has_snapshot));
  EXPECT_TRUE(has_snapshot);
  EXPECT_EQ(kv_in, kv);
  EXPECT_EQ(snap_in, snap);
  EXPECT_EQ(again.stats().loaded, 1);
  EXPECT_TRUE(w.seen.empty());

  PrefixStore other_model(w.options(dir), 43);
  EXPECT_NE(other_model.first(), again.first());
  EXPECT_EQ(other_model.stats().files, 0) << "each model has its own folder";
}

// A flipped byte, a file of another prefix under this key, a truncated file, a foreign header:
// ignored with a warning naming what is wrong, removed, never loaded.
TEST(PrefixStore, BadFilesAreIgnoredAndRemoved) {
  struct Damage {
    const char* name;
    void (*apply)(const fs::path&);
    const char* says;
  };
  const Damage damages[] = {
      {"flipped payload byte", [](const fs::path& p) { flip(p, 10); }, "checksum"},
      {"truncated", [](const fs::path& p) { fs::resize_file(p, fs::file_size(p) - 1); }, "size"},
      {"foreign magic",
       [](const fs::path& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.write("NOTOURS!", 8);
       },
       "magic"},
      {"empty", [](const fs::path& p) { fs::resize_file(p, 0); }, "header"},
  };
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.name);
    const std::string dir = fresh_dir();
    Warnings w;
    PrefixStore store(w.options(dir), 42);
    const std::vector<int32_t> t = block_tokens(2);
    const std::vector<uint8_t> kv = payload(4096, 3);
    const PrefixStore::Key key = store.next(store.first(), t.data());
    store.save(key, store.first(), t.data(), kv, {});
    const fs::path file = only_block_file(dir);
    d.apply(file);
    std::vector<uint8_t> in(kv.size());
    bool has_snapshot = true;
    EXPECT_FALSE(store.load(key, store.first(), t.data(), in, {}, has_snapshot));
    EXPECT_FALSE(has_snapshot);
    ASSERT_EQ(w.seen.size(), 1u);
    EXPECT_NE(w.seen[0].find(d.says), std::string::npos) << w.seen[0];
    EXPECT_FALSE(fs::exists(file));
    EXPECT_FALSE(store.contains(key));
    EXPECT_EQ(store.stats().rejected, 1);
  }
}

// A file asked for as the continuation of another prefix (tokens or parent differ) is refused.
TEST(PrefixStore, ABlockIsOnlyLoadedAsTheContinuationItWasSavedAs) {
  const std::string dir = fresh_dir();
  Warnings w;
  PrefixStore store(w.options(dir), 42);
  const std::vector<int32_t> t = block_tokens(3), u = block_tokens(4);
  const std::vector<uint8_t> kv = payload(256, 1);
  const PrefixStore::Key key = store.next(store.first(), t.data());
  store.save(key, store.first(), t.data(), kv, {});
  std::vector<uint8_t> in(kv.size());
  bool has_snapshot = false;
  EXPECT_FALSE(store.load(key, store.first(), u.data(), in, {}, has_snapshot));
  EXPECT_NE(w.seen.at(0).find("does not continue"), std::string::npos) << w.seen[0];
}

// Beyond max_bytes the least recently used files go; a load counts as a use.
TEST(PrefixStore, StaysWithinItsBudgetLeastRecentlyUsedFirst) {
  const std::string dir = fresh_dir();
  Warnings w;
  const std::vector<uint8_t> kv = payload(10000, 5);
  PrefixStore store(w.options(dir, 3 * 10300), 42);  // three blocks (header + 10,000 bytes each)
  std::vector<PrefixStore::Key> keys;
  for (int32_t i = 0; i < 3; ++i) {
    const std::vector<int32_t> t = block_tokens(10 + i);
    keys.push_back(store.next(store.first(), t.data()));
    store.save(keys.back(), store.first(), t.data(), kv, {});
  }
  std::vector<uint8_t> in(kv.size());
  bool has_snapshot = false;
  const std::vector<int32_t> t0 = block_tokens(10);
  ASSERT_TRUE(store.load(keys[0], store.first(), t0.data(), in, {}, has_snapshot));  // block 0 used last now
  const std::vector<int32_t> t3 = block_tokens(13);
  store.save(store.next(store.first(), t3.data()), store.first(), t3.data(), kv, {});
  EXPECT_TRUE(store.contains(keys[0]));
  EXPECT_FALSE(store.contains(keys[1])) << "the least recently used";
  EXPECT_TRUE(store.contains(keys[2]));
  EXPECT_EQ(store.stats().files, 3);
  EXPECT_EQ(store.stats().evicted, 1);
  EXPECT_LE(store.stats().bytes, 3u * 10300);
  EXPECT_EQ(PrefixStore(w.options(dir, 3 * 10300), 42).stats().files, 3) << "what is on disk";
}

TEST(PrefixStore, AnUnusableDirectoryIsAnError) {
  const std::string file = fresh_dir();
  std::ofstream(file) << "a file, not a directory";
  Warnings w;
  EXPECT_THROW(PrefixStore(w.options(file + "/sub"), 42), std::runtime_error);
}

// A first evaluator on `store` computes p and publishes it (its complete blocks go to disk).
int64_t compute_and_store(const Model& model, const std::vector<int32_t>& p, const PrefixStoreOptions& store) {
  ModelEvaluator first(model, 256, 2, KvType::kF16, 48, ComputeShare::make(2), 1 << 20, store);
  test::eval_tokens(first, 0, p, 0);
  first.publish_prefix(0, p);
  return first.cache_use().prefix.disk.saved;
}

class StoredPrefix : public ::testing::TestWithParam<std::string> {};

// A first evaluator computes 100 tokens and publishes them (3 blocks go to disk); a second one on
// the same directory, as after a restart, attaches those 3 blocks and computes the rest: its
// logits are those of computing everything. A hybrid stack resumes from the stored snapshot.
TEST_P(StoredPrefix, ARestartedEvaluatorAttachesTheBlocksAnEarlierOneComputed) {
  const std::string file = GetParam();
  GGUFD_REQUIRE_SHARED(file);
  const Model model = Model::load(shared_path(file));
  const std::vector<int32_t> p = test::spread_tokens(100, model.hparams().n_vocab);
  const std::string dir = fresh_dir();
  Warnings w;
  const PrefixStoreOptions store = w.options(dir);
  EXPECT_EQ(compute_and_store(model, p, store), 3);
  ModelEvaluator second(model, 256, 2, KvType::kF16, 48, ComputeShare::make(2), 1 << 20, store);
  EXPECT_TRUE(second.cache_use().prefix.on_disk);
  EXPECT_EQ(second.cache_use().prefix.disk.files, 3);
  ASSERT_EQ(second.share_prefix(1, p, 0, 99), 3 * kStoreBlock);
  EXPECT_EQ(second.cache_use().prefix.disk.loaded, 3);
  const std::vector<float> got = test::eval_tokens(second, 1, p, 3 * kStoreBlock);

  ModelEvaluator plain(model, 256, 2, KvType::kF16, 48, ComputeShare::make(2), 0);
  std::vector<float> want = test::eval_tokens(plain, 0, p, 0);
  want.erase(want.begin(), want.begin() + 3 * kStoreBlock * second.n_vocab());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "logits differ at " << (std::mismatch(got.begin(), got.end(), want.begin()).first - got.begin());
  EXPECT_TRUE(w.seen.empty()) << w.seen.front();
}

INSTANTIATE_TEST_SUITE_P(Models, StoredPrefix,
                         ::testing::Values("models/stories260K.gguf", "models/synth/synth-qwen35-Q8_0.gguf"),
                         [](const auto& p) { return p.param.find("qwen35") != std::string::npos ? "hybrid" : "llama"; });

// A corrupt middle block: the first one is attached from disk, the rest computed; the file is
// reported and removed. Another model's evaluator on the same directory finds nothing.
TEST(StoredPrefix, ACorruptBlockEndsWhatIsAttached) {
  const std::string file = "models/stories260K.gguf", other = "models/synth/synth-llama-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(file);
  GGUFD_REQUIRE_SHARED(other);
  const Model model = Model::load(shared_path(file));
  const std::vector<int32_t> p = test::spread_tokens(100, model.hparams().n_vocab);
  const std::string dir = fresh_dir();
  Warnings w;
  const PrefixStoreOptions store = w.options(dir);
  compute_and_store(model, p, store);
  {
    const Model m2 = Model::load(shared_path(other));
    ModelEvaluator foreign(m2, 256, 2, KvType::kF16, 48, ComputeShare::make(2), 1 << 20, store);
    EXPECT_EQ(foreign.cache_use().prefix.disk.files, 0);
    EXPECT_EQ(foreign.share_prefix(0, test::spread_tokens(100, m2.hparams().n_vocab), 0, 99), 0);
  }
  {
    ModelEvaluator f32kv(model, 256, 2, KvType::kF32, 48, ComputeShare::make(2), 1 << 20, store);
    EXPECT_EQ(f32kv.cache_use().prefix.disk.files, 0) << "another KV type is another cache";
  }
  // Corrupt the second block: recompute its key the way the cache does.
  PrefixStore keys(w.options(dir), PrefixStore::fingerprint(model, KvType::kF16));
  const PrefixStore::Key k1 = keys.next(keys.first(), p.data()), k2 = keys.next(k1, p.data() + kStoreBlock);
  ASSERT_TRUE(keys.contains(k2));
  fs::path f2;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    char name[40];
    std::snprintf(name, sizeof name, "%016llx%016llx.blk", static_cast<unsigned long long>(k2.a),
                  static_cast<unsigned long long>(k2.b));
    if (e.path().filename() == name) f2 = e.path();
  }
  ASSERT_FALSE(f2.empty());
  flip(f2, 1);
  ModelEvaluator second(model, 256, 2, KvType::kF16, 48, ComputeShare::make(2), 1 << 20, store);
  EXPECT_EQ(second.share_prefix(1, p, 0, 99), kStoreBlock);
  EXPECT_EQ(second.cache_use().prefix.disk.rejected, 1);
  EXPECT_FALSE(fs::exists(f2));
  ASSERT_FALSE(w.seen.empty());
  EXPECT_NE(w.seen.back().find("checksum"), std::string::npos) << w.seen.back();
}

}  // namespace
}  // namespace engine
