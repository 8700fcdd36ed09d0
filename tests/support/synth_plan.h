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

// Checks that the plan (by_name's map) has tensor `name` of this type and shape.
inline void expect_tensor(const std::map<std::string, engine::synth::TensorPlan>& plan, const std::string& name,
                          gguf::TensorType type, const std::vector<uint64_t>& ne) {
  const auto it = plan.find(name);
  ASSERT_NE(it, plan.end()) << name;
  EXPECT_EQ(it->second.type, type) << name;
  EXPECT_EQ(it->second.ne, ne) << name;
}

}  // namespace ggufd::test
