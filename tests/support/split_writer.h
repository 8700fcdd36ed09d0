// Writing split sets in tests, as llama-gguf-split lays them out: the model's metadata in the first
// part, split.no (u16, 0-based), split.count (u16) and split.tensors.count (i32) in every part, and
// the tensors in order, dealt into runs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/naming.h"
#include "gguf/writer.h"

namespace ggufd::test {

// A new empty directory per call, "<TempDir>/<tag>_<pid>_<n>" (ctest runs test processes in
// parallel in one TempDir).
inline std::string fresh_split_dir(const std::string& tag) {
  static int calls = 0;
  const std::string d = testing::TempDir() + "/" + tag + "_" + std::to_string(::getpid()) + "_" + std::to_string(calls++);
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

struct SplitPlan {
  // tensors[p]: indices into src.tensors() written to part p (default: consecutive runs, as even
  // as they divide). Tests move, repeat or drop indices to make broken sets.
  std::vector<std::vector<size_t>> tensors;
  // Called for each part (0-based) after its split.* keys are set and before its tensors are added:
  // a test overrides keys here.
  std::function<void(int part, gguf::Writer&)> edit;
};

// The default plan: `n` parts of consecutive tensors; with `empty_first`, the first part holds
// metadata only (llama-gguf-split --no-tensor-first-split) and the rest are dealt into n - 1.
inline SplitPlan even_plan(const gguf::File& src, int n, bool empty_first = false) {
  SplitPlan plan;
  plan.tensors.resize(static_cast<size_t>(n));
  const size_t total = src.tensors().size(), first = empty_first ? 1 : 0, runs = static_cast<size_t>(n) - first;
  for (size_t i = 0; i < total; ++i) plan.tensors[first + i * runs / total].push_back(i);
  return plan;
}

// Writes `src` as parts "<prefix>-0000p-of-0000n.gguf" (n = plan.tensors.size()); returns their paths.
inline std::vector<std::string> write_split(const gguf::File& src, const std::string& prefix, const SplitPlan& plan) {
  const int n = static_cast<int>(plan.tensors.size());
  std::vector<std::string> paths;
  for (int p = 0; p < n; ++p) {
    gguf::Writer w;
    if (p == 0) {
      for (const gguf::KeyValue& kv : src.metadata()) w.set(std::string(kv.key), gguf::OwnedValue::from(kv.value));
    }
    w.set("split.no", gguf::OwnedValue::u16(static_cast<uint16_t>(p)));
    w.set("split.count", gguf::OwnedValue::u16(static_cast<uint16_t>(n)));
    w.set("split.tensors.count", gguf::OwnedValue::i32(static_cast<int32_t>(src.tensors().size())));
    if (plan.edit) plan.edit(p, w);
    for (size_t i : plan.tensors[static_cast<size_t>(p)]) {
      const gguf::TensorInfo& t = src.tensors()[i];
      w.add_tensor(std::string(t.name), t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                   std::vector<uint8_t>(t.data.begin(), t.data.end()));
    }
    paths.push_back(gguf::split_path(prefix, p + 1, n));
    w.write(paths.back());
  }
  return paths;
}

}  // namespace ggufd::test
