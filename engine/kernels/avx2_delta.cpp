// AVX2 + FMA chunked gated delta rule (delta_rule.h): ref::delta_row / delta_end with 8-wide dot
// products and updates. Sums are taken in a fixed order for a given d_k / d_v, so a row's bits
// depend only on its inputs.
#include <immintrin.h>

#include <cmath>

#include "engine/kernels/delta_rule.h"

namespace engine::kernels::avx2 {

namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// a (n,) . b (n,): two 8-lane accumulators, then the tail in scalar.
inline float dot(const float* a, const float* b, int64_t n) {
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  float s = hsum(_mm256_add_ps(s0, s1));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

// y (n,) += c * x (n,)
inline void axpy(float* y, float c, const float* x, int64_t n) {
  const __m256 vc = _mm256_set1_ps(c);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(y + i, _mm256_fmadd_ps(vc, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
  for (; i < n; ++i) y[i] += c * x[i];
}

}  // namespace

void delta_row(const DeltaRowArgs& a) {
  const int64_t dk = a.d_k, dv = a.d_v;
  const int t = a.t;
  const float* kt = a.k + static_cast<size_t>(t) * a.k_stride;
  const float Gt = a.G[static_cast<size_t>(t) * a.G_stride];
  const float gamma = std::exp(Gt);
  float* u = a.scratch;         // (d_v,) v - S'_t k_t
  float* acc = a.scratch + dv;  // (d_v,) the output before the scale
  float* wk = acc + dv;         // (t,) e^{Gt - Gs} (k_s . k_t)
  float* wq = wk + t;           // (t,) e^{Gt - Gs} (k_s . q)
  for (int64_t j = 0; j < dv; ++j) {
    const float* row = a.s0 + j * dk;
    u[j] = a.v[j] - gamma * dot(row, kt, dk);
    acc[j] = gamma * dot(row, a.q, dk);
  }
  for (int s = 0; s < t; ++s) {
    const float* ks = a.k + static_cast<size_t>(s) * a.k_stride;
    const float w = std::exp(Gt - a.G[static_cast<size_t>(s) * a.G_stride]);
    wk[s] = -w * dot(ks, kt, dk);
    wq[s] = w * dot(ks, a.q, dk);
  }
  for (int s = 0; s < t; ++s) {
    const float* ds = a.d + static_cast<size_t>(s) * a.d_stride;
    axpy(u, wk[s], ds, dv);
    axpy(acc, wq[s], ds, dv);
  }
  float* dt = a.d + static_cast<size_t>(t) * a.d_stride;
  const float kq = dot(kt, a.q, dk);
  const __m256 vb = _mm256_set1_ps(a.beta), vs = _mm256_set1_ps(a.scale), vkq = _mm256_set1_ps(kq);
  int64_t j = 0;
  for (; j + 8 <= dv; j += 8) {
    const __m256 d8 = _mm256_mul_ps(vb, _mm256_loadu_ps(u + j));
    _mm256_storeu_ps(dt + j, d8);
    _mm256_storeu_ps(a.o + j, _mm256_mul_ps(vs, _mm256_fmadd_ps(vkq, d8, _mm256_loadu_ps(acc + j))));
  }
  for (; j < dv; ++j) {
    dt[j] = a.beta * u[j];
    a.o[j] = a.scale * (acc[j] + kq * dt[j]);
  }
}

void delta_end(const DeltaEndArgs& a) {
  const int64_t dk = a.d_k, dv = a.d_v;
  const float Gl = a.G[static_cast<size_t>(a.n - 1) * a.G_stride];
  const __m256 gamma = _mm256_set1_ps(std::exp(Gl));
  float* w = a.scratch;
  for (int s = 0; s < a.n; ++s) w[s] = std::exp(Gl - a.G[static_cast<size_t>(s) * a.G_stride]);
  for (int64_t j = 0; j < dv; ++j) {
    float* out = a.s_end + j * dk;
    const float* in = a.s0 + j * dk;
    int64_t i = 0;
    for (; i + 8 <= dk; i += 8) _mm256_storeu_ps(out + i, _mm256_mul_ps(gamma, _mm256_loadu_ps(in + i)));
    for (; i < dk; ++i) out[i] = std::exp(Gl) * in[i];
    for (int s = 0; s < a.n; ++s) {
      axpy(out, w[s] * a.d[static_cast<size_t>(s) * a.d_stride + static_cast<size_t>(j)],
           a.k + static_cast<size_t>(s) * a.k_stride, dk);
    }
  }
}

}  // namespace engine::kernels::avx2
