// Canonical unpacked forms of one weight block, shared by the reference and SIMD dot kernels.
//
// 32-element types:  W . x = d * x.d * sum(q * x.qs) + m * x.s          (x: ActQ8A)
// 256-element types: W . x = d * x.d * sum_g sc[g] * sum_{i in g}(q * x.qs)
//                            - dm * x.d * sum_g mn[g] * x.bsums[g]       (x: ActQ8K, g = 16 groups of 16)
// Every q fits in int8: unsigned-range types (Q4_0 0..15, Q6_K 0..63, ...) fold their zero
// offset into m / mn; signed types (Q8_0, IQ4_NL, IQ4_XS) keep the sign and have m = mn = 0.
#pragma once

#include <cstdint>

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

}  // namespace engine::kernels
