// AVX2 + FMA + F16C kernels (avx2_*.cpp, compiled with those target flags). Call only when
// cpu_features() reports avx2, fma and f16c; dispatch.cpp does. The type table (traits.cpp)
// names each type's tiles.
#pragma once

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avx2 {

void quantize_q8a(const float* x, ActQ8A* y, int64_t cols);
void quantize_q8k(const float* x, ActQ8K* y, int64_t cols);
void round_f16(const float* x, float* y, int64_t cols);
void round_bf16(const float* x, float* y, int64_t cols);
// ref::silu_mul within a few ulp (a polynomial e^x instead of expf).
void silu_mul(float* gate, const float* up, int64_t n);

// Tiles over the file layout: f32-family (avx2_float.cpp), 32-element blocks against Q8A
// (avx2_q32.cpp), 256-element super-blocks against Q8K (avx2_qk.cpp; the lattice and ternary
// types in avx2_iq.cpp).
void tile_f32(const TileArgs& a);
void tile_f16(const TileArgs& a);
void tile_bf16(const TileArgs& a);
void tile_q4_0(const TileArgs& a);
void tile_q4_1(const TileArgs& a);
void tile_q5_0(const TileArgs& a);
void tile_q5_1(const TileArgs& a);
void tile_q8_0(const TileArgs& a);
void tile_iq4_nl(const TileArgs& a);
void tile_q2_k(const TileArgs& a);
void tile_q3_k(const TileArgs& a);
void tile_q4_k(const TileArgs& a);
void tile_q5_k(const TileArgs& a);
void tile_q6_k(const TileArgs& a);
void tile_iq4_xs(const TileArgs& a);
void tile_mxfp4(const TileArgs& a);
void tile_iq2_xxs(const TileArgs& a);
void tile_iq2_xs(const TileArgs& a);
void tile_iq2_s(const TileArgs& a);
void tile_iq3_xxs(const TileArgs& a);
void tile_iq3_s(const TileArgs& a);
void tile_iq1_s(const TileArgs& a);
void tile_iq1_m(const TileArgs& a);
void tile_tq1_0(const TileArgs& a);
void tile_tq2_0(const TileArgs& a);
// The tiles over packed groups are in packed_tiles.h.

}  // namespace engine::kernels::avx2
