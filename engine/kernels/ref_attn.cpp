// Scalar attention vector ops: the reference for avx2_attn.cpp.
#include "engine/kernels/attn_ops.h"
#include "engine/kernels/fp16.h"

namespace engine::kernels::ref {

namespace {

float dot_f32(const float* q, const float* k, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += q[i] * k[i];
  return s;
}

float dot_f16(const float* q, const uint16_t* k, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += q[i] * fp16_to_fp32(k[i]);
  return s;
}

void mad_f32(float* y, float a, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}

void mad_f16(float* y, float a, const uint16_t* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = round_fp16(y[i] + a * fp16_to_fp32(x[i]));
}

void scale_f16(float* y, float a, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = round_fp16(y[i] * a);
}

void round_f16(float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = round_fp16(y[i]);
}

}  // namespace

const AttnOps& attn_ops() {
  static const AttnOps ops{dot_f32, dot_f16, mad_f32, mad_f16, scale_f16, round_f16};
  return ops;
}

}  // namespace engine::kernels::ref
