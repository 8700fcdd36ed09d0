// Scalar reference kernels: the specification the SIMD kernels are tested against.
//
// Dequantizers turn `cols` elements (a whole number of blocks) of one weight row into f32.
// Activation quantizers turn one f32 row into Q8A (32-blocks) or Q8K (256-blocks).
// vec_dot functions: W row (cols,) . x_q (cols,) -> float, integer math per block like ggml.
#pragma once

#include <cstdint>

#include "engine/kernels/blocks.h"
#include "gguf/types.h"

namespace engine::kernels::ref {

// W row (cols,) -> y (cols,)
void dequant_f32(const void* row, float* y, int64_t cols);
void dequant_f16(const void* row, float* y, int64_t cols);
void dequant_bf16(const void* row, float* y, int64_t cols);
void dequant_q4_0(const void* row, float* y, int64_t cols);
void dequant_q4_1(const void* row, float* y, int64_t cols);
void dequant_q5_0(const void* row, float* y, int64_t cols);
void dequant_q5_1(const void* row, float* y, int64_t cols);
void dequant_q8_0(const void* row, float* y, int64_t cols);
void dequant_iq4_nl(const void* row, float* y, int64_t cols);
void dequant_q2_k(const void* row, float* y, int64_t cols);
void dequant_q3_k(const void* row, float* y, int64_t cols);
void dequant_q4_k(const void* row, float* y, int64_t cols);
void dequant_q5_k(const void* row, float* y, int64_t cols);
void dequant_q6_k(const void* row, float* y, int64_t cols);
void dequant_iq4_xs(const void* row, float* y, int64_t cols);
// The lattice, ternary and MXFP4 types (ref_iq.cpp).
void dequant_iq2_xxs(const void* row, float* y, int64_t cols);
void dequant_iq2_xs(const void* row, float* y, int64_t cols);
void dequant_iq2_s(const void* row, float* y, int64_t cols);
void dequant_iq3_xxs(const void* row, float* y, int64_t cols);
void dequant_iq3_s(const void* row, float* y, int64_t cols);
void dequant_iq1_s(const void* row, float* y, int64_t cols);
void dequant_iq1_m(const void* row, float* y, int64_t cols);
void dequant_tq1_0(const void* row, float* y, int64_t cols);
void dequant_tq2_0(const void* row, float* y, int64_t cols);
void dequant_mxfp4(const void* row, float* y, int64_t cols);

// x (cols,) f32 -> cols/32 Q8A blocks (round to nearest, |q| <= 127), as ggml's x86 q8_0.
void quantize_q8a(const float* x, ActQ8A* y, int64_t cols);
// x (cols,) f32 -> cols/256 Q8K blocks.
void quantize_q8k(const float* x, ActQ8K* y, int64_t cols);
// x (cols,) -> y (cols,), each rounded to binary16 / bfloat16 precision (as f32).
void round_f16(const float* x, float* y, int64_t cols);
void round_bf16(const float* x, float* y, int64_t cols);
// gate (n,) = silu(gate) * up (n,), silu(g) = g / (1 + expf(-g))
void silu_mul(float* gate, const float* up, int64_t n);

// W row (cols,) . x (cols,) -> float. `x` is f32 for F32/F16/BF16, Q8A or Q8K blocks otherwise.
float vec_dot_f32(const void* w, const void* x, int64_t cols);
float vec_dot_f16(const void* w, const void* x, int64_t cols);
float vec_dot_bf16(const void* w, const void* x, int64_t cols);
float vec_dot_q4_0(const void* w, const void* x, int64_t cols);
float vec_dot_q4_1(const void* w, const void* x, int64_t cols);
float vec_dot_q5_0(const void* w, const void* x, int64_t cols);
float vec_dot_q5_1(const void* w, const void* x, int64_t cols);
float vec_dot_q8_0(const void* w, const void* x, int64_t cols);
float vec_dot_iq4_nl(const void* w, const void* x, int64_t cols);
float vec_dot_q2_k(const void* w, const void* x, int64_t cols);
float vec_dot_q3_k(const void* w, const void* x, int64_t cols);
float vec_dot_q4_k(const void* w, const void* x, int64_t cols);
float vec_dot_q5_k(const void* w, const void* x, int64_t cols);
float vec_dot_q6_k(const void* w, const void* x, int64_t cols);
float vec_dot_iq4_xs(const void* w, const void* x, int64_t cols);
float vec_dot_iq2_xxs(const void* w, const void* x, int64_t cols);  // x: Q8K
float vec_dot_iq2_xs(const void* w, const void* x, int64_t cols);
float vec_dot_iq2_s(const void* w, const void* x, int64_t cols);
float vec_dot_iq3_xxs(const void* w, const void* x, int64_t cols);
float vec_dot_iq3_s(const void* w, const void* x, int64_t cols);
float vec_dot_iq1_s(const void* w, const void* x, int64_t cols);
float vec_dot_iq1_m(const void* w, const void* x, int64_t cols);
float vec_dot_tq1_0(const void* w, const void* x, int64_t cols);
float vec_dot_tq2_0(const void* w, const void* x, int64_t cols);
float vec_dot_mxfp4(const void* w, const void* x, int64_t cols);  // x: Q8A

}  // namespace engine::kernels::ref
