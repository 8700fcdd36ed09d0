// AVX2 activation quantization and rounding (bit-identical to ref::quantize_q8a / quantize_q8k /
// round_f16 / round_bf16), and the SwiGLU activation (within a few ulp of ref::silu_mul).
#include "engine/kernels/avx2.h"

#include <cmath>
#include <cstring>

#include "engine/kernels/avx2_common.h"
#include "engine/kernels/fp16.h"

namespace engine::kernels::avx2 {

namespace {

inline float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

inline __m256 fabs8(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// e^x within about 2 ulp of expf for x >= -87 (Cephes' polynomial after x = n ln2 + r, the 2^n
// built in the exponent bits); +inf above 88.72 where expf overflows; below -87 it stays about
// e^-87 (expf's subnormals: 1 + either is 1, all silu needs). NaN in: some finite value out.
inline __m256 exp8(__m256 x) {
  const __m256 over = _mm256_cmp_ps(x, _mm256_set1_ps(88.7228f), _CMP_GT_OQ);
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  return _mm256_blendv_ps(exp_clamped(x), _mm256_set1_ps(INFINITY), over);
}

// 8 floats * id, rounded to nearest even -> 8 int32
inline __m256i round8(const float* x, __m256 id) {
  return _mm256_cvtps_epi32(
      _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x), id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// 32 int32 (4 ymm) -> 32 int8 in element order.
inline __m256i pack32(__m256i a, __m256i b, __m256i c, __m256i d) {
  const __m256i ab = _mm256_packs_epi32(a, b);  // lanes interleave; fixed by the permute below
  const __m256i cd = _mm256_packs_epi32(c, d);
  const __m256i v = _mm256_packs_epi16(ab, cd);
  return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Max |x| over 32 floats.
inline float amax32(const float* x) {
  __m256 m = fabs8(_mm256_loadu_ps(x));
  for (int i = 8; i < 32; i += 8) m = _mm256_max_ps(m, fabs8(_mm256_loadu_ps(x + i)));
  return hmax(m);
}

// 32 floats * id -> 32 int8 stored at q; returns their sum.
inline int quant32(const float* x, __m256 id, int8_t* q) {
  const __m256i a = round8(x, id), b = round8(x + 8, id), c = round8(x + 16, id), d = round8(x + 24, id);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(q), pack32(a, b, c, d));
  __m256i s = _mm256_add_epi32(_mm256_add_epi32(a, b), _mm256_add_epi32(c, d));
  __m128i t = _mm_add_epi32(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
  t = _mm_hadd_epi32(t, t);
  t = _mm_hadd_epi32(t, t);
  return _mm_cvtsi128_si32(t);
}

}  // namespace

// x (cols,) -> cols/32 Q8A blocks
void quantize_q8a(const float* x, ActQ8A* y, int64_t cols) {
  for (int64_t i = 0; i < cols / kQK; ++i, x += kQK) {
    const float amax = amax32(x);  // as ref::quantize_q8a (ggml's q8_0): scale 127 / amax
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const int sum = quant32(x, _mm256_set1_ps(id), y[i].qs);
    y[i].d = round_fp16(d);  // binary16, as ref::quantize_q8a
    y[i].s = y[i].d * static_cast<float>(sum);
  }
}

// x (cols,) -> cols/256 Q8K blocks
void quantize_q8k(const float* x, ActQ8K* y, int64_t cols) {
  for (int64_t i = 0; i < cols / kQKK; ++i, x += kQKK) {
    float amax = 0.0f;
    for (int c = 0; c < kQKK; c += 32) {
      const float m = amax32(x + c);
      amax = m > amax ? m : amax;
    }
    const float idf = amax != 0.0f ? 127.0f / amax : 0.0f;  // as ref::quantize_q8k (ggml's q8_K)
    const float d = amax != 0.0f ? 1.0f / idf : 0.0f;
    const __m256 id = _mm256_set1_ps(idf);
    for (int c = 0; c < kQKK; c += 32) quant32(x + c, id, y[i].qs + c);
    // bsums: 16-element group sums, via maddubs with ones (|sum| <= 2032 fits int16).
    for (int c = 0; c < kQKK; c += 32) {
      const __m256i q = loadu(y[i].qs + c);
      const __m256i pairs = _mm256_maddubs_epi16(_mm256_set1_epi8(1), q);  // 16 int16
      const __m256i quads = _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));  // 8 int32
      // lanes 0..3 -> group 2c/32, lanes 4..7 -> group 2c/32 + 1
      const __m128i lo = _mm256_castsi256_si128(quads), hi = _mm256_extracti128_si256(quads, 1);
      __m128i t = _mm_hadd_epi32(lo, hi);  // lo0+lo1, lo2+lo3, hi0+hi1, hi2+hi3
      t = _mm_hadd_epi32(t, t);             // group a, group b, ...
      y[i].bsums[c / 16] = static_cast<int16_t>(_mm_cvtsi128_si32(t));
      y[i].bsums[c / 16 + 1] = static_cast<int16_t>(_mm_extract_epi32(t, 1));
    }
    y[i].d = d;
  }
}

// x (cols,) -> y (cols,): each rounded to the nearest binary16 (F16C, ties to even), as f32
void round_f16(const float* x, float* y, int64_t cols) {
  int64_t i = 0;
  for (; i + 8 <= cols; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(y + i, _mm256_cvtph_ps(h));
  }
  for (; i < cols; ++i) y[i] = round_fp16(x[i]);
}

// x (cols,) -> y (cols,): each rounded to the nearest bfloat16 (ties to even; NaN stays NaN), as f32
void round_bf16(const float* x, float* y, int64_t cols) {
  int64_t i = 0;
  const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1), top = _mm256_set1_epi32(-65536);
  const __m256i quiet = _mm256_set1_epi32(0x400000), abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  for (; i + 8 <= cols; i += 8) {
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + i));
    const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i rounded = _mm256_and_si256(_mm256_add_epi32(u, _mm256_add_epi32(bias, odd)), top);
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i quieted = _mm256_and_si256(_mm256_or_si256(u, quiet), top);
    _mm256_storeu_ps(y + i, _mm256_castsi256_ps(_mm256_blendv_epi8(rounded, quieted, nan)));
  }
  for (; i < cols; ++i) y[i] = bf16_to_fp32(fp32_to_bf16(x[i]));
}

namespace {

// 8 of gate / (1 + e^-gate) * up
inline __m256 silu_mul8(__m256 g, __m256 u) {
  const __m256 e = exp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

}  // namespace

// gate (n,) = gate / (1 + e^-gate) * up (n,). The tail goes through the same vector code (via a
// padded copy): an element's result must not depend on where it sits, or a batch's rows (n = rows
// * n_ff, n_ff not always a multiple of 8) would differ from the same tokens decoded one by one.
void silu_mul(float* gate, const float* up, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(gate + i, silu_mul8(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i == n) return;
  alignas(32) float g[8] = {}, u[8] = {};
  std::memcpy(g, gate + i, static_cast<size_t>(n - i) * sizeof(float));
  std::memcpy(u, up + i, static_cast<size_t>(n - i) * sizeof(float));
  _mm256_store_ps(g, silu_mul8(_mm256_load_ps(g), _mm256_load_ps(u)));
  std::memcpy(gate + i, g, static_cast<size_t>(n - i) * sizeof(float));
}

}  // namespace engine::kernels::avx2
