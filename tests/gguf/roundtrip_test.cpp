// Random files through Writer -> parse -> Writer: values, tensors and bytes survive exactly.
#include <gtest/gtest.h>

#include <random>

#include "gguf/file.h"
#include "gguf/writer.h"

namespace {

using gguf::OwnedValue;
using gguf::ValueType;

class RandomFile {
 public:
  explicit RandomFile(uint32_t seed) : rng_(seed) {}

  OwnedValue value(ValueType t, int depth) {
    switch (t) {
      case ValueType::kU8: return OwnedValue::u8(static_cast<uint8_t>(bits()));
      case ValueType::kI8: return OwnedValue::i8(static_cast<int8_t>(bits()));
      case ValueType::kU16: return OwnedValue::u16(static_cast<uint16_t>(bits()));
      case ValueType::kI16: return OwnedValue::i16(static_cast<int16_t>(bits()));
      case ValueType::kU32: return OwnedValue::u32(static_cast<uint32_t>(bits()));
      case ValueType::kI32: return OwnedValue::i32(static_cast<int32_t>(bits()));
      case ValueType::kU64: return OwnedValue::u64(bits());
      case ValueType::kI64: return OwnedValue::i64(static_cast<int64_t>(bits()));
      case ValueType::kF32: return OwnedValue::f32(std::uniform_real_distribution<float>(-1e6f, 1e6f)(rng_));
      case ValueType::kF64: return OwnedValue::f64(std::uniform_real_distribution<double>(-1e300, 1e300)(rng_));
      case ValueType::kBool: return OwnedValue::boolean(bits() & 1);
      case ValueType::kString: return OwnedValue::string(text());
      case ValueType::kArray: {
        const ValueType elem = depth >= 3 ? ValueType::kU8 : any_type();
        std::vector<OwnedValue> items(below(6));
        for (OwnedValue& item : items) item = value(elem, depth + 1);
        return OwnedValue::array(elem, std::move(items));
      }
    }
    return {};
  }

  ValueType any_type() { return static_cast<ValueType>(below(gguf::kValueTypeCount)); }

  std::string text() {
    std::string s(below(20), '\0');
    for (char& c : s) c = static_cast<char>(bits());  // arbitrary bytes, not only UTF-8
    return s;
  }

  uint64_t bits() { return rng_(); }
  uint64_t below(uint64_t n) { return rng_() % n; }

 private:
  std::mt19937_64 rng_;
};

// Rebuilds a Writer from a parsed file, preserving order, alignment and data.
gguf::Writer copy_of(const gguf::File& f) {
  gguf::Writer w(f.version(), f.big_endian());
  for (const gguf::KeyValue& kv : f.metadata()) w.set(std::string(kv.key), OwnedValue::from(kv.value));
  for (const gguf::TensorInfo& t : f.tensors()) {
    w.add_tensor(std::string(t.name), t.type, {t.ne.begin(), t.ne.begin() + t.n_dims},
                 {t.data.begin(), t.data.end()});
  }
  return w;
}

TEST(RoundTrip, RandomFilesSurviveWriteAndParse) {
  const auto types = gguf::all_types();
  for (uint32_t seed = 0; seed < 300; ++seed) {
    RandomFile r(seed);
    const uint32_t version = 1 + static_cast<uint32_t>(r.below(3));
    const bool big_endian = r.below(4) == 0;
    gguf::Writer w(version, big_endian);
    std::vector<std::pair<std::string, OwnedValue>> expected;
    if (r.below(2)) {
      const uint32_t alignment = 1u << r.below(9);
      w.set_alignment(alignment);
      expected.emplace_back("general.alignment", OwnedValue::u32(alignment));
    }
    const uint64_t n_kv = r.below(12);
    for (uint64_t i = 0; i < n_kv; ++i) {
      std::string key = "key." + std::to_string(i);
      OwnedValue v = r.value(r.any_type(), 0);
      w.set(key, v);
      expected.emplace_back(key, v);
    }
    struct Tensor {
      std::string name;
      gguf::TensorType type;
      std::vector<uint64_t> ne;
      std::vector<uint8_t> data;
    };
    std::vector<Tensor> tensors(r.below(6));
    for (size_t i = 0; i < tensors.size(); ++i) {
      Tensor& t = tensors[i];
      const gguf::TypeInfo& info = types[r.below(types.size())];
      t.name = "t" + std::to_string(i);
      t.type = info.type;
      t.ne.push_back(info.block_size * (1 + r.below(3)));
      for (uint64_t d = r.below(4); d > 0; --d) t.ne.push_back(1 + r.below(3));
      uint64_t n = 1;
      for (uint64_t d : t.ne) n *= d;
      t.data.resize(n / info.block_size * info.block_bytes);
      for (uint8_t& b : t.data) b = static_cast<uint8_t>(r.bits());
      w.add_tensor(t.name, t.type, t.ne, t.data);
    }

    const std::vector<uint8_t> bytes = w.to_bytes();
    const gguf::File f = gguf::File::parse(bytes);
    SCOPED_TRACE("seed " + std::to_string(seed));
    ASSERT_EQ(f.version(), version);
    ASSERT_EQ(f.big_endian(), big_endian);
    ASSERT_EQ(f.metadata().size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(f.metadata()[i].key, expected[i].first);
      EXPECT_TRUE(OwnedValue::from(f.metadata()[i].value) == expected[i].second) << expected[i].first;
    }
    ASSERT_EQ(f.tensors().size(), tensors.size());
    for (size_t i = 0; i < tensors.size(); ++i) {
      const gguf::TensorInfo& t = f.tensors()[i];
      EXPECT_EQ(t.name, tensors[i].name);
      EXPECT_EQ(t.type, tensors[i].type);
      EXPECT_EQ(std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims), tensors[i].ne);
      EXPECT_EQ(t.offset % f.alignment(), 0u);
      EXPECT_EQ(static_cast<uint64_t>(t.data.data() - bytes.data()) % f.alignment(), 0u);
      EXPECT_TRUE(std::equal(t.data.begin(), t.data.end(), tensors[i].data.begin(), tensors[i].data.end()));
    }
    EXPECT_EQ(copy_of(f).to_bytes(), bytes) << "re-serialized file differs";
  }
}

TEST(RoundTrip, WriteToDiskAndOpen) {
  gguf::Writer w;
  w.set("general.architecture", OwnedValue::string("llama"));
  w.set("tokenizer.ggml.tokens", OwnedValue::string_array({"a", "b", "c"}));
  w.add_tensor("x", gguf::TensorType::F32, {4, 2}, std::vector<uint8_t>(32, 7));
  const std::string path = testing::TempDir() + "/roundtrip.gguf";
  w.write(path);
  const gguf::File f = gguf::File::open(path);
  EXPECT_EQ(f.get_string("general.architecture"), "llama");
  EXPECT_EQ(f.get_array("tokenizer.ggml.tokens").string_at(2), "c");
  EXPECT_EQ(f.get_tensor("x").data[31], 7);
}

TEST(RoundTrip, WriterRefusesWrongTensorSize) {
  gguf::Writer w;
  EXPECT_THROW(w.add_tensor("q", gguf::TensorType::Q4_0, {30}, std::vector<uint8_t>(18)), gguf::Error);
  EXPECT_THROW(w.add_tensor("f", gguf::TensorType::F32, {3}, std::vector<uint8_t>(8)), gguf::Error);
  EXPECT_THROW(w.set_alignment(24), gguf::Error);
}

}  // namespace
