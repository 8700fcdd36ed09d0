// Split sets: part names, finding the parts from any of them, and refusals that name the file and
// what was expected against what was found.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/magic.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "gguf/file_set.h"
#include "gguf/naming.h"
#include "gguf/summary.h"
#include "gguf/writer.h"
#include "tests/support/split_writer.h"

namespace {

using gguf::OwnedValue;
using ggufd::test::SplitPlan;
using ggufd::test::even_plan;
using ggufd::test::write_split;

// The message of the gguf::Error FileSet::open throws on `path`, or "" when it opens.
std::string open_error(const std::string& path) {
  try {
    gguf::FileSet::open(path);
  } catch (const gguf::Error& e) {
    return e.what();
  }
  return "";
}

#ifndef EXPECT_CONTAINS
#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << (haystack)
#endif

std::string fresh_dir() { return ggufd::test::fresh_split_dir("ggufd_split"); }

// A small file of 7 tensors whose bytes differ, with some metadata.
struct Source {
  std::vector<uint8_t> bytes;
  gguf::File file;
  Source() : bytes(make()), file(gguf::File::parse(bytes, "src.gguf")) {}
  static std::vector<uint8_t> make() {
    gguf::Writer w;
    w.set("general.architecture", OwnedValue::string("llama"));
    w.set("general.name", OwnedValue::string("split test"));
    for (int i = 0; i < 7; ++i) {
      std::vector<uint8_t> data(4 * 3 * static_cast<size_t>(i + 1));
      for (size_t b = 0; b < data.size(); ++b) data[b] = static_cast<uint8_t>(i * 31 + b);
      w.add_tensor("t" + std::to_string(i), gguf::TensorType::F32, {3, static_cast<uint64_t>(i + 1)}, data);
    }
    return w.to_bytes();
  }
};

// Every tensor of `src` is in `set` once, with the same type, shape and bytes.
void expect_same_tensors(const gguf::File& src, const gguf::FileSet& set) {
  ASSERT_EQ(set.n_tensors(), src.tensors().size());
  for (const gguf::TensorInfo& t : src.tensors()) {
    const gguf::TensorInfo* s = set.find_tensor(t.name);
    ASSERT_NE(s, nullptr) << t.name;
    EXPECT_EQ(s->type, t.type);
    EXPECT_EQ(s->ne, t.ne);
    EXPECT_TRUE(std::equal(s->data.begin(), s->data.end(), t.data.begin(), t.data.end())) << t.name;
  }
}

TEST(SplitName, ParsesLlamaCppPostfixOnly) {
  const auto s = gguf::parse_split_name("/m/Qwen3-235B-Q4_K_M-00002-of-00005.gguf");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->prefix, "/m/Qwen3-235B-Q4_K_M");
  EXPECT_EQ(s->no, 2);
  EXPECT_EQ(s->count, 5);
  for (const char* bad : {"m.gguf", "m-00001-of-00003.bin", "m-1-of-3.gguf", "m-00000-of-00003.gguf",
                          "m-00004-of-00003.gguf", "m-00001-of-00000.gguf", "-00001-of-00003.gguf",
                          "/d/-00001-of-00003.gguf", "m-0000a-of-00003.gguf", "m-00001_of-00003.gguf"}) {
    EXPECT_FALSE(gguf::parse_split_name(bad)) << bad;
  }
  EXPECT_EQ(gguf::split_path("/m/x", 3, 12), "/m/x-00003-of-00012.gguf");
}

TEST(SplitName, PartsFromAnyPartAndLaterPartsAreMarked) {
  const std::vector<std::string> want = {"d/x-00001-of-00003.gguf", "d/x-00002-of-00003.gguf", "d/x-00003-of-00003.gguf"};
  for (const std::string& p : want) EXPECT_EQ(gguf::split_parts(p), want);
  EXPECT_EQ(gguf::split_parts("d/x.gguf"), std::vector<std::string>{"d/x.gguf"});
  EXPECT_FALSE(gguf::is_later_split_part("d/x-00001-of-00003.gguf"));
  EXPECT_TRUE(gguf::is_later_split_part("d/x-00002-of-00003.gguf"));
  EXPECT_TRUE(gguf::is_later_split_part("d/x-00003-of-00003.gguf"));
  EXPECT_FALSE(gguf::is_later_split_part("d/x.gguf"));
}

TEST(FileSet, OpensTwoAndThreePartsFromAnyPart) {
  const Source src;
  for (int n : {2, 3}) {
    const std::string prefix = fresh_dir() + "/m";
    const std::vector<std::string> paths = write_split(src.file, prefix, even_plan(src.file, n));
    uint64_t on_disk = 0;
    for (const std::string& p : paths) on_disk += std::filesystem::file_size(p);
    EXPECT_EQ(gguf::model_files_size(paths.back()), on_disk);
    for (const std::string& p : paths) {
      const gguf::FileSet set = gguf::FileSet::open(p);
      ASSERT_EQ(set.parts().size(), static_cast<size_t>(n));
      EXPECT_TRUE(set.is_split());
      EXPECT_EQ(set.first().name(), paths[0]);  // the metadata's file, whichever part was named
      EXPECT_EQ(set.first().get_string("general.name"), "split test");
      EXPECT_EQ(set.file_size(), on_disk);
      expect_same_tensors(src.file, set);
      const gguf::Summary s = gguf::summarize(set);
      EXPECT_EQ(s.n_params, gguf::summarize(src.file).n_params);
    }
  }
}

// A page-aligned buffer for read_mapped (O_DIRECT needs one): capacity `n` plus room, 0xEE.
struct AlignedReadBuffer {
  explicit AlignedReadBuffer(size_t n) : capacity(gguf::File::read_room(n)), bytes(capacity + gguf::File::kReadAlign, 0xEE) {}
  uint8_t* data() {
    const auto at = reinterpret_cast<uintptr_t>(bytes.data());
    return bytes.data() + (gguf::File::kReadAlign - at % gguf::File::kReadAlign) % gguf::File::kReadAlign;
  }
  size_t capacity;
  std::vector<uint8_t> bytes;
};

// Drops a file's pages from the page cache (those no process maps), so the next read_mapped
// reads them past the cache. True when some page under [offset, offset + n) is gone from it
// (tmpfs keeps every page, and the first fault in a mapping maps the pages around it too).
bool evict_from_page_cache(const std::string& path, size_t offset, size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return false;
  ::fdatasync(fd);  // (dirty pages stay)
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  const auto size = static_cast<size_t>(::lseek(fd, 0, SEEK_END));
  void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return false;
  std::vector<unsigned char> pages((size + 4095) / 4096);
  const bool gone = ::mincore(p, size, pages.data()) == 0 &&
                    !std::all_of(pages.begin() + static_cast<ptrdiff_t>(offset / 4096),
                                 pages.begin() + static_cast<ptrdiff_t>((offset + n + 4095) / 4096),
                                 [](unsigned char c) { return (c & 1) != 0; });
  ::munmap(p, size);
  return gone;
}

// read_mapped reads a tensor's bytes from whichever part holds them, as the mapping shows them,
// also into a misaligned or tight buffer (read through the cache, to the buffer's start). It
// refuses ranges outside every part, ranges larger than the buffer, and Files that borrow their
// bytes.
TEST(FileSet, ReadMappedReadsThePartThatHoldsTheRange) {
  const Source src;
  const std::vector<std::string> paths = write_split(src.file, fresh_dir() + "/m", even_plan(src.file, 3));
  const gguf::FileSet set = gguf::FileSet::open(paths[0]);
  ASSERT_TRUE(set.owns_mapping());
  {
    for (const gguf::TensorInfo* t : set.tensors()) {
      for (const std::span<const uint8_t> range : {t->data, t->data.subspan(t->data.size() / 2)}) {  // also part of one
        AlignedReadBuffer buffer(range.size());
        const uint8_t* got = set.read_mapped(range, buffer.data(), buffer.capacity);
        ASSERT_NE(got, nullptr) << t->name;
        ASSERT_GE(got, buffer.data());
        ASSERT_LE(got + range.size(), buffer.data() + buffer.capacity);
        EXPECT_TRUE(std::equal(range.begin(), range.end(), got)) << t->name;
        // a misaligned buffer of just the range's size
        std::vector<uint8_t> tight(range.size() + 2, 0xEE);
        ASSERT_EQ(set.read_mapped(range, tight.data() + 1, range.size()), tight.data() + 1) << t->name;
        EXPECT_TRUE(std::equal(range.begin(), range.end(), tight.begin() + 1)) << t->name;
        EXPECT_EQ(tight.back(), 0xEE) << t->name;  // nothing written past the range
        if (!range.empty()) {
          EXPECT_EQ(set.read_mapped(range, tight.data(), range.size() - 1), nullptr) << t->name;  // does not fit
        }
      }
    }
  }
  std::vector<uint8_t> out(64);
  const gguf::File& last = set.parts().back();
  EXPECT_EQ(set.read_mapped({last.bytes().data() + last.bytes().size() - 8, 16}, out.data(), out.size()), nullptr);  // runs past the end
  EXPECT_EQ(set.read_mapped({src.bytes.data(), 16}, out.data(), out.size()), nullptr);  // not in any part
  EXPECT_EQ(src.file.read_mapped({src.bytes.data(), 16}, out.data(), out.size()), nullptr);  // borrowed bytes: no file
  EXPECT_FALSE(src.file.reads_direct());
  EXPECT_FALSE(gguf::FileSet::single(src.file).owns_mapping());
}

// A range whose pages are not in the page cache is read past it (O_DIRECT, from the page holding
// its first byte), with the same bytes, at any offset and length; once cached, through the cache.
TEST(FileSet, ReadMappedReadsColdRangesPastThePageCache) {
  gguf::Writer w;
  w.set("general.architecture", OwnedValue::string("llama"));
  std::vector<std::vector<uint8_t>> datas;
  for (int i = 0; i < 3; ++i) {
    std::vector<uint8_t> data(4 * 4096 * static_cast<size_t>(i + 2));  // 32-160 KiB, several pages
    for (size_t b = 0; b < data.size(); ++b) data[b] = static_cast<uint8_t>(b * 7 + i * 13 + b / 4096);
    w.add_tensor("w" + std::to_string(i), gguf::TensorType::F32, {4096, static_cast<uint64_t>(i + 2)}, data);
    datas.push_back(std::move(data));
  }
  const std::string path = fresh_dir() + "/cold.gguf";
  w.write(path);
  const gguf::FileSet set = gguf::FileSet::open(path);
  int direct = 0, evicted = 0;
  for (int i = 0; i < 3; ++i) {
    const gguf::TensorInfo& t = *set.find_tensor("w" + std::to_string(i));
    for (const size_t from : {size_t{0}, size_t{1}, size_t{4095}, size_t{4097}, t.data.size() - 100}) {
      for (const size_t n : {size_t{1}, size_t{100}, t.data.size() - from}) {
        if (from + n > t.data.size()) continue;
        const std::span<const uint8_t> range = t.data.subspan(from, n);
        const bool cold = evict_from_page_cache(path, static_cast<size_t>(range.data() - set.first().bytes().data()), n);
        AlignedReadBuffer buffer(n);
        const uint8_t* got = set.read_mapped(range, buffer.data(), buffer.capacity);
        ASSERT_NE(got, nullptr) << t.name << " +" << from << " x" << n;
        EXPECT_TRUE(std::equal(datas[i].begin() + static_cast<ptrdiff_t>(from), datas[i].begin() + static_cast<ptrdiff_t>(from + n), got))
            << t.name << " +" << from << " x" << n;
        const bool off_page = reinterpret_cast<uintptr_t>(range.data()) % gguf::File::kReadAlign != 0;
        evicted += cold && off_page;
        direct += got != buffer.data();  // (only a direct read starts at the page holding the first byte)
        // read again, now cached (a direct read leaves nothing in the cache: read through it once)
        std::vector<uint8_t> through(n);
        ASSERT_EQ(set.read_mapped(range, through.data(), n), through.data());
        ASSERT_EQ(set.read_mapped(range, buffer.data(), buffer.capacity), buffer.data()) << t.name << " +" << from;
      }
    }
  }
  struct statfs fs {};
  const bool tmpfs = ::statfs(path.c_str(), &fs) == 0 && fs.f_type == TMPFS_MAGIC;  // (keeps every page cached)
  if (set.reads_direct() && !tmpfs) {
    EXPECT_GT(evicted, 0) << "no range of " << path << " could be evicted from the page cache";
    EXPECT_EQ(direct, evicted);
  }
}

TEST(FileSet, FirstPartMayHoldMetadataOnly) {  // llama-gguf-split --no-tensor-first-split
  const Source src;
  const std::string prefix = fresh_dir() + "/m";
  const auto paths = write_split(src.file, prefix, even_plan(src.file, 3, true));
  const gguf::FileSet set = gguf::FileSet::open(paths[0]);
  EXPECT_TRUE(set.first().tensors().empty());
  expect_same_tensors(src.file, set);
}

TEST(FileSet, FileWithoutSplitKeysIsOneFileWhateverItsName) {
  const Source src;
  const std::string path = fresh_dir() + "/m-00001-of-00002.gguf";
  gguf::Writer w;
  for (const gguf::KeyValue& kv : src.file.metadata()) w.set(std::string(kv.key), OwnedValue::from(kv.value));
  w.write(path);
  const gguf::FileSet set = gguf::FileSet::open(path);
  EXPECT_FALSE(set.is_split());
  EXPECT_EQ(set.n_tensors(), 0u);
}

TEST(FileSet, MissingPartIsNamed) {
  const Source src;
  const auto paths = write_split(src.file, fresh_dir() + "/m", even_plan(src.file, 3));
  std::filesystem::remove(paths[1]);
  for (const std::string& p : {paths[0], paths[2]}) {
    const std::string e = open_error(p);
    EXPECT_CONTAINS(e, paths[1]);
    EXPECT_CONTAINS(e, "part 2 of 3");
    EXPECT_CONTAINS(e, "No such file");
  }
}

TEST(FileSet, PartOfAnotherSetIsRefused) {
  const Source src;
  {  // a part whose split.count differs from the set's
    SplitPlan plan = even_plan(src.file, 3);
    plan.edit = [](int p, gguf::Writer& w) {
      if (p == 2) w.set("split.count", OwnedValue::u16(4));
    };
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[0]);
    EXPECT_CONTAINS(e, paths[2]);
    EXPECT_CONTAINS(e, "split.count is 4, expected 3");
  }
  {  // the name says 3 parts, the keys 2
    SplitPlan plan = even_plan(src.file, 3);
    plan.edit = [](int, gguf::Writer& w) { w.set("split.count", OwnedValue::u16(2)); };
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[0]);
    EXPECT_CONTAINS(e, paths[0]);
    EXPECT_CONTAINS(e, "the file name says part 1 of 3, but split.count is 2");
  }
  {  // a part of another model's set of as many parts
    SplitPlan plan = even_plan(src.file, 2);
    plan.edit = [](int p, gguf::Writer& w) {
      if (p == 1) w.set("split.tensors.count", OwnedValue::i32(9));
    };
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[0]);
    EXPECT_CONTAINS(e, paths[1]);
    EXPECT_CONTAINS(e, "split.tensors.count is 9, but " + paths[0] + " says 7");
  }
  {  // parts in the wrong places
    SplitPlan plan = even_plan(src.file, 3);
    plan.edit = [](int p, gguf::Writer& w) {
      if (p == 1) w.set("split.no", OwnedValue::u16(2));
    };
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[0]);
    EXPECT_CONTAINS(e, paths[1]);
    EXPECT_CONTAINS(e, "split.no is 2, expected 1 (part 2 of 3)");
  }
}

TEST(FileSet, DuplicateAndMissingTensorsAreRefused) {
  const Source src;
  {
    SplitPlan plan = even_plan(src.file, 3);
    plan.tensors[2].push_back(plan.tensors[0].front());  // t0 in parts 1 and 3
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[0]);
    EXPECT_CONTAINS(e, paths[2] + ": tensor 't0' is also in " + paths[0]);
  }
  {
    SplitPlan plan = even_plan(src.file, 3);
    plan.tensors[1].pop_back();
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[1]);
    EXPECT_CONTAINS(e, paths[0]);
    EXPECT_CONTAINS(e, "split.tensors.count is 7, but the 3 parts hold 6 tensors");
  }
}

TEST(FileSet, HostileSplitKeysAreRefused) {
  const Source src;
  struct HostileKey {
    const char* key;
    OwnedValue value;
    int part;  // -1: every part
    const char* message;
  };
  const std::vector<HostileKey> cases = {
      {"split.count", OwnedValue::u16(0), 0, "split.count is 0, expected 1 to 65535"},
      {"split.count", OwnedValue::u32(100000), 0, "split.count is 100000, expected 1 to 65535"},
      {"split.count", OwnedValue::i32(-2), 0, "split.count is -2, expected 1 to 65535"},
      {"split.count", OwnedValue::u64(UINT64_MAX), 0, "split.count"},
      {"split.count", OwnedValue::string("3"), 0, "split.count"},
      {"split.count", OwnedValue::u16(0), 1, "split.count is 0, expected 1 to 65535"},
      {"split.no", OwnedValue::i32(-1), 1, "split.no is -1, expected 0 to 65534"},
      {"split.no", OwnedValue::u16(7), 0, "split.no is 7, expected 0 (part 1 of 2)"},
      {"split.tensors.count", OwnedValue::i32(-7), 0, "split.tensors.count is -7, expected 0 to 2147483647"},
      {"split.tensors.count", OwnedValue::i32(1 << 30), -1, "split.tensors.count is 1073741824, but the 2 parts hold 7"},
  };
  for (const HostileKey& c : cases) {
    SplitPlan plan = even_plan(src.file, 2);
    plan.edit = [&](int p, gguf::Writer& w) {
      if (p == c.part || c.part == -1) w.set(c.key, c.value);
    };
    const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
    const std::string e = open_error(paths[0]);
    EXPECT_CONTAINS(e, c.message) << c.key << " in part " << c.part;
  }
}

TEST(FileSet, SplitCountNeedsTheNameThatFindsTheParts) {
  const Source src;
  const auto paths = write_split(src.file, fresh_dir() + "/m", even_plan(src.file, 2));
  const std::string renamed = std::filesystem::path(paths[0]).parent_path().string() + "/renamed.gguf";
  std::filesystem::rename(paths[0], renamed);
  EXPECT_CONTAINS(open_error(renamed), "split.count is 2, but the file name does not end in -NNNNN-of-MMMMM.gguf");
}

TEST(FileSet, MissingSplitNoInALaterPartIsNamed) {
  const Source src;
  SplitPlan plan = even_plan(src.file, 2);
  plan.edit = [](int p, gguf::Writer& w) {
    if (p == 1) w.set("split.no", OwnedValue::string("one"));
  };
  const auto paths = write_split(src.file, fresh_dir() + "/m", plan);
  const std::string e = open_error(paths[0]);
  EXPECT_CONTAINS(e, paths[1]);
  EXPECT_CONTAINS(e, "split.no");
}

}  // namespace
