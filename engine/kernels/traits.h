// The CPU type table: one row per weight type the kernels compute with, holding everything they
// know about it. Format facts (name, block size and bytes) are gguf's (gguf/types.h), block
// layouts gguf/blocks.h's.
//
// Adding a type: its block struct (gguf/blocks.h), its scalar reference kernels (ref.h:
// dequant_* and vec_dot_*, the spec), and one row here. The columns after those are optional:
// a row without SIMD tiles runs the reference tile everywhere; one without a packed layout keeps
// its weights in the file layout; an AVX-512 file-layout tile replaces the AVX2 one where the
// CPU has AVX-512.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/kernels/dispatch.h"
#include "gguf/types.h"

namespace engine::kernels {

// What activations (X rows) become before the dot products: f32 as is, f32 rounded to the
// weight's 16-bit precision (as ggml does for F16 / BF16 weights), or int8 blocks.
enum class ActFormat : uint8_t { kF32, kF16Rounded, kBF16Rounded, kQ8A, kQ8K };

using DequantFn = void (*)(const void* row, float* y, int64_t cols);
// W row (cols,) . x (cols,) -> float; x in the type's ActFormat.
using VecDotFn = float (*)(const void* w, const void* x, int64_t cols);

// A packed 8-row layout (packing.h) as the block's fields: `count` runs of `bytes` bytes (2 or 4)
// from `offset`; the packed block stores them in order, each run as 8 rows side by side.
struct PackedField {
  int offset;
  int bytes;
  int count;
};
struct PackedLayout {
  std::span<const PackedField> fields;
};

// Tiles over packed groups, per instruction set (packed_tiles.inc, compiled once per set).
struct PackedTiles {
  TileFn avx2 = nullptr;
  TileFn avxvnni = nullptr;
  TileFn avx512vnni = nullptr;
};

struct KernelTraits {
  gguf::TensorType type;
  ActFormat act;                          // activation format of vec_dot and the tiles
  DequantFn dequant;                      // scalar reference
  VecDotFn vec_dot;                       // scalar reference
  TileFn avx2 = nullptr;                  // AVX2 tile over the file layout (all SIMD tables)
  const PackedLayout* packed = nullptr;   // the interleaved layout (packing.h), or none
  PackedTiles packed_tiles{};             // tiles over that layout
  TileFn avx512 = nullptr;                // AVX-512 tile over the file layout (the avx512vnni table)

  int64_t block_size() const { return gguf::type_info(type).block_size; }
  int64_t block_bytes() const { return gguf::type_info(type).block_bytes; }
};

// The row of `type`, or nullptr when the kernels do not support it.
const KernelTraits* kernel_traits(gguf::TensorType type);
// Every row, in table order.
std::span<const KernelTraits> all_kernel_traits();

// Bytes of one activation row of `cols` elements in `fmt`.
int64_t act_row_bytes(ActFormat fmt, int64_t cols);

// x (cols,) f32 -> one activation row in `fmt` (scalar reference).
void quantize_act_ref(ActFormat fmt, const float* x, void* dst, int64_t cols);

}  // namespace engine::kernels
