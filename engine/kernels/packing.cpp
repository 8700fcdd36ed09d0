#include "engine/kernels/packing.h"

#include <cstring>
#include <optional>
#include <span>

#include "engine/kernels/traits.h"

namespace engine::kernels {

namespace {

// A packable type's layout with its block geometry: the row of the type table that has one.
struct Layout {
  size_t block_bytes;
  int64_t block_elems;
  std::span<const PackedField> fields;
};

std::optional<Layout> layout_of(gguf::TensorType type) {
  const KernelTraits* t = kernel_traits(type);
  if (t == nullptr || t->packed == nullptr) return std::nullopt;
  return Layout{static_cast<size_t>(t->block_bytes()), t->block_size(), t->packed->fields};
}

// The pieces of one packed block (see packing.h): f(row, offset in the row's block, offset in
// the packed block, bytes) for every run of every field.
template <class F>
void for_each_piece(const Layout& l, int rows, F&& f) {
  int base = 0;
  for (const PackedField& field : l.fields) {
    for (int t = 0; t < field.count; ++t, base += rows * field.bytes) {
      for (int r = 0; r < rows; ++r) f(r, field.offset + t * field.bytes, base + r * field.bytes, field.bytes);
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

bool packable(gguf::TensorType type) { return layout_of(type).has_value(); }

namespace {

// One field of one block of R rows: its `count` runs of N bytes, run t of row r (at src + r *
// stride + t * N) -> dst + (t * R + r) * N. R and N are constants, so a run is one load and one
// store.
template <int R, int N>
void interleave_field(const uint8_t* src, size_t stride, int count, uint8_t* dst) {
  for (int r = 0; r < R; ++r) {
    const uint8_t* s = src + static_cast<size_t>(r) * stride;
    for (int t = 0; t < count; ++t) std::memcpy(dst + (t * R + r) * N, s + t * N, N);
  }
}

// pack_group for R rows (the tables' 8 and 16): the bytes for_each_piece places, block by block
// and field by field, each packed block written whole before the next (the fast path of a load's
// repacking; the round trip through unpack_group checks it).
template <int R>
void pack_rows(const Layout& l, const uint8_t* w, size_t w_stride, int64_t cols, uint8_t* dst) {
  const size_t bb = l.block_bytes;
  for (int64_t b = 0; b < cols / l.block_elems; ++b) {
    const uint8_t* src = w + b * bb;
    uint8_t* p = dst + b * R * bb;
    for (const PackedField& field : l.fields) {
      if (field.bytes == 4) {
        interleave_field<R, 4>(src + field.offset, w_stride, field.count, p);
      } else {
        interleave_field<R, 2>(src + field.offset, w_stride, field.count, p);
      }
      p += static_cast<size_t>(R) * field.bytes * field.count;
    }
  }
}

}  // namespace

bool pack_group(gguf::TensorType type, int rows, const uint8_t* w, size_t w_stride, int64_t cols, uint8_t* dst) {
  const std::optional<Layout> l = layout_of(type);
  if (!l || rows < 1 || rows > kMaxPackRows) return false;
  if (rows == 16) {
    pack_rows<16>(*l, w, w_stride, cols, dst);
    return true;
  }
  if (rows == 8) {
    pack_rows<8>(*l, w, w_stride, cols, dst);
    return true;
  }
  const size_t bb = l->block_bytes;
  for (int64_t b = 0; b < cols / l->block_elems; ++b) {
    const uint8_t* src = w + b * bb;
    uint8_t* p = dst + b * rows * bb;
    for_each_piece(*l, rows, [&](int r, int off, int poff, int n) { copy_piece(p + poff, src + r * w_stride + off, n); });
  }
  return true;
}

void unpack_group(gguf::TensorType type, int rows, const uint8_t* src, int64_t cols, uint8_t* w, size_t w_stride) {
  const std::optional<Layout> l = layout_of(type);
  const size_t bb = l ? l->block_bytes : 0;
  for (int64_t b = 0; l && b < cols / l->block_elems; ++b) {
    const uint8_t* p = src + b * rows * bb;
    uint8_t* dst = w + b * bb;
    for_each_piece(*l, rows, [&](int r, int off, int poff, int n) { copy_piece(dst + r * w_stride + off, p + poff, n); });
  }
}

void unpack_row(gguf::TensorType type, int rows, const uint8_t* src, int64_t cols, int r, uint8_t* dst) {
  const std::optional<Layout> l = layout_of(type);
  const size_t bb = l ? l->block_bytes : 0;
  for (int64_t b = 0; l && b < cols / l->block_elems; ++b) {
    const uint8_t* p = src + b * rows * bb;
    uint8_t* out = dst + b * bb;
    for_each_piece(*l, rows, [&](int row, int off, int poff, int n) {
      if (row == r) copy_piece(out + off, p + poff, n);
    });
  }
}

}  // namespace engine::kernels
