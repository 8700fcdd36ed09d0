// One handcrafted broken file per validation rule; each must fail with its specific message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gguf/file.h"

namespace {

// Writes GGUF fields byte by byte, valid or not.
class Bytes {
 public:
  explicit Bytes(uint32_t version = 3) : version_(version) {}

  Bytes& raw(std::string_view s) {
    b_.insert(b_.end(), s.begin(), s.end());
    return *this;
  }
  Bytes& u8(uint8_t v) {
    b_.push_back(v);
    return *this;
  }
  Bytes& u32(uint32_t v) { return le(v, 4); }
  Bytes& u64(uint64_t v) { return le(v, 8); }
  Bytes& count(uint64_t v) { return version_ == 1 ? u32(static_cast<uint32_t>(v)) : u64(v); }
  Bytes& str(std::string_view s) {
    count(s.size());
    return raw(s);
  }
  Bytes& header(uint64_t n_tensors, uint64_t n_kv) {
    raw("GGUF").u32(version_);
    return count(n_tensors).count(n_kv);
  }
  Bytes& kv_u32(std::string_view key, uint32_t v) { return str(key).u32(4).u32(v); }
  // A tensor info record: name, dims, type, offset.
  Bytes& tensor(std::string_view name, std::vector<uint64_t> ne, uint32_t type, uint64_t offset) {
    str(name).u32(static_cast<uint32_t>(ne.size()));
    for (uint64_t d : ne) count(d);
    return u32(type).u64(offset);
  }
  Bytes& pad_to(size_t alignment) {
    while (b_.size() % alignment != 0) b_.push_back(0);
    return *this;
  }
  Bytes& zeros(size_t n) {
    b_.insert(b_.end(), n, 0);
    return *this;
  }
  size_t size() const { return b_.size(); }
  const std::vector<uint8_t>& bytes() const { return b_; }

 private:
  Bytes& le(uint64_t v, int n) {
    for (int i = 0; i < n; ++i) b_.push_back(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  uint32_t version_;
  std::vector<uint8_t> b_;
};

struct Case {
  const char* name;
  Bytes bytes;
  const char* message;     // expected substring of the error
  uint64_t offset;         // expected byte offset, or kAny
};
constexpr uint64_t kAny = UINT64_MAX - 1;

void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

std::vector<Case> cases() {
  std::vector<Case> c;
  c.push_back({"bad_magic", Bytes().raw("GGUX").u32(3).u64(0).u64(0),
               "bad magic: expected 'GGUF', found 'GGUX'", 0});
  c.push_back({"empty_file", Bytes(), "truncated file while reading magic", 0});
  c.push_back({"unsupported_version", Bytes().raw("GGUF").u32(4).u64(0).u64(0),
               "unsupported version: expected 1, 2 or 3, found 4", 4});
  c.push_back({"truncated_header", Bytes().raw("GGUF").u32(3).u64(0).u32(0),
               "truncated file while reading metadata count: expected 8 bytes, found 4", 16});
  c.push_back({"truncated_key", Bytes().header(0, 1).u64(20).raw("abcdefg"),
               "metadata key length 20 is larger than the 7 bytes left", 24});
  c.push_back({"truncated_value", Bytes().header(0, 1).str("a").u32(4).u8(1).u8(2),
               "truncated file while reading UINT32 value of key 'a': expected 4 bytes, found 2",
               37});
  c.push_back({"truncated_array", Bytes().header(0, 1).str("a").u32(9).u32(4).u64(5).u64(0),
               "array of UINT32 for key 'a': count 5 needs at least 4 bytes each, but only 8", 37});
  c.push_back({"string_longer_than_file",
               Bytes().header(0, 1).str("a").u32(8).u64(uint64_t{1} << 62).raw("xyz"),
               "string value length 4611686018427387904 is larger than the 3 bytes left", 37});
  c.push_back({"array_longer_than_file",
               Bytes().header(0, 1).str("a").u32(9).u32(8).u64(UINT64_MAX),
               "array of STRING for key 'a': count 18446744073709551615 needs at least 8 bytes", 37});
  c.push_back({"duplicate_key", Bytes().header(0, 2).kv_u32("k", 1).kv_u32("k", 2),
               "duplicate metadata key 'k' (first at byte 24)", 41});
  c.push_back({"bad_bool", Bytes().header(0, 1).str("b").u32(7).u8(2),
               "invalid BOOL for key 'b': expected byte 0 or 1, found 2", 37});
  c.push_back({"bad_bool_in_array", Bytes().header(0, 1).str("b").u32(9).u32(7).u64(2).u8(1).u8(7),
               "invalid BOOL for key 'b': expected byte 0 or 1, found 7", 50});
  c.push_back({"unknown_value_type", Bytes().header(0, 1).str("a").u32(13).u32(0),
               "unknown value type 13 for key 'a': expected 0..12", 33});
  c.push_back({"forbidden_array_element_type",
               Bytes().header(0, 1).str("a").u32(9).u32(99).u64(0),
               "unknown array element type 99 for key 'a': expected 0..12", 37});
  {
    Bytes deep;
    deep.header(0, 1).str("a").u32(9);
    for (int i = 0; i < 20; ++i) deep.u32(9).u64(1);
    c.push_back({"array_nesting_too_deep", deep.u32(4).u64(0),
                 "array nesting too deep for key 'a': expected at most 16 levels", kAny});
  }
  c.push_back({"bad_alignment", Bytes().header(0, 1).kv_u32("general.alignment", 48),
               "general.alignment: expected a power of two, found 48", 53});
  c.push_back({"zero_alignment", Bytes().header(0, 1).kv_u32("general.alignment", 0),
               "general.alignment: expected a power of two, found 0", 53});
  c.push_back({"kv_count_larger_than_file", Bytes().header(0, uint64_t{1} << 40),
               "metadata: count 1099511627776 needs at least 13 bytes each", 24});
  c.push_back({"truncated_tensor_info", Bytes().header(1, 0).str("t").u32(4).u64(4).u64(4).u64(4),
               "truncated file while reading dimensions of tensor 't'", kAny});
  c.push_back({"zero_dims", Bytes().header(1, 0).tensor("t", {}, 0, 0).zeros(64),
               "tensor 't': expected n_dims 1..4, found 0", 33});
  c.push_back({"five_dims", Bytes().header(1, 0).tensor("t", {1, 1, 1, 1, 1}, 0, 0).zeros(64),
               "tensor 't': expected n_dims 1..4, found 5", 33});
  c.push_back({"zero_dimension", Bytes().header(1, 0).tensor("t", {4, 0}, 0, 0).zeros(64),
               "tensor 't': dimension 1 must be in 1..INT64_MAX, found 0", 45});
  c.push_back({"overflowing_dimension",
               Bytes().header(1, 0).tensor("t", {uint64_t{1} << 63}, 0, 0).zeros(64),
               "tensor 't': dimension 0 must be in 1..INT64_MAX, found 9223372036854775808", 37});
  c.push_back({"element_count_overflow",
               Bytes().header(1, 0).tensor("t", {uint64_t{1} << 32, uint64_t{1} << 32}, 0, 0),
               "tensor 't': element count overflows INT64 at dimension 1", 45});
  c.push_back({"unknown_tensor_type", Bytes().header(1, 0).tensor("t", {4}, 4, 0).zeros(64),
               "tensor 't': unknown ggml type id 4", 45});
  c.push_back({"row_not_multiple_of_block", Bytes().header(1, 0).tensor("t", {30, 2}, 2, 0),
               "tensor 't': row length 30 is not a multiple of Q4_0's block size 32", 33});
  c.push_back({"unaligned_offset", Bytes().header(1, 0).tensor("t", {4}, 0, 16).pad_to(32).zeros(64),
               "tensor 't': data offset 16 is not a multiple of the alignment 32", 49});
  c.push_back({"data_past_end_of_file",
               Bytes().header(1, 0).tensor("t", {64}, 0, 0).pad_to(32).zeros(100),
               "tensor 't': data [0, +256) past end of file", 24});
  c.push_back({"duplicate_tensor", Bytes().header(2, 0).tensor("t", {8}, 0, 0).tensor("t", {8}, 0, 32)
                                       .pad_to(32).zeros(64),
               "duplicate tensor name 't' (first at byte 24)", 57});
  c.push_back({"overlapping_tensors",
               Bytes().header(2, 0).tensor("a", {16}, 0, 0).tensor("b", {8}, 0, 32).pad_to(32)
                   .zeros(64),
               "tensor 'b': data [32, 64) overlaps tensor 'a' [0, 64)", 57});
  return c;
}

class CorruptFile : public testing::TestWithParam<Case> {};

TEST_P(CorruptFile, FailsWithSpecificMessage) {
  const Case& c = GetParam();
  try {
    gguf::File::parse(c.bytes.bytes(), "bad.gguf");
    FAIL() << "parsed without error";
  } catch (const gguf::Error& e) {
    EXPECT_NE(std::string(e.what()).find(c.message), std::string::npos)
        << "expected: " << c.message << "\n     got: " << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("bad.gguf: at byte ", 0), 0u) << e.what();
    if (c.offset != kAny) {
      EXPECT_EQ(e.offset(), c.offset) << e.what();
    }
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "message is one line";
  }
}

INSTANTIATE_TEST_SUITE_P(Gguf, CorruptFile, testing::ValuesIn(cases()),
                         [](const testing::TestParamInfo<Case>& param) { return param.param.name; });

TEST(CorruptFile, EveryTruncationOfAValidFileFails) {
  Bytes b;
  b.header(2, 3).kv_u32("general.alignment", 32).str("s").u32(8).str("hello");
  b.str("arr").u32(9).u32(8).u64(2).str("x").str("yz");
  b.tensor("w", {32, 2}, 8, 0).tensor("v", {4}, 0, 96).pad_to(32).zeros(96 + 16);
  ASSERT_NO_THROW(gguf::File::parse(b.bytes()));
  for (size_t n = 0; n < b.size(); ++n) {
    std::vector<uint8_t> prefix(b.bytes().begin(), b.bytes().begin() + static_cast<ptrdiff_t>(n));
    EXPECT_THROW(gguf::File::parse(prefix), gguf::Error) << "prefix of " << n << " bytes";
  }
}

TEST(CorruptFile, BigEndianFileIsRead) {
  // Version 3 stored big-endian: 00 00 00 03.
  std::vector<uint8_t> b = {'G', 'G', 'U', 'F', 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0,
                            0, 0, 0, 0, 0, 0, 0, 1,
                            0, 0, 0, 0, 0, 0, 0, 1, 'k',  // key "k"
                            0, 0, 0, 4,                   // UINT32
                            0, 0, 1, 2};                  // 258
  const gguf::File f = gguf::File::parse(b);
  EXPECT_TRUE(f.big_endian());
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.get_u64("k"), 258u);
}

}  // namespace
