#include "engine/model/ops.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/fp16.h"

namespace engine {

void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps) {
  double ss = 0.0;  // sum of squares in double, as ggml does
  for (int64_t i = 0; i < n; ++i) ss += static_cast<double>(x[i] * x[i]);
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / static_cast<double>(n)) + eps);
  if (w == nullptr) {
    for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv;
    return;
  }
  for (int64_t i = 0; i < n; ++i) out[i] = x[i] * inv * w[i];
}

void add(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void mul(float* x, const float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= y[i];
}

void scale(float* x, float s, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] *= s;
}

// Through the dispatch table: expf per element took ~1.5 % of a decode step (8192 per layer).
void silu_mul(float* gate, const float* up, int64_t n) { kernels::dispatch().silu_mul(gate, up, n); }

void swiglu_oai_mul(float* gate, const float* up, int64_t n) {
  constexpr float kAlpha = 1.702f, kLimit = 7.0f;
  for (int64_t i = 0; i < n; ++i) {
    const float g = std::min(gate[i], kLimit);
    const float u = std::clamp(up[i], -kLimit, kLimit);
    gate[i] = g / (1.0f + std::exp(kAlpha * (-g))) * (u + 1.0f);
  }
}

namespace {

// gelu(h) rounded to f16 for every f16 value h, as f32: ggml's ggml_table_gelu_f16.
const float* gelu_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f, kA = 0.044715f;
    for (uint32_t h = 0; h < t.size(); ++h) {
      const float x = kernels::fp16_to_fp32(static_cast<uint16_t>(h));
      const float g = 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * (1.0f + kA * x * x)));
      t[h] = kernels::round_fp16(g);
    }
    return t;
  }();
  return table.data();
}

// x * sigmoid(1.702 x) rounded to f16 for every f16 value x, as f32: ggml_table_gelu_quick_f16.
const float* gelu_quick_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(1 << 16);
    for (uint32_t h = 0; h < t.size(); ++h) {
      const float x = kernels::fp16_to_fp32(static_cast<uint16_t>(h));
      t[h] = kernels::round_fp16(x * (1.0f / (1.0f + std::exp(-1.702f * x))));
    }
    return t;
  }();
  return table.data();
}

}  // namespace

void gelu_quick_mul(float* gate, const float* up, int64_t n) {
  const float* table = gelu_quick_table();
  for (int64_t i = 0; i < n; ++i) gate[i] = table[kernels::fp32_to_fp16(gate[i])] * up[i];
}

void gelu_quick(float* x, int64_t n) {
  const float* table = gelu_quick_table();
  for (int64_t i = 0; i < n; ++i) x[i] = table[kernels::fp32_to_fp16(x[i])];
}

void gelu_mul(float* gate, const float* up, int64_t n) {
  const float* table = gelu_table();
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    if (g <= -10.0f) {
      gate[i] = 0.0f;
    } else if (g >= 10.0f) {
      gate[i] = g * up[i];
    } else {
      gate[i] = table[kernels::fp32_to_fp16(g)] * up[i];
    }
  }
}

void gelu(float* x, int64_t n) {
  const float* table = gelu_table();
  for (int64_t i = 0; i < n; ++i) {
    const float g = x[i];
    x[i] = g <= -10.0f ? 0.0f : g >= 10.0f ? g : table[kernels::fp32_to_fp16(g)];
  }
}

void tanh_inplace(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i]);
}

void layernorm(float* out, const float* x, const float* w, const float* b, int64_t n, float eps) {
  double sum = 0.0;  // (ggml_norm accumulates in f64 too)
  for (int64_t i = 0; i < n; ++i) sum += x[i];
  const auto mean = static_cast<float>(sum / static_cast<double>(n));
  double var = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float d = x[i] - mean;
    var += static_cast<double>(d) * d;
  }
  const auto inv = static_cast<float>(1.0 / std::sqrt(var / static_cast<double>(n) + eps));
  for (int64_t i = 0; i < n; ++i) out[i] = (x[i] - mean) * inv * w[i] + b[i];
}

void softcap(float* x, float cap, int64_t n) {
  const float inv = 1.0f / cap;
  for (int64_t i = 0; i < n; ++i) x[i] = std::tanh(x[i] * inv) * cap;
}

void softmax(float* x, int64_t n) {
  if (n <= 0) return;
  float max = x[0];
  for (int64_t i = 1; i < n; ++i) max = std::fmax(max, x[i]);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max);
    sum += x[i];
  }
  scale(x, 1.0f / sum, n);
}

void to_fp16(uint16_t* dst, const float* src, int64_t n) {
  for (int64_t i = 0; i < n; ++i) dst[i] = kernels::fp32_to_fp16(src[i]);
}

// Computed as ggml does (float, theta advanced by a constant ratio), so positions get the exact
// angles of the reference implementation.
void yarn_corr_dims(RopeParams& rp, int64_t n_ctx_orig, float beta_fast, float beta_slow) {
  // the dim pair whose wavelength spans `turns` rotations of the original context
  auto dim = [&](float turns) {
    return static_cast<float>(rp.n_rot) * std::log(static_cast<float>(n_ctx_orig) / (turns * 2 * std::numbers::pi_v<float>)) /
           (2 * std::log(rp.freq_base));
  };
  rp.corr_low = std::max(0.0f, std::floor(dim(beta_fast)));
  rp.corr_high = std::min(static_cast<float>(rp.n_rot - 1), std::ceil(dim(beta_slow)));
}

namespace {

// The section (0 t, 1 h, 2 w, 3 extra) of pair i under rp.sections: IMRoPE interleaves t, h, w
// while i mod sum < 3 x that section's size; M-RoPE lays them side by side.
int rope_section(int i, const RopeParams& rp) {
  const int* sec = rp.sections;
  const int sum = sec[0] + sec[1] + sec[2] + sec[3];
  if (sum == 0) return 0;
  const int s = i % sum;
  if (rp.imrope) return s < 3 * sec[s % 3] ? s % 3 : 3;
  if (s < sec[0]) return 0;
  if (s < sec[0] + sec[1]) return 1;
  return s < sec[0] + sec[1] + sec[2] ? 2 : 3;
}

}  // namespace

void rope_angles(float* cos_sin, int32_t pos, const RopeParams& rp) {
  const int32_t p[4] = {pos, pos, pos, pos};
  rope_angles_multi(cos_sin, p, rp);
}

void rope_angles_multi(float* cos_sin, const int32_t p[4], const RopeParams& rp) {
  const float theta_scale = std::pow(rp.freq_base, -2.0f / static_cast<float>(rp.n_rot));
  // each section's angle, multiplied by theta_scale once a pair as ggml does
  const bool sectioned = rp.sections[0] + rp.sections[1] + rp.sections[2] + rp.sections[3] > 0;
  float theta[4] = {static_cast<float>(p[0]), static_cast<float>(p[1]), static_cast<float>(p[2]),
                    static_cast<float>(p[3])};
  for (int i = 0; i < rp.n_rot / 2; ++i) {
    const float th = theta[sectioned ? rope_section(i, rp) : 0];
    float extrap = rp.freq_factors ? th / rp.freq_factors[i] : th;
    float t = rp.freq_scale * extrap;
    float mscale = rp.mscale;
    if (rp.ext_factor != 0.0f) {  // YaRN: mix interpolated and extrapolated angles
      const float y = (static_cast<float>(i) - rp.corr_low) / std::max(0.001f, rp.corr_high - rp.corr_low);
      const float mix = (1.0f - std::min(1.0f, std::max(0.0f, y))) * rp.ext_factor;
      t = t * (1.0f - mix) + extrap * mix;
      mscale *= 1.0f + 0.1f * std::log(1.0f / rp.freq_scale);
    }
    cos_sin[2 * i] = std::cos(t) * mscale;
    cos_sin[2 * i + 1] = std::sin(t) * mscale;
    for (float& x : theta) x *= theta_scale;
  }
}

void rope(float* x, const float* cos_sin, int n_rot, RopeStyle style) {
  const int half = n_rot / 2;
  const int stride = style == RopeStyle::kNormal ? 1 : half;  // distance between a pair's members
  for (int i = 0; i < half; ++i) {
    const int a = style == RopeStyle::kNormal ? 2 * i : i;
    const float c = cos_sin[2 * i], s = cos_sin[2 * i + 1];
    const float x0 = x[a], x1 = x[a + stride];
    x[a] = x0 * c - x1 * s;
    x[a + stride] = x0 * s + x1 * c;
  }
}

}  // namespace engine
