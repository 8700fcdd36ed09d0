#include "engine/kernels/packing.h"

#include <cstring>
#include <vector>

#include "engine/kernels/blocks.h"

namespace engine::kernels {

namespace {

// A packable block type as a list of fields: `count` runs of `bytes` bytes from `offset` in the
// block. The packed block stores the fields in order, each run as 8 rows side by side.
struct Field {
  int offset;
  int bytes;  // 2 or 4 (copy_piece)
  int count;
};

struct Layout {
  int block_bytes;
  int block_elems;
  std::vector<Field> fields;
};

const Layout* layout_of(gguf::TensorType type) {
  using gguf::TensorType;
  static const Layout q4_0{18, kQK, {{0, 2, 1}, {2, 4, 4}}};    // d, qs
  static const Layout q8_0{34, kQK, {{0, 2, 1}, {2, 4, 8}}};    // d, qs
  static const Layout q4_k{144, kQKK, {{0, 2, 1}, {2, 2, 1}, {4, 4, 3}, {16, 4, 32}}};  // d, dmin, scales, qs
  switch (type) {
    case TensorType::Q4_0:
    case TensorType::IQ4_NL: return &q4_0;
    case TensorType::Q8_0: return &q8_0;
    case TensorType::Q4_K: return &q4_k;
    default: return nullptr;
  }
}

// The pieces of one packed block (see packing.h): f(row, offset in the row's block, offset in
// the packed block, bytes) for every run of every field.
template <class F>
void for_each_piece(const Layout& l, F&& f) {
  int base = 0;
  for (const Field& field : l.fields) {
    for (int t = 0; t < field.count; ++t, base += kPackRows * field.bytes) {
      for (int r = 0; r < kPackRows; ++r) f(r, field.offset + t * field.bytes, base + r * field.bytes, field.bytes);
    }
  }
}

// memcpy of a piece: fixed sizes compile to single moves (packing a model copies ~1e8 pieces).
inline void copy_piece(uint8_t* dst, const uint8_t* src, int n) {
  if (n == 4) {
    std::memcpy(dst, src, 4);
  } else {
    std::memcpy(dst, src, 2);
  }
}

}  // namespace

bool packable(gguf::TensorType type) { return layout_of(type) != nullptr; }

bool pack_group(gguf::TensorType type, const uint8_t* w, size_t w_stride, int64_t cols, uint8_t* dst) {
  const Layout* l = layout_of(type);
  if (!l) return false;
  const size_t bb = static_cast<size_t>(l->block_bytes);
  for (int64_t b = 0; b < cols / l->block_elems; ++b) {
    const uint8_t* src = w + b * bb;
    uint8_t* p = dst + b * kPackRows * bb;
    for_each_piece(*l, [&](int r, int off, int poff, int n) { copy_piece(p + poff, src + r * w_stride + off, n); });
  }
  return true;
}

void unpack_group(gguf::TensorType type, const uint8_t* src, int64_t cols, uint8_t* w, size_t w_stride) {
  const Layout* l = layout_of(type);
  const size_t bb = l ? static_cast<size_t>(l->block_bytes) : 0;
  for (int64_t b = 0; l && b < cols / l->block_elems; ++b) {
    const uint8_t* p = src + b * kPackRows * bb;
    uint8_t* dst = w + b * bb;
    for_each_piece(*l, [&](int r, int off, int poff, int n) { copy_piece(dst + r * w_stride + off, p + poff, n); });
  }
}

void unpack_row(gguf::TensorType type, const uint8_t* src, int64_t cols, int r, uint8_t* dst) {
  const Layout* l = layout_of(type);
  const size_t bb = l ? static_cast<size_t>(l->block_bytes) : 0;
  for (int64_t b = 0; l && b < cols / l->block_elems; ++b) {
    const uint8_t* p = src + b * kPackRows * bb;
    uint8_t* out = dst + b * bb;
    for_each_piece(*l, [&](int row, int off, int poff, int n) {
      if (row == r) copy_piece(out + off, p + poff, n);
    });
  }
}

}  // namespace engine::kernels
