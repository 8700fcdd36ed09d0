// Split sets: part names, finding the parts from any of them, and refusals that name the file and
// what was expected against what was found.
#include <gtest/gtest.h>

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

// read_mapped reads a tensor's bytes from whichever part holds them, as the mapping shows them;
// it refuses ranges outside every part and Files that borrow their bytes.
TEST(FileSet, ReadMappedReadsThePartThatHoldsTheRange) {
  const Source src;
  const std::vector<std::string> paths = write_split(src.file, fresh_dir() + "/m", even_plan(src.file, 3));
  const gguf::FileSet set = gguf::FileSet::open(paths[0]);
  ASSERT_TRUE(set.owns_mapping());
  for (const gguf::TensorInfo* t : set.tensors()) {
    std::vector<uint8_t> out(t->data.size() + 1, 0xEE);
    ASSERT_TRUE(set.read_mapped(t->data, out.data())) << t->name;
    EXPECT_TRUE(std::equal(t->data.begin(), t->data.end(), out.begin())) << t->name;
    EXPECT_EQ(out.back(), 0xEE) << t->name;  // nothing written past the range
    const std::span<const uint8_t> tail = t->data.subspan(t->data.size() / 2);  // part of a tensor
    ASSERT_TRUE(set.read_mapped(tail, out.data())) << t->name;
    EXPECT_TRUE(std::equal(tail.begin(), tail.end(), out.begin())) << t->name;
  }
  std::vector<uint8_t> out(64);
  const gguf::File& last = set.parts().back();
  EXPECT_FALSE(set.read_mapped({last.bytes().data() + last.bytes().size() - 8, 16}, out.data()));  // runs past the end
  EXPECT_FALSE(set.read_mapped({src.bytes.data(), 16}, out.data()));  // not in any part
  EXPECT_FALSE(src.file.read_mapped({src.bytes.data(), 16}, out.data()));  // borrowed bytes: no file to read
  EXPECT_FALSE(gguf::FileSet::single(src.file).owns_mapping());
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
