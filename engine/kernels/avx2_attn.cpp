// AVX2 + FMA + F16C attention vector ops (see attn_ops.h). 8 lanes at a time, scalar tails.
// f16 <-> f32 conversions use F16C, which rounds to nearest even like the scalar reference,
// so mad/scale/round match it exactly when no FMA contraction differs; the dots sum in a
// different order and agree to rounding.
#include "engine/kernels/attn_ops.h"
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/fp16.h"

namespace engine::kernels::avx2 {

namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

inline __m256 load_f16(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m256 round_f16x8(__m256 v) { return _mm256_cvtph_ps(_mm256_cvtps_ph(v, kRound)); }

// 8 cached elements (f32 or f16) as f32, and one for the tails.
inline __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
inline __m256 load8(const uint16_t* p) { return load_f16(p); }
inline float load1(float v) { return v; }
inline float load1(uint16_t h) { return fp16_to_fp32(h); }

// q (n,) . k (n,) with two accumulators to hide the FMA latency.
template <typename K>
float dot(const float* q, const K* k, int64_t n) {
  __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i + 8), load8(k + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + i), load8(k + i), acc0);
  float s = hsum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) s += q[i] * load1(k[i]);
  return s;
}

float dot_f32(const float* q, const float* k, int64_t n) { return dot(q, k, n); }
float dot_f16(const float* q, const uint16_t* k, int64_t n) { return dot(q, k, n); }

void mad_f32(float* y, float a, const float* x, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  }
  for (; i < n; ++i) y[i] += a * x[i];
}

void mad_f16(float* y, float a, const uint16_t* x, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 r = _mm256_fmadd_ps(va, load_f16(x + i), _mm256_loadu_ps(y + i));
    _mm256_storeu_ps(y + i, round_f16x8(r));
  }
  for (; i < n; ++i) y[i] = round_fp16(y[i] + a * fp16_to_fp32(x[i]));
}

void scale_f16(float* y, float a, int64_t n) {
  const __m256 va = _mm256_set1_ps(a);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, round_f16x8(_mm256_mul_ps(_mm256_loadu_ps(y + i), va)));
  for (; i < n; ++i) y[i] = round_fp16(y[i] * a);
}

void round_f16(float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, round_f16x8(_mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] = round_fp16(y[i]);
}

}  // namespace

const AttnOps& attn_ops() {
  static const AttnOps ops{dot_f32, dot_f16, mad_f32, mad_f16, scale_f16, round_f16};
  return ops;
}

}  // namespace engine::kernels::avx2
