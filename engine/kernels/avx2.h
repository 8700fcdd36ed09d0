// AVX2 + FMA + F16C kernels (avx2_*.cpp, compiled with those target flags). Call only when
// cpu_features() reports avx2, fma and f16c; dispatch.cpp does.
#pragma once

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avx2 {

void quantize_q8a(const float* x, BlockQ8A* y, int64_t cols);
void quantize_q8k(const float* x, BlockQ8K* y, int64_t cols);

// The AVX2 tile for `type`, or nullptr.
TileFn tile_for(gguf::TensorType type);

// Per-family tiles (see avx2_q32.cpp, avx2_qk.cpp, avx2_float.cpp).
TileFn tile_q32(gguf::TensorType type);
TileFn tile_qk(gguf::TensorType type);
TileFn tile_float(gguf::TensorType type);

// The tile over packed 8-row groups (packing.h) for `type`, or nullptr (avx2_packed.cpp).
TileFn packed_tile_for(gguf::TensorType type);

}  // namespace engine::kernels::avx2
