// Element-wise and per-row operations of the forward pass (everything but the matrix products).
//
// Plain scalar loops over contiguous f32 rows, written so the compiler can vectorize them. All
// functions are pure: no state, safe to call from any thread on disjoint buffers.
#pragma once

#include <cstdint>
#include <cstring>

namespace engine {

// --- half precision (IEEE binary16), bit-exact round-to-nearest-even ----------------------------

inline float fp16_to_fp32(uint16_t h) {
  // Shift the half into a float's layout, then fix the exponent bias with one multiply
  // (normals) or rebuild denormals with a magic add; no branches on the hot path.
  const uint32_t w = static_cast<uint32_t>(h) << 16;
  const uint32_t sign = w & 0x80000000u;
  const uint32_t two_w = w + w;
  uint32_t bits = (two_w >> 4) + (0xE0u << 23);
  float normalized;
  std::memcpy(&normalized, &bits, 4);
  normalized *= 0x1.0p-112f;
  bits = (two_w >> 17) | (126u << 23);
  float denormalized;
  std::memcpy(&denormalized, &bits, 4);
  denormalized -= 0.5f;
  const float r = two_w < (1u << 27) ? denormalized : normalized;
  uint32_t rb;
  std::memcpy(&rb, &r, 4);
  rb |= sign;
  float out;
  std::memcpy(&out, &rb, 4);
  return out;
}

inline uint16_t fp32_to_fp16(float f) {
  float base = (f < 0 ? -f : f) * 0x1.0p+112f;
  base *= 0x1.0p-110f;
  uint32_t w;
  std::memcpy(&w, &f, 4);
  const uint32_t shl1_w = w + w;
  const uint32_t sign = w & 0x80000000u;
  uint32_t bias = shl1_w & 0xFF000000u;
  if (bias < 0x71000000u) bias = 0x71000000u;
  uint32_t bias_bits = (bias >> 1) + 0x07800000u;
  float bias_f;
  std::memcpy(&bias_f, &bias_bits, 4);
  base = bias_f + base;
  uint32_t bits;
  std::memcpy(&bits, &base, 4);
  const uint32_t exp_bits = (bits >> 13) & 0x00007C00u;
  const uint32_t mantissa_bits = bits & 0x00000FFFu;
  const uint32_t nonsign = exp_bits + mantissa_bits;
  return static_cast<uint16_t>((sign >> 16) | (shl1_w > 0xFF000000u ? 0x7E00u : nonsign));
}

// --- per-row operations -------------------------------------------------------------------------

// out (n,) = x (n,) / rms(x) * w (n,). out may alias x.
void rmsnorm(float* out, const float* x, const float* w, int64_t n, float eps);

// x (n,) += y (n,)
void add(float* x, const float* y, int64_t n);

// x (n,) *= s
void scale(float* x, float s, int64_t n);

// gate (n,) = silu(gate) * up (n,)   (SwiGLU)
void silu_mul(float* gate, const float* up, int64_t n);

// x (n,) = softmax(x); returns nothing, numerically stable (subtracts the max).
void softmax(float* x, int64_t n);

// dst (n,) f16 <- src (n,) f32
void to_fp16(uint16_t* dst, const float* src, int64_t n);

// --- rotary position embedding ------------------------------------------------------------------

// How RoPE pairs up the dimensions of a head.
enum class RopeStyle {
  Normal,  // adjacent pairs (2i, 2i+1): llama
  NeoX,    // halves (i, i + n_rot/2): qwen2, qwen3, gpt-neox
};

// The angles of one position: cos_sin (n_rot/2, 2) = (cos, sin) of
//   freq_scale * pos * base^(-2i/n_rot) / freq_factors[i]        (freq_factors may be null)
void rope_angles(float* cos_sin, int32_t pos, int n_rot, float freq_base, float freq_scale,
                 const float* freq_factors);

// Rotates the first n_rot dims of one head x (head_dim,) by the angles cos_sin (n_rot/2, 2).
void rope(float* x, const float* cos_sin, int n_rot, RopeStyle style);

}  // namespace engine
