// AVX2 kernels for the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, IQ4_NL, MXFP4) against
// Q8A activations. Per block: unpack 32 quants to a ymm once, then for each activation row
// int8 dot (maddubs + madd), convert, and one fma with d_w * d_x; the zero-point / min term
// m_w * (d_x * sum x) is a scalar fma per block using the precomputed sum.
#include "engine/kernels/avx2.h"
#include "engine/kernels/avx2_common.h"

namespace engine::kernels::avx2 {

namespace {

// Unpackers: block -> 32 quants (ymm), scale d and offset coefficient m (see unpacked.h).
struct UQ4_0 {
  static constexpr int kBytes = sizeof(BlockQ4_0);
  static constexpr bool kSigned = false, kOffset = true;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = fp16(b);
    m = -8.0f * d;
    return nibbles(loadu128(b + 2));
  }
};

struct UQ4_1 {
  static constexpr int kBytes = sizeof(BlockQ4_1);
  static constexpr bool kSigned = false, kOffset = true;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = fp16(b);
    m = fp16(b + 2);
    return nibbles(loadu128(b + 4));
  }
};

// 32 bits -> 32 bytes, 0x10 where bit e of qh is set.
inline __m256i fifth_bits(const uint8_t* qh) {
  uint32_t bits;
  std::memcpy(&bits, qh, 4);
  return _mm256_and_si256(bit_mask(bits), _mm256_set1_epi8(0x10));
}

struct UQ5_0 {
  static constexpr int kBytes = sizeof(BlockQ5_0);
  static constexpr bool kSigned = false, kOffset = true;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = fp16(b);
    m = -16.0f * d;
    return _mm256_or_si256(nibbles(loadu128(b + 6)), fifth_bits(b + 2));
  }
};

struct UQ5_1 {
  static constexpr int kBytes = sizeof(BlockQ5_1);
  static constexpr bool kSigned = false, kOffset = true;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = fp16(b);
    m = fp16(b + 2);
    return _mm256_or_si256(nibbles(loadu128(b + 8)), fifth_bits(b + 4));
  }
};

struct UQ8_0 {
  static constexpr int kBytes = sizeof(BlockQ8_0);
  static constexpr bool kSigned = true, kOffset = false;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = fp16(b);
    m = 0.0f;
    return loadu(b + 2);
  }
};

// MXFP4's E8M0 exponent halved (the value table is doubled): 2^(e - 128) for every byte.
inline float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

// 16 bytes of 4-bit codes -> 32 int8 values from a 16-entry table (low nibbles first).
inline __m256i lookup16(__m128i table, const uint8_t* codes) {
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(table), nibbles(loadu128(codes)));
}

struct UMXFP4 {
  static constexpr int kBytes = sizeof(BlockMXFP4);
  static constexpr bool kSigned = true, kOffset = false;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = e8m0_half(b[0]);
    m = 0.0f;
    return lookup16(_mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12), b + 1);
  }
};

struct UIQ4_NL {
  static constexpr int kBytes = sizeof(BlockIQ4_NL);
  static constexpr bool kSigned = true, kOffset = false;
  static __m256i load(const uint8_t* b, float& d, float& m) {
    d = fp16(b);
    m = 0.0f;
    return lookup16(_mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113), b + 2);
  }
};

// W rows [r, r+RW) (cols,) . X rows [j, j+RX) (cols,) -> out (RX, RW) at (j, r)
template <class U>
struct Q32 {
  template <int RW, int RX>
  struct Kernel {
    static void run(const TileArgs& a, int64_t r, int64_t j) {
      const int64_t nb = a.cols / kQK;
      const uint8_t* w[RW];
      const ActQ8A* x[RX];
      for (int i = 0; i < RW; ++i) w[i] = a.w + static_cast<size_t>(r + i) * a.w_stride;
      for (int k = 0; k < RX; ++k) {
        x[k] = reinterpret_cast<const ActQ8A*>(a.x + static_cast<size_t>(j + k) * a.x_stride);
      }
      __m256 acc[RW][RX];
      float off[RW][RX];
      for (int i = 0; i < RW; ++i) {
        for (int k = 0; k < RX; ++k) {
          acc[i][k] = _mm256_setzero_ps();
          off[i][k] = 0.0f;
        }
      }
      for (int64_t b = 0; b < nb; ++b) {
        // The next group of RW rows, one group ahead (see prefetch()).
        for (int i = 0; i < RW; ++i) prefetch(w[i] + RW * a.w_stride + b * U::kBytes, 1);
        __m256i q[RW];
        float d[RW], m[RW];
        for (int i = 0; i < RW; ++i) q[i] = U::load(w[i] + b * U::kBytes, d[i], m[i]);
        for (int k = 0; k < RX; ++k) {
          const ActQ8A& xb = x[k][b];
          const __m256i xv = loadu(xb.qs);
          for (int i = 0; i < RW; ++i) {
            const __m256i p = _mm256_madd_epi16(mul_q8<U::kSigned>(q[i], xv), _mm256_set1_epi16(1));
            acc[i][k] = _mm256_fmadd_ps(_mm256_set1_ps(d[i] * xb.d), _mm256_cvtepi32_ps(p), acc[i][k]);
            if constexpr (U::kOffset) off[i][k] += m[i] * xb.s;
          }
        }
      }
      for (int k = 0; k < RX; ++k) {
        for (int i = 0; i < RW; ++i) a.out[(j + k) * a.ldo + r + i] = hsum(acc[i][k]) + off[i][k];
      }
    }
  };
  static void tile(const TileArgs& a) { run_tile<Kernel, 2, 4>(a); }
};

}  // namespace

void tile_q4_0(const TileArgs& a) { Q32<UQ4_0>::tile(a); }
void tile_q4_1(const TileArgs& a) { Q32<UQ4_1>::tile(a); }
void tile_q5_0(const TileArgs& a) { Q32<UQ5_0>::tile(a); }
void tile_q5_1(const TileArgs& a) { Q32<UQ5_1>::tile(a); }
void tile_q8_0(const TileArgs& a) { Q32<UQ8_0>::tile(a); }
void tile_iq4_nl(const TileArgs& a) { Q32<UIQ4_NL>::tile(a); }
void tile_mxfp4(const TileArgs& a) { Q32<UMXFP4>::tile(a); }

}  // namespace engine::kernels::avx2
