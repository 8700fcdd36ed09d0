// Scalar half / bfloat16 <-> float conversions (bit exact, round-to-nearest-even).
#pragma once

#include <cstdint>
#include <cstring>

namespace engine::kernels {

inline float bits_to_f32(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

inline uint32_t f32_to_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// IEEE binary16 -> binary32, exact for every input (subnormals, inf, NaN included).
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return bits_to_f32(sign | 0x7f800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return bits_to_f32(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return bits_to_f32(sign);  // +-0
  // Subnormal: value = mant * 2^-24.
  const float v = static_cast<float>(mant) * 5.9604644775390625e-8f;
  return sign ? -v : v;
}

// binary32 -> binary16, round to nearest even; overflow gives inf, NaN stays NaN.
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t x = f32_to_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t ax = x & 0x7fffffffu;
  if (ax > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);    // NaN
  if (ax >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);   // >= 65520: inf
  if (ax < 0x38800000u) {  // below the smallest normal half (2^-14): subnormal or zero
    // Adding 0.5 (2^-1) aligns the half-subnormal quantum 2^-24 to the float ulp of 0.5,
    // so the FPU does the round-to-nearest-even for us.
    const float r = bits_to_f32(ax) + 0.5f;
    return static_cast<uint16_t>(sign | (f32_to_bits(r) - 0x3f000000u));
  }
  const uint32_t odd = (ax >> 13) & 1u;
  const uint32_t rounded = ax + 0xfffu + odd;  // round mantissa to 10 bits, ties to even
  return static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13));
}

// x rounded to the nearest binary16 value, as f32.
inline float round_fp16(float x) { return fp16_to_fp32(fp32_to_fp16(x)); }

// bfloat16 -> binary32 (exact: bf16 is the top half of a float).
inline float bf16_to_fp32(uint16_t b) { return bits_to_f32(static_cast<uint32_t>(b) << 16); }

// binary32 -> bfloat16, round to nearest even; NaN stays NaN.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t x = f32_to_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Loads a little-endian fp16 from a possibly unaligned address inside a packed block.
inline float load_fp16(const void* p) {
  uint16_t h;
  std::memcpy(&h, p, sizeof h);
  return fp16_to_fp32(h);
}

}  // namespace engine::kernels
