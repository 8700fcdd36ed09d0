// Element-wise and per-row operations of the forward pass (everything but the matrix products).
//
// Plain scalar loops over contiguous f32 rows, written so the compiler can vectorize them. All
// functions are pure: no state, safe to call from any thread on disjoint buffers.
#pragma once

#include <cmath>
#include <cstdint>

namespace engine {

// 1 / (1 + e^-x): gates (shared expert, DeltaNet's beta, attention output) and sigmoid routing.
inline float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

// --- per-row operations -------------------------------------------------------------------------

// out (n,) = x (n,) / rms(x) * w (n,), or without w when it is null. out may alias x.
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);

// out (n,) = (x - mean(x)) / sqrt(var(x) + eps) * w (n,) + b (n,)   (LayerNorm). out may alias x.
void layernorm(float* out, const float* x, const float* w, const float* b, int64_t n, float eps);

// x (n,) += y (n,)
void add(float* x, const float* y, int64_t n);

// x (n,) *= s
void scale(float* x, float s, int64_t n);

// x (n,) *= y (n,), element-wise
void mul(float* x, const float* y, int64_t n);

// gate (n,) = silu(gate) * up (n,)   (SwiGLU)
void silu_mul(float* gate, const float* up, int64_t n);

// gate (n,) = gelu(gate) * up (n,)   (GeGLU), GELU's tanh approximation evaluated as ggml's CPU
// backend does: through a table indexed by the f16 rounding of gate, holding f16 results; exact
// outside (-10, 10).
void gelu_mul(float* gate, const float* up, int64_t n);

// x (n,) = gelu(x), evaluated as gelu_mul's (ggml_gelu: the f16 table).
void gelu(float* x, int64_t n);

// gate (n,) = gelu_quick(gate) * up (n,), gelu_quick(x) = x * sigmoid(1.702 x), and x (n,) =
// gelu_quick(x): through ggml's table of f16 results indexed by the f16 rounding of x (every x).
void gelu_quick_mul(float* gate, const float* up, int64_t n);
void gelu_quick(float* x, int64_t n);

// x (n,) = tanh(x)
void tanh_inplace(float* x, int64_t n);

// gate (n,) = g * sigmoid(1.702 g) * (u + 1) with g = min(gate, 7), u = clamp(up, -7, 7): gpt-oss's
// clamped SwiGLU (ggml's swiglu_oai with its alpha 1.702 and limit 7).
void swiglu_oai_mul(float* gate, const float* up, int64_t n);

// x (n,) = cap * tanh(x / cap)   (soft-capping, gemma2)
void softcap(float* x, float cap, int64_t n);

// x (n,) = softmax(x); returns nothing, numerically stable (subtracts the max).
void softmax(float* x, int64_t n);

// dst (n,) f16 <- src (n,) f32
void to_fp16(uint16_t* dst, const float* src, int64_t n);

// --- rotary position embedding ------------------------------------------------------------------

// How RoPE pairs up the dimensions of a head.
enum class RopeStyle {
  kNormal,  // adjacent pairs (2i, 2i+1): llama
  kNeox,    // halves (i, i + n_rot/2): qwen2, qwen3, gpt-neox
};

// How one layer's RoPE turns positions into angles.
struct RopeParams {
  int n_rot = 0;                       // rotated dims of a head
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;             // 1 / rope.scaling.factor
  const float* freq_factors = nullptr; // (n_rot/2,) divisors (llama3 rope_freqs, LongRoPE) or null
  float mscale = 1.0f;                 // multiplies cos and sin (attention factor)
  // YaRN (ext_factor 0: off): below dim pair corr_low the angle is extrapolated (unscaled), above
  // corr_high interpolated (freq_scale), a linear ramp between; the magnitude then grows by
  // 1 + 0.1 ln(1 / freq_scale). As ggml's rope_yarn.
  float ext_factor = 0.0f;
  float corr_low = 0.0f, corr_high = 0.0f;
  // IMRoPE (qwen35: ggml's rope_multi, interleaved): pair i belongs to section (i mod sum) % 3 of
  // sections t, h, w while i mod sum < 3 x that section's size, else to the extra one. A text
  // token has its position in all four (llama.cpp's batch broadcasts it); an image's tokens
  // (rope_angles_multi) have their own.
  bool imrope = false;
  int sections[4] = {0, 0, 0, 0};
};

// YaRN's correction dims [low, high] for n_rot dims, a pretraining context n_ctx_orig and RoPE
// base: the pairs whose wavelength spans beta_fast resp. beta_slow turns of that context
// (floored / ceiled, clamped to [0, n_rot - 1]), as ggml_rope_yarn_corr_dims.
void yarn_corr_dims(RopeParams& rp, int64_t n_ctx_orig, float beta_fast, float beta_slow);

// The angles of one position: cos_sin (n_rot/2, 2) = mscale * (cos, sin) of
//   theta_i = freq_scale * pos * base^(-2i/n_rot) / freq_factors[i]   (YaRN: ramped, see above)
void rope_angles(float* cos_sin, int32_t pos, const RopeParams& rp);

// The same for M-RoPE positions (temporal, height, width, extra) `p`: pair i turns by the position
// of its section (rp.sections; IMRoPE interleaved as above, else contiguous t, h, w, extra), as
// ggml's rope_multi. With (pos, pos, pos, pos) it equals rope_angles(pos).
void rope_angles_multi(float* cos_sin, const int32_t p[4], const RopeParams& rp);

// Rotates the first n_rot dims of one head x (head_dim,) by the angles cos_sin (n_rot/2, 2).
void rope(float* x, const float* cos_sin, int n_rot, RopeStyle style);

}  // namespace engine
