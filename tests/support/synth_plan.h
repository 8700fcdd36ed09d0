// Looking into what tools/synth plans, in tests.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "tools/synth/synth.h"

namespace ggufd::test {

// The plan's tensors by name; a name planned twice fails the test.
inline std::map<std::string, engine::synth::TensorPlan> by_name(const std::vector<engine::synth::TensorPlan>& plan) {
  std::map<std::string, engine::synth::TensorPlan> m;
  for (const auto& t : plan) EXPECT_TRUE(m.emplace(t.name, t).second) << "duplicate " << t.name;
  return m;
}

// The value of `key` in the metadata, or nullptr.
inline const gguf::OwnedValue* find_key(const engine::synth::Metadata& meta, const std::string& key) {
  for (const auto& [k, v] : meta) {
    if (k == key) return &v;
  }
  return nullptr;
}

}  // namespace ggufd::test
