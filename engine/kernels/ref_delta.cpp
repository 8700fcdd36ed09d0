// Scalar reference of the chunked gated delta rule (delta_rule.h), and the plain recurrence.
#include <cmath>

#include "engine/kernels/delta_rule.h"

namespace engine::kernels::ref {

namespace {

float dot(const float* a, const float* b, int64_t n) {
  float s = 0.0f;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

}  // namespace

void delta_row(const DeltaRowArgs& a) {
  const int64_t dk = a.d_k, dv = a.d_v;
  const int t = a.t;
  const float* kt = a.k + static_cast<size_t>(t) * a.k_stride;
  const float Gt = a.G[static_cast<size_t>(t) * a.G_stride];
  const float gamma = std::exp(Gt);
  float* u = a.scratch;         // (d_v,) v - S'_t k_t, then d_t / beta
  float* acc = a.scratch + dv;  // (d_v,) the output before the scale
  // u = v - gamma S0 k_t; acc = gamma S0 q
  for (int64_t j = 0; j < dv; ++j) {
    const float* row = a.s0 + j * dk;
    u[j] = a.v[j] - gamma * dot(row, kt, dk);
    acc[j] = gamma * dot(row, a.q, dk);
  }
  // the chunk's earlier rows: u -= e^{Gt - Gs} (k_s . k_t) d_s; acc += e^{Gt - Gs} (k_s . q) d_s
  for (int s = 0; s < t; ++s) {
    const float* ks = a.k + static_cast<size_t>(s) * a.k_stride;
    const float* ds = a.d + static_cast<size_t>(s) * a.d_stride;
    const float w = std::exp(Gt - a.G[static_cast<size_t>(s) * a.G_stride]);
    const float wk = w * dot(ks, kt, dk), wq = w * dot(ks, a.q, dk);
    for (int64_t j = 0; j < dv; ++j) {
      u[j] -= wk * ds[j];
      acc[j] += wq * ds[j];
    }
  }
  // d_t = beta u; o = scale (acc + (k_t . q) d_t)
  float* dt = a.d + static_cast<size_t>(t) * a.d_stride;
  const float kq = dot(kt, a.q, dk);
  for (int64_t j = 0; j < dv; ++j) {
    dt[j] = a.beta * u[j];
    a.o[j] = a.scale * (acc[j] + kq * dt[j]);
  }
}

void delta_end(const DeltaEndArgs& a) {
  const int64_t dk = a.d_k, dv = a.d_v;
  const float Gl = a.G[static_cast<size_t>(a.n - 1) * a.G_stride];
  const float gamma = std::exp(Gl);
  float* w = a.scratch;  // (n,) each row's decay to the chunk's end
  for (int s = 0; s < a.n; ++s) w[s] = std::exp(Gl - a.G[static_cast<size_t>(s) * a.G_stride]);
  for (int64_t j = 0; j < dv; ++j) {
    float* out = a.s_end + j * dk;
    const float* in = a.s0 + j * dk;
    for (int64_t i = 0; i < dk; ++i) out[i] = gamma * in[i];
    for (int s = 0; s < a.n; ++s) {
      const float c = w[s] * a.d[static_cast<size_t>(s) * a.d_stride + static_cast<size_t>(j)];
      const float* ks = a.k + static_cast<size_t>(s) * a.k_stride;
      for (int64_t i = 0; i < dk; ++i) out[i] += c * ks[i];
    }
  }
}

void delta_step(float* s, const float* q, const float* k, const float* v, float gate, float beta, float scale,
                float* o, int64_t d_k, int64_t d_v) {
  const float g = std::exp(gate);
  for (int64_t i = 0; i < d_v * d_k; ++i) s[i] *= g;
  for (int64_t j = 0; j < d_v; ++j) {
    float* row = s + j * d_k;
    const float dj = (v[j] - dot(row, k, d_k)) * beta;
    for (int64_t i = 0; i < d_k; ++i) row[i] += dj * k[i];
    o[j] = dot(row, q, d_k) * scale;
  }
}

}  // namespace engine::kernels::ref
