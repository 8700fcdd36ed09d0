// Helpers shared by the avx2_*.cpp kernels. Include ONLY from files compiled with
// -mavx2 -mfma -mf16c: everything here is in an anonymous namespace so no AVX2 code can leak
// into the portable files through a merged inline definition.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avx2 {
namespace {

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float fp16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

// Asks for the cache lines of [p, p + bytes) ahead of use. Weight rows are read in short
// streams (a tile's rows, one after another) that train the hardware prefetcher too late;
// prefetching the next row(s) while working on these measurably raises GEMV bandwidth.
// Prefetches never fault, so running past the matrix end at the last rows is harmless.
inline void prefetch(const uint8_t* p, int bytes) {
  for (int off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
}

// The same into L2 only: for weight streams read once per token (decode), a longer lead than L1
// prefetches allow without filling L1's miss buffers (Zen 4, n = 1: Q6_K 8 -> 20 GB/s per core).
inline void prefetch_l2(const uint8_t* p, int bytes) {
  for (int off = 0; off < bytes; off += 64) _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T1);
}

// e^x for x already clamped to [-87, 88] (a normal result), within about 1-2 ulp of expf:
// Cephes' polynomial after x = n ln2 + r (n rounded to nearest), 2^n built in the exponent bits.
// The callers clamp and handle what lies outside (exp_nonpos in flash_tiles.inc, exp8 in
// avx2_act.cpp).
inline __m256 exp_clamped(__m256 x) {
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);  // -126..127
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);  // x - n ln2, in two parts
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  const __m256 y = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(y, _mm256_castsi256_ps(e));
}

inline __m256i loadu(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
inline __m128i loadu128(const void* p) { return _mm_loadu_si128(static_cast<const __m128i*>(p)); }

// 16 bytes -> 32 nibbles: low nibbles in the low lane, high nibbles in the high lane.
inline __m256i nibbles(__m128i v) {
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

// 32 bits -> 32 bytes: byte e is 0xff where bit e of `bits` is set, else 0.
inline __m256i bit_mask(uint32_t bits) {
  const __m256i spread = _mm256_shuffle_epi8(  // byte e holds byte e / 8 of bits
      _mm256_set1_epi32(static_cast<int>(bits)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i select = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  return _mm256_cmpeq_epi8(_mm256_and_si256(spread, select), select);
}

// An empty asm that makes `v` live in a register at this point: GCC may no longer re-associate
// the adds around it. Integer sums over several activation rows otherwise become trees whose
// partial sums spill to the stack (Q4_0 GEMM, 4 rows: 56 -> 74 GMAC/s pinned, Zen 3).
inline void pin(__m256i& v) { asm("" : "+x"(v)); }

// 16 int8 sub-block scales (one per 16 elements) -> int16 lanes ordered for pair_scale():
// the even scales in the low 128 bits, the odd ones in the high.
inline __m256i pair_scales(__m128i s) {
  const __m128i even_odd = _mm_setr_epi8(0, 2, 4, 6, 8, 10, 12, 14, 1, 3, 5, 7, 9, 11, 13, 15);
  return _mm256_cvtepi8_epi16(_mm_shuffle_epi8(s, even_odd));
}

// The scales of chunk k (elements 32k..32k+31) from pair_scales(): scale 2k in the low 128 bits,
// 2k + 1 in the high; one shuffle, where building the pair from two scalars takes five.
inline __m256i pair_scale(__m256i pairs, int k) {
  return _mm256_shuffle_epi8(pairs, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * k)));
}

// Pairwise products summed to int16: u (unsigned bytes) * s (signed bytes).
inline __m256i mul_u8s8(__m256i u, __m256i s) { return _mm256_maddubs_epi16(u, s); }
// Same for two signed operands (|q| <= 128 and |x| <= 127 keep the int16 sums exact).
inline __m256i mul_s8s8(__m256i q, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q));
}

template <bool Signed>
inline __m256i mul_q8(__m256i q, __m256i x) {
  if constexpr (Signed) {
    return mul_s8s8(q, x);
  } else {
    return mul_u8s8(q, x);
  }
}

// Runs Kernel<RW, RX>::run(a, r, j) over the whole tile: activation rows in groups of RX
// (4, then a 1..3 tail), weight rows in groups of RW (then single rows).
template <template <int, int> class Kernel, int RW4, int RW1>
void run_tile(const TileArgs& a) {
  auto rows = [&a](auto rw_tag, auto rx_tag, int64_t j) {
    constexpr int RW = decltype(rw_tag)::value;
    constexpr int RX = decltype(rx_tag)::value;
    int64_t r = 0;
    for (; r + RW <= a.rows; r += RW) Kernel<RW, RX>::run(a, r, j);
    for (; r < a.rows; ++r) Kernel<1, RX>::run(a, r, j);
  };
  using I1 = std::integral_constant<int, 1>;
  using I2 = std::integral_constant<int, 2>;
  using I3 = std::integral_constant<int, 3>;
  using I4 = std::integral_constant<int, 4>;
  using W4 = std::integral_constant<int, RW4>;
  using W1 = std::integral_constant<int, RW1>;
  int64_t j = 0;
  for (; j + 4 <= a.n; j += 4) rows(W4{}, I4{}, j);
  switch (a.n - j) {
    case 3: rows(W4{}, I3{}, j); break;
    case 2: rows(W4{}, I2{}, j); break;
    case 1: rows(W1{}, I1{}, j); break;
    default: break;
  }
}

}  // namespace
}  // namespace engine::kernels::avx2
