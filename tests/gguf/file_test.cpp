// Typed metadata access, the type table, and the facts of every shared GGUF file.
#include <gtest/gtest.h>

#include <filesystem>

#include "gguf/file.h"
#include "gguf/summary.h"
#include "gguf/writer.h"
#include "tests/support/shared.h"

namespace {

using gguf::OwnedValue;

gguf::File parse_owned(const std::vector<uint8_t>& bytes) { return gguf::File::parse(bytes, "t.gguf"); }

std::vector<uint8_t> sample() {
  gguf::Writer w;
  w.set("u8", OwnedValue::u8(200));
  w.set("i32neg", OwnedValue::i32(-5));
  w.set("u64big", OwnedValue::u64(UINT64_MAX));
  w.set("f", OwnedValue::f32(0.5f));
  w.set("s", OwnedValue::string("text"));
  w.set("b", OwnedValue::boolean(true));
  w.set("ids", OwnedValue::i32_array({3, -1, 7}));
  w.set("nested", OwnedValue::array(gguf::ValueType::kArray,
                                    {OwnedValue::string_array({"x"}), OwnedValue::string_array({})}));
  return w.to_bytes();
}

TEST(File, IntegerAccessorsTakeAnyWidthThatFits) {
  const auto bytes = sample();
  const gguf::File f = parse_owned(bytes);
  EXPECT_EQ(f.get_u64("u8"), 200u);
  EXPECT_EQ(f.get_i64("u8"), 200);
  EXPECT_EQ(f.get_i64("i32neg"), -5);
  EXPECT_EQ(f.get_u64("u64big"), UINT64_MAX);
  EXPECT_DOUBLE_EQ(f.get_f64("f"), 0.5);
  EXPECT_DOUBLE_EQ(f.get_f64("u8"), 200.0);
  EXPECT_EQ(f.get_string("s"), "text");
  EXPECT_TRUE(f.get_bool("b"));
  const gguf::Value& ids = f.get_array("ids");
  EXPECT_EQ(ids.size(), 3u);
  EXPECT_EQ(ids.i64_at(1), -1);
  EXPECT_EQ(ids.raw_bytes().size(), 12u);
  EXPECT_EQ(f.get_array("nested").array_at(0).string_at(0), "x");
}

TEST(File, FindReturnsNullAndGetNamesKeyAndTypes) {
  const auto bytes = sample();
  const gguf::File f = parse_owned(bytes);
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_FALSE(f.find_u64("absent").has_value());
  EXPECT_EQ(f.find_array("absent"), nullptr);
  auto message = [&](auto&& fn) {
    try {
      fn();
    } catch (const gguf::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] { f.get_u64("absent"); }), "t.gguf: metadata key 'absent' is missing");
  EXPECT_EQ(message([&] { f.get_u64("s"); }),
            "t.gguf: metadata key 's': expected an integer, found STRING");
  EXPECT_EQ(message([&] { f.get_u64("i32neg"); }),
            "t.gguf: metadata key 'i32neg': expected a non-negative integer, found negative INT32 -5");
  EXPECT_EQ(message([&] { f.get_i64("u64big"); }),
            "t.gguf: metadata key 'u64big': expected an integer that fits INT64, found UINT64 "
            "18446744073709551615");
  EXPECT_EQ(message([&] { f.get_string("u8"); }), "t.gguf: metadata key 'u8': expected STRING, found UINT8");
  EXPECT_EQ(message([&] { f.get_array("b"); }), "t.gguf: metadata key 'b': expected ARRAY, found BOOL");
  EXPECT_EQ(message([&] { f.find_bool("s"); }), "t.gguf: metadata key 's': expected BOOL, found STRING");
  EXPECT_EQ(message([&] { f.get_tensor("w"); }), "t.gguf: tensor 'w' is missing");
  EXPECT_THROW(f.get_array("ids").i64_at(3), gguf::Error);
  EXPECT_THROW(f.get_array("ids").string_at(0), gguf::Error);
}

TEST(Types, TableCoversEveryGgmlTypeId) {
  // Ids retired by ggml are unknown; every other id up to the newest is known.
  for (uint32_t id = 0; id <= 42; ++id) {
    const bool retired = id == 4 || id == 5 || (id >= 31 && id <= 33) || (id >= 36 && id <= 38);
    EXPECT_EQ(gguf::type_info(id) == nullptr, retired) << "type id " << id;
  }
  EXPECT_EQ(gguf::type_info(43), nullptr);
  const gguf::TypeInfo& q4k = gguf::type_info(gguf::TensorType::Q4_K);
  EXPECT_EQ(q4k.name, "Q4_K");
  EXPECT_EQ(q4k.block_size, 256u);
  EXPECT_EQ(q4k.block_bytes, 144u);
  EXPECT_EQ(gguf::type_info(gguf::TensorType::Q6_K).block_bytes, 210u);
  EXPECT_EQ(gguf::type_info(gguf::TensorType::IQ4_XS).block_bytes, 136u);
  EXPECT_EQ(gguf::type_info(gguf::TensorType::TQ1_0).block_bytes, 54u);
  EXPECT_EQ(gguf::type_from_name("q8_0"), gguf::TensorType::Q8_0);
  EXPECT_EQ(gguf::file_type_name(15), "MOSTLY_Q4_K_M");
}

// ---- shared files ----

TEST(SharedFiles, EveryGgufParsesExceptTheLegacyOne) {
  GGUFD_REQUIRE_SHARED("models");
  int parsed = 0;
  for (const char* dir : {"models", "tokenizer"}) {
    for (const auto& e : std::filesystem::recursive_directory_iterator(ggufd::test::shared_path(dir))) {
      if (e.path().extension() != ".gguf") continue;
      const std::string path = e.path().string();
      if (path.find("legacy-q8_0") != std::string::npos) continue;
      EXPECT_NO_THROW(gguf::File::open(path)) << path;
      ++parsed;
    }
  }
  EXPECT_GE(parsed, 30);
}

TEST(SharedFiles, LegacyQ8FileIsRefusedClearly) {
  GGUFD_REQUIRE_SHARED("models/stories260K-legacy-q8_0.gguf");
  try {
    gguf::File::open(ggufd::test::shared_path("models/stories260K-legacy-q8_0.gguf"));
    FAIL() << "legacy file parsed";
  } catch (const gguf::Error& e) {
    EXPECT_NE(std::string(e.what()).find("row length 172 is not a multiple of Q8_0's block size 32"),
              std::string::npos)
        << e.what();
  }
}

TEST(SharedFiles, Stories260KFacts) {
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const gguf::File f = gguf::File::open(ggufd::test::shared_path("models/stories260K.gguf"));
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.get_u64("llama.block_count"), 5u);
  EXPECT_EQ(f.get_u64("llama.embedding_length"), 64u);
  EXPECT_EQ(f.get_u64("llama.attention.head_count"), 8u);
  EXPECT_EQ(f.get_u64("llama.attention.head_count_kv"), 4u);
  EXPECT_EQ(f.get_u64("llama.feed_forward_length"), 172u);
  EXPECT_EQ(f.get_u64("llama.context_length"), 2048u);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "llama");
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens").size(), 512u);
  EXPECT_EQ(f.get_u64("tokenizer.ggml.bos_token_id"), 1u);
  EXPECT_EQ(f.get_u64("tokenizer.ggml.eos_token_id"), 2u);
  for (const gguf::TensorInfo& t : f.tensors()) EXPECT_EQ(t.type, gguf::TensorType::F32) << t.name;
  const gguf::TensorInfo& embd = f.get_tensor("token_embd.weight");
  EXPECT_EQ(embd.ne[0], 64u);
  EXPECT_EQ(embd.ne[1], 512u);
  EXPECT_EQ(gguf::summarize(f).architecture, "llama");
}

TEST(SharedFiles, V1CopyHasTheSameTensors) {
  GGUFD_REQUIRE_SHARED("models/stories260K-v1.gguf");
  const gguf::File v3 = gguf::File::open(ggufd::test::shared_path("models/stories260K.gguf"));
  const gguf::File v1 = gguf::File::open(ggufd::test::shared_path("models/stories260K-v1.gguf"));
  EXPECT_EQ(v1.version(), 1u);
  EXPECT_EQ(v1.get_u64("llama.context_length"), 512u);
  ASSERT_EQ(v1.tensors().size(), v3.tensors().size());
  for (const gguf::TensorInfo& a : v3.tensors()) {
    const gguf::TensorInfo* b = v1.find_tensor(a.name);
    ASSERT_NE(b, nullptr) << a.name;
    EXPECT_EQ(b->type, a.type);
    EXPECT_EQ(b->ne, a.ne);
    EXPECT_TRUE(std::ranges::equal(a.data, b->data)) << a.name;
  }
}

TEST(SharedFiles, TinyRandomLlamaFacts) {
  GGUFD_REQUIRE_SHARED("models/llama-2-tiny-random.gguf");
  const gguf::File f = gguf::File::open(ggufd::test::shared_path("models/llama-2-tiny-random.gguf"));
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_u64("llama.context_length"), 4096u);
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens").size(), 32000u);
  int f16 = 0;
  int f32 = 0;
  for (const gguf::TensorInfo& t : f.tensors()) {
    f16 += t.type == gguf::TensorType::F16;
    f32 += t.type == gguf::TensorType::F32;
  }
  EXPECT_EQ(f16, 9);
  EXPECT_EQ(f32, 3);
}

TEST(SharedFiles, SynthFilesUseTheirNamedType) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-llama-Q8_0.gguf");
  for (const char* type : {"F16", "BF16", "Q8_0", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q2_K", "Q6_K",
                           "IQ4_NL", "IQ4_XS"}) {
    const gguf::File f = gguf::File::open(
        ggufd::test::shared_path(std::string("models/synth/synth-llama-") + type + ".gguf"));
    EXPECT_EQ(gguf::type_info(f.get_tensor("blk.0.attn_q.weight").type).name, type);
    EXPECT_EQ(f.get_u64("llama.embedding_length"), 256u);
  }
}

}  // namespace
