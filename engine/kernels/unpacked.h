// Canonical unpacked forms of one weight block, shared by the reference and SIMD dot kernels.
//
// 32-element types:  W . x = d * x.d * sum(q * x.qs) + m * x.s          (x: ActQ8A)
// 256-element types: W . x = d * x.d * sum_g sc[g] * sum_{i in g}(q * x.qs)
//                            - dm * x.d * sum_g mn[g] * x.bsums[g]       (x: ActQ8K, g = 16 groups of 16)
// Every q fits in int8: unsigned-range types (Q4_0 0..15, Q6_K 0..63, ...) fold their zero
// offset into m / mn; signed types (Q8_0, IQ4_NL, IQ4_XS, the IQ1-IQ3 lattices, TQ, MXFP4) keep
// the sign and have m = mn = 0.
//
// The reference kernels' row loops over canonical blocks are here too. Portable scalar code:
// include from the ref_*.cpp files only, never from a file compiled with SIMD flags.
#pragma once

#include <cstdint>

#include "engine/kernels/blocks.h"

namespace engine::kernels {

struct Unpacked32 {
  int8_t q[32];
  float d;
  float m;
};

struct UnpackedK {
  int8_t q[256];
  int16_t sc[16];
  int16_t mn[16];
  float d;
  float dm;
};

namespace ref {

// 16 bytes of 4-bit codes -> 32 values from `table` (16,): low nibbles are elements 0..15, high
// nibbles 16..31 (the IQ4_NL / IQ4_XS / MXFP4 order).
inline void lookup_nibbles(const uint8_t* qs, const int8_t* table, int8_t* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = table[qs[j] & 0xf];
    q[j + 16] = table[qs[j] >> 4];
  }
}

// One canonical block . one activation block -> float: integer sums, then one float scaling per
// block (per term), as ggml's scalar vec_dot functions do.
inline float dot(const Unpacked32& u, const ActQ8A& x) {
  int isum = 0;
  for (int j = 0; j < 32; ++j) isum += u.q[j] * x.qs[j];
  return u.d * x.d * static_cast<float>(isum) + u.m * x.s;
}

inline float dot(const UnpackedK& u, const ActQ8K& x) {
  int isum = 0;
  int msum = 0;
  for (int g = 0; g < 16; ++g) {
    int gsum = 0;
    for (int j = 16 * g; j < 16 * g + 16; ++j) gsum += u.q[j] * x.qs[j];
    isum += u.sc[g] * gsum;
    msum += u.mn[g] * x.bsums[g];
  }
  return u.d * x.d * static_cast<float>(isum) - u.dm * x.d * static_cast<float>(msum);
}

// W row of `Block`s (cols,) . x row of `Act` blocks -> float; `Unpack` decodes one block.
template <class Block, class Unpacked, class Act, void (*Unpack)(const Block&, Unpacked&)>
float row_dot(const void* w, const void* x, int64_t cols) {
  constexpr int64_t kBlock = sizeof(Unpacked::q);
  const auto* wb = static_cast<const Block*>(w);
  const auto* xb = static_cast<const Act*>(x);
  float sum = 0.0f;
  Unpacked u;
  for (int64_t i = 0; i < cols / kBlock; ++i) {
    Unpack(wb[i], u);
    sum += dot(u, xb[i]);
  }
  return sum;
}

// W row (cols,) -> y (cols,) for types without mins (m = mn = 0): y = (d * sc) * q, which is
// bit for bit ggml's dequantization of the signed types (their scale factors are folded into d
// by powers of two, and those scale exactly).
template <class Block, void (*Unpack)(const Block&, UnpackedK&)>
void row_dequant(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const Block*>(row);
  UnpackedK u;
  for (int64_t i = 0; i < cols / kQKK; ++i, y += kQKK) {
    Unpack(b[i], u);
    for (int e = 0; e < kQKK; ++e) y[e] = u.d * static_cast<float>(u.sc[e / 16]) * static_cast<float>(u.q[e]);
  }
}

}  // namespace ref

}  // namespace engine::kernels
