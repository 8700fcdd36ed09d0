// Element-wise and per-row operations of the forward pass (everything but the matrix products).
//
// Plain scalar loops over contiguous f32 rows, written so the compiler can vectorize them. All
// functions are pure: no state, safe to call from any thread on disjoint buffers.
#pragma once

#include <cstdint>

namespace engine {

// --- per-row operations -------------------------------------------------------------------------

// out (n,) = x (n,) / rms(x) * w (n,). out may alias x.
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);

// x (n,) += y (n,)
void add(float* x, const float* y, int64_t n);

// x (n,) *= s
void scale(float* x, float s, int64_t n);

// gate (n,) = silu(gate) * up (n,)   (SwiGLU)
void silu_mul(float* gate, const float* up, int64_t n);

// gate (n,) = gelu(gate) * up (n,)   (GeGLU), GELU's tanh approximation evaluated as ggml's CPU
// backend does: through a table indexed by the f16 rounding of gate, holding f16 results; exact
// outside (-10, 10).
void gelu_mul(float* gate, const float* up, int64_t n);

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

// The angles of one position: cos_sin (n_rot/2, 2) = mscale * (cos, sin) of
//   freq_scale * pos * base^(-2i/n_rot) / freq_factors[i]        (freq_factors may be null)
// mscale is LongRoPE's attention factor (1 otherwise).
void rope_angles(float* cos_sin, int32_t pos, int n_rot, float freq_base, float freq_scale,
                 const float* freq_factors, float mscale = 1.0f);

// Rotates the first n_rot dims of one head x (head_dim,) by the angles cos_sin (n_rot/2, 2).
void rope(float* x, const float* cos_sin, int n_rot, RopeStyle style);

}  // namespace engine
