// Models stored as split sets (llama-gguf-split's layout) load as the single file does: the same
// logits bit for bit, the weights' bytes and page-in over every part, errors naming the problem.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "tests/model/all_logits.h"
#include "tests/support/load_error.h"
#include "tests/support/shared.h"
#include "tests/support/split_writer.h"

namespace engine {
namespace {

using ggufd::test::even_plan;
using ggufd::test::shared_path;
using ggufd::test::SplitPlan;
using ggufd::test::write_split;

std::string split_model_dir() { return ggufd::test::fresh_split_dir("ggufd_split_model"); }

const std::vector<int32_t> kSplitTestTokens = {1, 20, 77, 200, 5, 42, 150, 9};

// The tokens greedy decoding picks at each position of `logits` (tokens, n_vocab).
std::vector<size_t> greedy_tokens(const std::vector<float>& logits, size_t n_vocab) {
  std::vector<size_t> out;
  for (size_t i = 0; i + n_vocab <= logits.size(); i += n_vocab) {
    out.push_back(static_cast<size_t>(std::max_element(logits.begin() + static_cast<ptrdiff_t>(i),
                                                       logits.begin() + static_cast<ptrdiff_t>(i + n_vocab)) -
                                      logits.begin()) - i);
  }
  return out;
}

// The total page_in reports for `m` (it reads every page of the matrices matmul reads).
uint64_t split_page_in_total(const Model& m) {
  uint64_t seen = 0, calls = 0;
  m.page_in([&](uint64_t done, uint64_t total) {
    EXPECT_LE(done, total);
    seen = total;
    ++calls;
  });
  EXPECT_GE(calls, 1u);
  return seen;
}

// Splits `single_path` into 2 and 3 parts (and 3 with a tensor-less first part) and checks each set
// against the single file: logits identical, from the first part and from the last.
void expect_split_matches(const std::string& single_path, bool repack) {
  const gguf::File src = gguf::File::open(single_path);
  const Model single = Model::load(single_path, repack);
  const std::vector<float> want = test::all_logits(single, kSplitTestTokens);
  const auto n_vocab = static_cast<size_t>(single.hparams().n_vocab);
  struct Layout {
    int parts;
    bool empty_first;
  };
  for (const Layout l : {Layout{2, false}, Layout{3, false}, Layout{3, true}}) {
    const std::vector<std::string> paths = write_split(src, split_model_dir() + "/m", even_plan(src, l.parts, l.empty_first));
    for (const std::string& path : {paths.front(), paths.back()}) {
      SCOPED_TRACE(path);
      const Model split = Model::load(path, repack);
      EXPECT_EQ(split.files().parts().size(), static_cast<size_t>(l.parts));
      EXPECT_EQ(split.file().name(), paths.front());
      EXPECT_EQ(split.files().n_tensors(), src.tensors().size());
      const std::vector<float> got = test::all_logits(split, kSplitTestTokens);
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0) << "logits differ";
      EXPECT_EQ(greedy_tokens(got, n_vocab), greedy_tokens(want, n_vocab));
      EXPECT_EQ(split.packed_bytes(), single.packed_bytes());
      EXPECT_EQ(split_page_in_total(split), split_page_in_total(single));
      uint64_t data = 0;
      for (const std::string& p : paths) {
        const gguf::File part = gguf::File::open(p);
        data += part.file_size() - part.data_offset();
      }
      EXPECT_EQ(split.weight_bytes(), data);
    }
  }
}

TEST(SplitModel, Stories260KSplitGivesTheSingleFilesLogits) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  expect_split_matches(shared_path("models/stories260K.gguf"), true);
}

TEST(SplitModel, RepackedSynthModelsSplitGiveTheSingleFilesLogits) {
  // Q4_K / Q6_K repacked matrices; a hybrid MoE whose experts land in different parts
  for (const char* name : {"models/synth/synth-llama-Q4_K_M.gguf", "models/synth/synth-qwen35moe-Q4_K_M.gguf"}) {
    GGUFD_REQUIRE_SHARED(name);
    SCOPED_TRACE(name);
    expect_split_matches(shared_path(name), true);
  }
  GGUFD_REQUIRE_SHARED("models/synth/synth-llama-Q4_K_M.gguf");
  expect_split_matches(shared_path("models/synth/synth-llama-Q4_K_M.gguf"), false);
}

TEST(SplitModel, TensorMissingFromEveryPartIsNamedByTheLoader) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const gguf::File src = gguf::File::open(shared_path("models/stories260K.gguf"));
  SplitPlan plan = even_plan(src, 2);
  const size_t n = src.tensors().size();
  for (auto& part : plan.tensors) std::erase_if(part, [&](size_t i) { return src.tensors()[i].name == "output_norm.weight"; });
  plan.edit = [&](int, gguf::Writer& w) { w.set("split.tensors.count", gguf::OwnedValue::i32(static_cast<int32_t>(n - 1))); };
  const auto paths = write_split(src, split_model_dir() + "/m", plan);
  try {
    Model::load(paths[0]);
    ADD_FAILURE() << "loaded without output_norm.weight";
  } catch (const std::exception& e) {
    EXPECT_CONTAINS(e.what(), paths[0]);
    EXPECT_CONTAINS(e.what(), "tensor 'output_norm.weight' is missing");
  }
}

}  // namespace
}  // namespace engine
