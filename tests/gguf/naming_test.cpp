// The spec's naming-convention examples, and size labels.
#include <gtest/gtest.h>

#include "gguf/naming.h"

namespace {

TEST(Naming, SpecExamples) {
  auto p = gguf::parse_file_name("Mixtral-8x7B-v0.1-KQ2.gguf");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->base_name, "Mixtral");
  EXPECT_EQ(p->size_label, "8x7B");
  EXPECT_EQ(p->fine_tune, std::nullopt);
  EXPECT_EQ(p->version, "v0.1");
  EXPECT_EQ(p->encoding, "KQ2");
  EXPECT_EQ(p->type, std::nullopt);
  EXPECT_EQ(p->shard, std::nullopt);

  p = gguf::parse_file_name("Grok-100B-v1.0-Q4_0-00003-of-00009.gguf");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->base_name, "Grok");
  EXPECT_EQ(p->size_label, "100B");
  EXPECT_EQ(p->version, "v1.0");
  EXPECT_EQ(p->encoding, "Q4_0");
  EXPECT_EQ(p->shard, "00003-of-00009");

  p = gguf::parse_file_name("Hermes-2-Pro-Llama-3-8B-v1.0-F16.gguf");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->base_name, "Hermes-2-Pro-Llama-3");
  EXPECT_EQ(p->size_label, "8B");
  EXPECT_EQ(p->fine_tune, std::nullopt);
  EXPECT_EQ(p->version, "v1.0");
  EXPECT_EQ(p->encoding, "F16");

  p = gguf::parse_file_name("Phi-3-mini-3.8B-ContextLength4k-instruct-v1.0.gguf");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->base_name, "Phi-3-mini");
  EXPECT_EQ(p->size_label, "3.8B-ContextLength4k");
  EXPECT_EQ(p->fine_tune, "instruct");
  EXPECT_EQ(p->version, "v1.0");
  EXPECT_EQ(p->encoding, std::nullopt);

  EXPECT_FALSE(gguf::parse_file_name("not-a-known-arrangement.gguf"));
}

TEST(Naming, TypeAndDirectoriesAndNonConformingNames) {
  auto p = gguf::parse_file_name("/models/Llama-3-8B-v1.0-vocab.gguf");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->base_name, "Llama-3");
  EXPECT_EQ(p->type, "vocab");
  EXPECT_EQ(p->encoding, std::nullopt);
  EXPECT_FALSE(gguf::parse_file_name("stories260K.gguf"));
  EXPECT_FALSE(gguf::parse_file_name(""));
}

TEST(Naming, SizeLabels) {
  EXPECT_EQ(gguf::size_label(260'000), "260K");
  EXPECT_EQ(gguf::size_label(292'864), "293K");
  EXPECT_EQ(gguf::size_label(1'100'048'384), "1.1B");
  EXPECT_EQ(gguf::size_label(494'032'768), "494M");
  EXPECT_EQ(gguf::size_label(8'030'261'248), "8.0B");
  EXPECT_EQ(gguf::size_label(7'241'732'096, 8), "8x7.2B");
  EXPECT_EQ(gguf::size_label(70'553'706'496), "71B");
}

}  // namespace
