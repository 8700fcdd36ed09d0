// AVX2 kernels for the 256-element super-block types (Q2_K..Q6_K, IQ4_XS) against Q8K
// activations. Per super-block: decode scales/mins once, then for each of the 8 chunks of 32
// unpack the quants to a ymm and, for every activation row, maddubs (pairs -> int16), madd
// with the int16 sub-block scales (-> int32), accumulate; one fma per super-block applies
// d_w * d_x, and the mins / zero offsets come from the activation bsums (one madd).
#include "engine/kernels/avx2.h"
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/avx2_superblock.h"

namespace engine::kernels::avx2 {

namespace {

// The unpackers of avx2_superblock.h's QK kernel, one per type.

struct UQ2_K {
  static constexpr int kBytes = sizeof(BlockQ2_K);
  static constexpr bool kSigned = false, kMins = true;
  const uint8_t* qs;
  __m256i pairs;  // pair_scales()
  __m256i mins;
  float d, dm;
  explicit UQ2_K(const uint8_t* b) : qs(b + 16) {
    const __m128i s = loadu128(b);
    pairs = pair_scales(_mm_and_si128(s, _mm_set1_epi8(0x0f)));
    mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(s, 4), _mm_set1_epi8(0x0f)));
    d = fp16(b + 80);
    dm = fp16(b + 82);
  }
  __m256i q(int k) const {
    const __m256i v = loadu(qs + 32 * (k / 4));
    return _mm256_and_si256(_mm256_srli_epi16(v, 2 * (k % 4)), _mm256_set1_epi8(3));
  }
  __m256i sc(int k) const { return pair_scale(pairs, k); }
};

struct UQ3_K {
  static constexpr int kBytes = sizeof(BlockQ3_K);
  static constexpr bool kSigned = false, kMins = true;
  const uint8_t* qs;
  __m256i hmask;
  __m256i pairs;  // pair_scales()
  __m256i mins;
  float d, dm;
  explicit UQ3_K(const uint8_t* b) : qs(b + 32), hmask(loadu(b)) {
    int8_t scales[16];
    q3k_scales(b + 96, scales);
    mins = _mm256_slli_epi16(_mm256_cvtepi8_epi16(loadu128(scales)), 2);  // 4 * scale
    pairs = pair_scales(loadu128(scales));
    d = dm = fp16(b + 108);
  }
  __m256i q(int k) const {
    const __m256i lo = _mm256_and_si256(_mm256_srli_epi16(loadu(qs + 32 * (k / 4)), 2 * (k % 4)),
                                        _mm256_set1_epi8(3));
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(hmask, k), _mm256_set1_epi8(1));
    return _mm256_or_si256(lo, _mm256_slli_epi16(hi, 2));
  }
  __m256i sc(int k) const { return pair_scale(pairs, k); }
};

// Q4_K / Q5_K scales: 12 bytes -> 8 six-bit scales (bytes 0..7) and 8 mins (bytes 8..15).
inline void k4_unpack_scales(const uint8_t* s, uint8_t out[16]) {
  uint32_t u[4];
  std::memcpy(u, s, 12);
  const uint32_t m6 = 0x3f3f3f3f, m4 = 0x0f0f0f0f, m2 = 0x03030303;
  u[3] = ((u[2] >> 4) & m4) | (((u[1] >> 6) & m2) << 4);  // mins 4..7
  const uint32_t mins_lo = u[1] & m6;                       // mins 0..3
  u[1] = (u[2] & m4) | (((u[0] >> 6) & m2) << 4);           // scales 4..7
  u[2] = mins_lo;
  u[0] &= m6;                                               // scales 0..3
  std::memcpy(out, u, 16);
}

template <bool Five>
struct UQ45_K {
  static constexpr int kBytes = Five ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr bool kSigned = false, kMins = true;
  const uint8_t* qs;
  __m256i qh;
  uint8_t sm[16];  // scales 0..7, mins 8..15
  __m256i mins;
  float d, dm;
  explicit UQ45_K(const uint8_t* b) : qs(b + (Five ? 48 : 16)) {
    d = fp16(b);
    dm = fp16(b + 2);
    k4_unpack_scales(b + 4, sm);
    const __m128i m8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(sm + 8));
    mins = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(m8, m8));  // each min covers 2 groups of 16
    qh = Five ? loadu(b + 16) : _mm256_setzero_si256();
  }
  __m256i q(int k) const {
    const __m256i v = loadu(qs + 32 * (k / 2));
    const __m256i low = _mm256_and_si256(k % 2 ? _mm256_srli_epi16(v, 4) : v, _mm256_set1_epi8(0x0f));
    if constexpr (!Five) return low;
    const __m256i hi = _mm256_and_si256(_mm256_srli_epi16(qh, k), _mm256_set1_epi8(1));
    return _mm256_or_si256(low, _mm256_slli_epi16(hi, 4));
  }
  __m256i sc(int k) const { return _mm256_set1_epi16(sm[k]); }
};

struct UQ6_K {
  static constexpr int kBytes = sizeof(BlockQ6_K);
  static constexpr bool kSigned = false, kMins = true;
  const uint8_t* ql;
  const uint8_t* qh;
  __m256i pairs;  // pair_scales()
  __m256i mins;
  float d, dm;
  explicit UQ6_K(const uint8_t* b) : ql(b), qh(b + 128) {
    const __m128i scales = loadu128(b + 192);
    mins = _mm256_slli_epi16(_mm256_cvtepi8_epi16(scales), 5);  // 32 * scale
    pairs = pair_scales(scales);
    d = dm = fp16(b + 208);
  }
  // The 2 high bits of chunk k sit at bits 2s, 2s+1 of qh (s = k % 4); they are moved straight
  // to bits 4, 5 and masked once (no shift at all for s = 2).
  __m256i q(int k) const {
    const int h = k / 4, s = k % 4;
    const __m256i l = loadu(ql + 64 * h + 32 * (s & 1));
    const __m256i low = _mm256_and_si256(s >> 1 ? _mm256_srli_epi16(l, 4) : l, _mm256_set1_epi8(0x0f));
    const __m256i v = loadu(qh + 32 * h);
    const __m256i at4 = s < 2 ? _mm256_slli_epi16(v, 4 - 2 * s) : s == 2 ? v : _mm256_srli_epi16(v, 2);
    return _mm256_or_si256(low, _mm256_and_si256(at4, _mm256_set1_epi8(0x30)));
  }
  __m256i sc(int k) const { return pair_scale(pairs, k); }
};

struct UIQ4_XS {
  static constexpr int kBytes = sizeof(BlockIQ4_XS);
  static constexpr bool kSigned = true, kMins = false;
  const uint8_t* qs;
  int16_t ls[8];
  __m256i table;
  __m256i mins = _mm256_setzero_si256();
  float d, dm = 0.0f;
  explicit UIQ4_XS(const uint8_t* b) : qs(b + 8) {
    d = fp16(b);
    uint16_t sh;
    std::memcpy(&sh, b + 2, 2);
    for (int s = 0; s < 8; ++s) {
      ls[s] = static_cast<int16_t>((((b[4 + s / 2] >> (4 * (s % 2))) & 0xf) | (((sh >> (2 * s)) & 3) << 4)) - 32);
    }
    table = _mm256_broadcastsi128_si256(
        _mm_setr_epi8(-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113));
  }
  __m256i q(int k) const { return _mm256_shuffle_epi8(table, nibbles(loadu128(qs + 16 * k))); }
  __m256i sc(int k) const { return _mm256_set1_epi16(ls[k]); }
};

}  // namespace

void tile_q2_k(const TileArgs& a) { QK<UQ2_K>::tile(a); }
void tile_q3_k(const TileArgs& a) { QK<UQ3_K>::tile(a); }
void tile_q4_k(const TileArgs& a) { QK<UQ45_K<false>>::tile(a); }
void tile_q5_k(const TileArgs& a) { QK<UQ45_K<true>>::tile(a); }
void tile_q6_k(const TileArgs& a) { QK<UQ6_K>::tile(a); }
void tile_iq4_xs(const TileArgs& a) { QK<UIQ4_XS>::tile(a); }

}  // namespace engine::kernels::avx2
