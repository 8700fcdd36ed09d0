// AVX2 kernels over packed 8-row groups (layout in packing.h) for Q4_0, IQ4_NL and Q8_0 weights
// against Q8A activations, and Q4_K against Q8K.
//
// Per block of a group: one vcvtph2ps gives the 8 row scales; per 4-element chunk, one 32-byte
// load gives those 4 quants of all 8 rows, and for every activation row a broadcast of its 4
// matching bytes and one maddubs multiply them, the 4 products of each row landing in that
// row's 32-bit lane. Nothing is reduced horizontally: the lanes are the rows.
#include "engine/kernels/avx2.h"
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packing.h"

namespace engine::kernels::avx2 {

namespace {

// 4 activation bytes, broadcast to every 32-bit lane.
inline __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// Q4_0: unsigned nibbles 0..15 with the -8 offset folded into the activation sum. A maddubs
// lane is at most 2 * 15 * 127 = 3810, so the 8 chunks of a block add up in int16 (<= 30480).
struct PQ4_0 {
  static constexpr int kBlockBytes = 18;
  static constexpr float kOffset = -8.0f;
  static constexpr int kRX = 4;  // measured best (4 > 6 > 8 at n = 64, Zen 3)
  // Block quants (8 rows) . X rows -> isum[k] (8,) int32, row i in lane i.
  template <int RX>
  static void dot(const uint8_t* qs, const int8_t* const* xs, __m256i* isum) {
    const __m256i m4 = _mm256_set1_epi8(0x0f);
    __m256i s16[RX];
    for (int k = 0; k < RX; ++k) s16[k] = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      const __m256i v = loadu(qs + 32 * c);
      const __m256i lo = _mm256_and_si256(v, m4);                         // elements 4c..4c+3
      const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);  // 16+4c..16+4c+3
      for (int k = 0; k < RX; ++k) {
        s16[k] = _mm256_add_epi16(s16[k], _mm256_maddubs_epi16(lo, bcast4(xs[k] + 4 * c)));
        s16[k] = _mm256_add_epi16(s16[k], _mm256_maddubs_epi16(hi, bcast4(xs[k] + 16 + 4 * c)));
      }
    }
    for (int k = 0; k < RX; ++k) isum[k] = _mm256_madd_epi16(s16[k], _mm256_set1_epi16(1));
  }
};

// Signed quants (|q| <= 128): products summed per chunk to int32 (two int16 lanes could overflow).
template <class Quants>
struct PSigned {
  static constexpr float kOffset = 0.0f;
  static constexpr int kRX = 6;  // measured best: 53 vs 44 GMAC/s with 4 (Q8_0, n = 64, Zen 3)
  template <int RX>
  static void dot(const uint8_t* qs, const int8_t* const* xs, __m256i* isum) {
    for (int k = 0; k < RX; ++k) isum[k] = _mm256_setzero_si256();
    for (int c = 0; c < Quants::kChunks; ++c) {
      const __m256i q = Quants::chunk(qs, c);
      const __m256i qa = _mm256_sign_epi8(q, q);
      for (int k = 0; k < RX; ++k) {
        const __m256i p = _mm256_maddubs_epi16(qa, _mm256_sign_epi8(bcast4(xs[k] + Quants::x_offset(c)), q));
        isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(p, _mm256_set1_epi16(1)));
      }
    }
  }
};

struct Q8_0Quants {
  static constexpr int kChunks = 8;
  static __m256i chunk(const uint8_t* qs, int c) { return loadu(qs + 32 * c); }
  static int x_offset(int c) { return 4 * c; }
};

// IQ4_NL: nibbles index the non-linear levels; chunk c < 4 are the low nibbles, 4.. the high.
struct IQ4_NLQuants {
  static constexpr int kChunks = 8;
  static __m256i chunk(const uint8_t* qs, int c) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
    const __m256i v = loadu(qs + 32 * (c % 4));
    const __m256i n = _mm256_and_si256(c < 4 ? v : _mm256_srli_epi16(v, 4), _mm256_set1_epi8(0x0f));
    return _mm256_shuffle_epi8(table, n);
  }
  static int x_offset(int c) { return c < 4 ? 4 * c : 16 + 4 * (c - 4); }
};

struct PQ8_0 : PSigned<Q8_0Quants> {
  static constexpr int kBlockBytes = 34;
};
struct PIQ4_NL : PSigned<IQ4_NLQuants> {
  static constexpr int kBlockBytes = 18;
};

// Packed group g (8 rows, cols) . X rows [j, j+RX) (cols,) -> out (RX, 8) at (j, 8g)
template <class P, int RX>
void group_kernel(const TileArgs& a, int64_t g, int64_t j) {
  constexpr size_t kPackedBlock = kPackRows * P::kBlockBytes;
  const int64_t nb = a.cols / kQK;
  const uint8_t* w = a.w + static_cast<size_t>(g) * a.w_stride;
  const BlockQ8A* x[RX];
  for (int k = 0; k < RX; ++k) x[k] = reinterpret_cast<const BlockQ8A*>(a.x + static_cast<size_t>(j + k) * a.x_stride);
  __m256 acc[RX];
  for (int k = 0; k < RX; ++k) acc[k] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* blk = w + b * kPackedBlock;
    prefetch(blk + 4 * kPackedBlock, static_cast<int>(kPackedBlock));  // a few blocks ahead
    const __m256 dw = _mm256_cvtph_ps(loadu128(blk));                  // (8,) row scales
    const int8_t* xs[RX];
    for (int k = 0; k < RX; ++k) xs[k] = x[k][b].qs;
    __m256i isum[RX];
    P::template dot<RX>(blk + 2 * kPackRows, xs, isum);
    for (int k = 0; k < RX; ++k) {
      // d_w * (d_x * sum(q * x) + offset * d_x * sum(x)) for 8 rows at once
      const __m256 t = _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum[k]), _mm256_set1_ps(x[k][b].d),
                                       _mm256_set1_ps(P::kOffset * x[k][b].s));
      acc[k] = _mm256_fmadd_ps(dw, t, acc[k]);
    }
  }
  for (int k = 0; k < RX; ++k) _mm256_storeu_ps(a.out + (j + k) * a.ldo + kPackRows * g, acc[k]);
}

// One group through P's own kernel when it has one (K-quants), else the 32-element one.
template <class P, int RX>
void run_group(const TileArgs& a, int64_t g, int64_t j);

// Q4_K super-blocks of a packed group (8 rows, 256 elements each) . Q8K rows -> out (RX, 8).
// Scales and mins of the 8 rows are decoded together from three 4-byte runs (lane r = row r's
// scale word); per sub-block, its 8 chunks of 4 elements add up in int16 (8 * 3810 < 2^15) and
// one madd applies the sub-block scales, the mins come from the activation bsums.
struct PQ4_K {
  static constexpr int kBlockBytes = 144;
  static constexpr int kRX = 4;  // measured: 2 -> 34, 3 -> 56, 4 -> 57..65, 6 -> 61 GMAC/s (n = 64, Zen 3)

  // Byte `idx` (0..3) of each 32-bit lane, zero-extended into both int16 halves (a madd operand).
  static __m256i byte_pair(__m256i v, int idx) {
    const __m256i t = _mm256_and_si256(_mm256_srl_epi32(v, _mm_cvtsi32_si128(8 * idx)), _mm256_set1_epi32(0xff));
    return _mm256_or_si256(t, _mm256_slli_epi32(t, 16));
  }

  template <int RX>
  static void run(const TileArgs& a, int64_t g, int64_t j) {
    constexpr size_t kPackedBlock = kPackRows * kBlockBytes;
    const int64_t nb = a.cols / kQKK;
    const uint8_t* w = a.w + static_cast<size_t>(g) * a.w_stride;
    const BlockQ8K* x[RX];
    for (int k = 0; k < RX; ++k) x[k] = reinterpret_cast<const BlockQ8K*>(a.x + static_cast<size_t>(j + k) * a.x_stride);
    const __m256i m4 = _mm256_set1_epi8(0x0f), m6 = _mm256_set1_epi8(0x3f), m2 = _mm256_set1_epi8(0x03);
    __m256 acc[RX];
    for (int k = 0; k < RX; ++k) acc[k] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; ++b) {
      const uint8_t* blk = w + b * kPackedBlock;
      prefetch(blk + 2 * kPackedBlock, static_cast<int>(kPackedBlock));
      const __m256 d = _mm256_cvtph_ps(loadu128(blk)), dmin = _mm256_cvtph_ps(loadu128(blk + 16));
      const __m256i u0 = loadu(blk + 32), u1 = loadu(blk + 64), u2 = loadu(blk + 96);
      // Lane r: sub-block scales 0..3 / 4..7 and mins 0..3 / 4..7 of row r, a byte each.
      const __m256i sc[2] = {_mm256_and_si256(u0, m6),
                             _mm256_or_si256(_mm256_and_si256(u2, m4),
                                             _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u0, 6), m2), 4))};
      const __m256i mn[2] = {_mm256_and_si256(u1, m6),
                             _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u2, 4), m4),
                                             _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(u1, 6), m2), 4))};
      const uint8_t* qs = blk + 128;
      __m256i isum[RX], msum[RX];
      for (int k = 0; k < RX; ++k) isum[k] = msum[k] = _mm256_setzero_si256();
      for (int s = 0; s < 8; ++s) {  // sub-block s: runs 8 * (s / 2) + c, low nibbles when s is even
        __m256i s16[RX];
        for (int k = 0; k < RX; ++k) s16[k] = _mm256_setzero_si256();
        for (int c = 0; c < 8; ++c) {
          const __m256i v = loadu(qs + 32 * (8 * (s / 2) + c));
          const __m256i q = _mm256_and_si256(s % 2 ? _mm256_srli_epi16(v, 4) : v, m4);
          for (int k = 0; k < RX; ++k) {
            s16[k] = _mm256_add_epi16(s16[k], _mm256_maddubs_epi16(q, bcast4(x[k][b].qs + 32 * s + 4 * c)));
          }
        }
        const __m256i scp = byte_pair(sc[s / 4], s % 4);
        for (int k = 0; k < RX; ++k) isum[k] = _mm256_add_epi32(isum[k], _mm256_madd_epi16(s16[k], scp));
      }
      for (int s = 0; s < 8; ++s) {
        const __m256i mnp = byte_pair(mn[s / 4], s % 4);
        for (int k = 0; k < RX; ++k) {
          // bsums[2s], bsums[2s+1] (the sub-block's two groups of 16) as one int16 pair
          const int8_t* bs = reinterpret_cast<const int8_t*>(x[k][b].bsums) + 4 * s;
          msum[k] = _mm256_add_epi32(msum[k], _mm256_madd_epi16(mnp, bcast4(bs)));
        }
      }
      for (int k = 0; k < RX; ++k) {
        const __m256 xd = _mm256_set1_ps(x[k][b].d);
        acc[k] = _mm256_fmadd_ps(_mm256_mul_ps(d, xd), _mm256_cvtepi32_ps(isum[k]), acc[k]);
        acc[k] = _mm256_fnmadd_ps(_mm256_mul_ps(dmin, xd), _mm256_cvtepi32_ps(msum[k]), acc[k]);
      }
    }
    for (int k = 0; k < RX; ++k) _mm256_storeu_ps(a.out + (j + k) * a.ldo + kPackRows * g, acc[k]);
  }
};

template <class P, int RX>
void run_group(const TileArgs& a, int64_t g, int64_t j) {
  if constexpr (requires { P::template run<RX>(a, g, j); }) {
    P::template run<RX>(a, g, j);
  } else {
    group_kernel<P, RX>(a, g, j);
  }
}

// The last n % RX activation rows, through group_kernel<P, n % RX>.
template <class P, int RX>
void tail_kernel(const TileArgs& a, int64_t g, int64_t j, int64_t left) {
  if constexpr (RX > 1) {
    if (left == RX - 1) return run_group<P, RX - 1>(a, g, j);
    tail_kernel<P, RX - 1>(a, g, j, left);
  }
}

// W (rows, cols) in packed groups . X (n, cols) -> out (n, rows); rows is a multiple of 8 and
// a.w_stride the bytes of one group.
template <class P>
void packed_tile(const TileArgs& a) {
  constexpr int RX = P::kRX;  // activation rows per pass over a group's blocks
  const int64_t groups = a.rows / kPackRows;
  int64_t j = 0;
  for (; j + RX <= a.n; j += RX) {
    for (int64_t g = 0; g < groups; ++g) run_group<P, RX>(a, g, j);
  }
  if (j < a.n) {
    for (int64_t g = 0; g < groups; ++g) tail_kernel<P, RX>(a, g, j, a.n - j);
  }
}

}  // namespace

TileFn packed_tile_for(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::Q4_0: return packed_tile<PQ4_0>;
    case gguf::TensorType::Q8_0: return packed_tile<PQ8_0>;
    case gguf::TensorType::IQ4_NL: return packed_tile<PIQ4_NL>;
    case gguf::TensorType::Q4_K: return packed_tile<PQ4_K>;
    default: return nullptr;
  }
}

}  // namespace engine::kernels::avx2
