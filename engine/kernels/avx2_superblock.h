// The AVX2 kernel shared by the 256-element super-block types against Q8K activations
// (avx2_qk.cpp: Q2_K..Q6_K, IQ4_XS; avx2_iq.cpp: the lattice and ternary types). Include ONLY
// from files compiled with -mavx2 -mfma -mf16c (see avx2_common.h).
//
// An unpacker U holds one decoded super-block: U(block) decodes the scales, q(k) returns the
// 32 quants of chunk k (elements 32k..32k+31), sc(k) their int16 scales (one per 16 elements:
// the low 8 lanes for elements 0..15, the high 8 for 16..31), `mins` the 16 int16 min/offset
// multipliers of the bsums, d and dm the f32 factors (see unpacked.h). kSigned: q is signed
// int8 (|q| <= 127), else unsigned (< 128); kMins: whether the bsums term applies. An unpacker
// with signs(k) (and no kSigned) returns unsigned magnitudes from q(k) and the chunk's +-1 byte
// multipliers from signs(k); they are applied to the activations (one vpsignb per row, where
// signed q needs two).
#pragma once

#include "engine/kernels/avx2_common.h"

namespace engine::kernels::avx2 {
namespace {

// W row r (cols,) . X rows [j, j+RX) (cols,) -> out (RX,) at (j, r). RW is 1: a decoded
// super-block with its activation accumulators already fills the 16 ymm registers.
template <class U>
struct QK {
  static constexpr bool kSignVec = requires(const U& u) { u.signs(0); };
  template <int RW, int RX>
  struct Kernel {
    static_assert(RW == 1);
    static void run(const TileArgs& a, int64_t r, int64_t j) {
      const int64_t nb = a.cols / kQKK;
      const uint8_t* w = a.w + static_cast<size_t>(r) * a.w_stride;
      const ActQ8K* x[RX];
      for (int k = 0; k < RX; ++k) {
        x[k] = reinterpret_cast<const ActQ8K*>(a.x + static_cast<size_t>(j + k) * a.x_stride);
      }
      __m256 acc[RX];
      for (int k = 0; k < RX; ++k) acc[k] = _mm256_setzero_ps();
      for (int64_t b = 0; b < nb; ++b) {
        prefetch(w + a.w_stride + b * U::kBytes, U::kBytes);  // the next row (see prefetch())
        const U u(w + b * U::kBytes);
        __m256i isum[RX];
        for (int k = 0; k < RX; ++k) isum[k] = _mm256_setzero_si256();
#pragma GCC unroll 8
        for (int c = 0; c < 8; ++c) {
          const __m256i q = u.q(c);
          const __m256i sc = u.sc(c);
          __m256i s = _mm256_setzero_si256();
          if constexpr (kSignVec) s = u.signs(c);
          for (int k = 0; k < RX; ++k) {
            const __m256i xv = loadu(x[k][b].qs + 32 * c);
            __m256i p;
            if constexpr (kSignVec) {
              p = mul_u8s8(q, _mm256_sign_epi8(xv, s));
            } else {
              p = mul_q8<U::kSigned>(q, xv);
            }
            isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(p, sc));
            if constexpr (RX > 1) pin(isum[k]);
          }
        }
        for (int k = 0; k < RX; ++k) {
          const ActQ8K& xb = x[k][b];
          acc[k] = _mm256_fmadd_ps(_mm256_set1_ps(u.d * xb.d), _mm256_cvtepi32_ps(isum[k]), acc[k]);
          if constexpr (U::kMins) {
            const __m256i ms = _mm256_madd_epi16(u.mins, loadu(xb.bsums));
            acc[k] = _mm256_fnmadd_ps(_mm256_set1_ps(u.dm * xb.d), _mm256_cvtepi32_ps(ms), acc[k]);
          }
        }
      }
      for (int k = 0; k < RX; ++k) a.out[(j + k) * a.ldo + r] = hsum(acc[k]);
    }
  };
  static void tile(const TileArgs& a) { run_tile<Kernel, 1, 1>(a); }
};

}  // namespace
}  // namespace engine::kernels::avx2
