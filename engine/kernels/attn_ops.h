// Vector ops of the attention inner loop: one f32 query row against cached K/V rows, which are
// f32 or f16 (the KV cache's element type). The f16 variants follow llama.cpp's CPU flash
// attention rounding for rounding: the V accumulator lives in f16, so every update is rounded
// back to f16 (round to nearest even).
#pragma once

#include <cstdint>

namespace engine::kernels {

struct AttnOps {
  // q (n,) . k (n,) -> float
  float (*dot_f32)(const float* q, const float* k, int64_t n);
  float (*dot_f16)(const float* q, const uint16_t* k, int64_t n);
  // y (n,) += a * x (n,)
  void (*mad_f32)(float* y, float a, const float* x, int64_t n);
  // y (n,) = f16(y + a * f32(x))      (y holds f16-representable values)
  void (*mad_f16)(float* y, float a, const uint16_t* x, int64_t n);
  // y (n,) = f16(y * a)
  void (*scale_f16)(float* y, float a, int64_t n);
  // y (n,) = f16(y): rounds a query to the cache's precision
  void (*round_f16)(float* y, int64_t n);
};

namespace ref {
const AttnOps& attn_ops();  // scalar reference
}
namespace avx2 {
const AttnOps& attn_ops();  // AVX2 + FMA + F16C
}

}  // namespace engine::kernels
