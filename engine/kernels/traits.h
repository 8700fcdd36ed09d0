// One table of per-type kernel traits: how to dequantize, quantize activations and dot a row.
#pragma once

#include <cstdint>

#include "gguf/types.h"

namespace engine::kernels {

// What activations (X rows) are turned into before the integer dot products.
enum class ActFormat : uint8_t { F32, Q8A, Q8K };

using DequantFn = void (*)(const void* row, float* y, int64_t cols);
// W row (cols,) . x (cols,) -> float; x in the type's ActFormat.
using VecDotFn = float (*)(const void* w, const void* x, int64_t cols);

struct KernelTraits {
  gguf::TensorType type;
  int block_size;        // elements per block
  int block_bytes;       // bytes per block
  ActFormat act;         // activation format of vec_dot
  DequantFn dequant;     // scalar reference
  VecDotFn vec_dot;      // scalar reference
};

// The traits of `type`, or nullptr when matmul does not support it.
const KernelTraits* kernel_traits(gguf::TensorType type);

// Bytes of one activation row of `cols` elements in `fmt`.
int64_t act_row_bytes(ActFormat fmt, int64_t cols);

// x (cols,) f32 -> one activation row in `fmt` (scalar reference).
void quantize_act_ref(ActFormat fmt, const float* x, void* dst, int64_t cols);

}  // namespace engine::kernels
