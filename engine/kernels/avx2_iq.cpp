// AVX2 tiles of the lattice quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and the
// ternary TQ1_0 / TQ2_0 against Q8K activations: unpackers for avx2_superblock.h's QK kernel.
// Each chunk of 32 elements is decoded once per super-block and dotted with every activation row
// by the K-quants' int8 products. IQ2 / IQ3: grid magnitudes fetched by index (scalar loads for
// 8-byte entries, a gather for 4-byte ones; both measured against the alternative) and the sign
// bits as +-1 bytes that vpsignb applies to the activations. IQ1 and TQ: signed int8 values.
// The scalar spec is ref_iq.cpp; the canonical values (d with ggml's power-of-two factors folded
// in, IQ1 in eighths) are the same.
#include "engine/kernels/avx2.h"
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/avx2_superblock.h"
#include "engine/kernels/iq_grids.h"

namespace engine::kernels::avx2 {

namespace {

inline uint16_t u16at(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}

inline uint32_t u32at(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline uint64_t u64at(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// The sign table as byte multipliers: entry i has byte j = -1 where bit j of kIqSigns[i] is set,
// else +1 (what vpsignb applies to the activations).
constexpr std::array<uint64_t, 128> kSignBytes = [] {
  std::array<uint64_t, 128> t{};
  for (int i = 0; i < 128; ++i) {
    for (int j = 0; j < 8; ++j) t[i] |= static_cast<uint64_t>((kIqSigns[i] >> j) & 1 ? 0xff : 0x01) << (8 * j);
  }
  return t;
}();

// 32 stored sign bits (bit e set: element e negative) -> +-1 byte multipliers.
inline __m256i sign_bytes(uint32_t bits) { return _mm256_or_si256(bit_mask(bits), _mm256_set1_epi8(1)); }

// Four 8-byte entries of a table (elements 0..31 of a chunk): grid magnitudes or sign bytes.
inline __m256i grid8(const uint64_t* grid, int i0, int i1, int i2, int i3) {
  return _mm256_setr_epi64x(static_cast<int64_t>(grid[i0]), static_cast<int64_t>(grid[i1]),
                            static_cast<int64_t>(grid[i2]), static_cast<int64_t>(grid[i3]));
}

// The sign bytes of four groups of 8 from 4 x 7 stored bits (bits 0, 7, 14, 21 of aux).
inline __m256i signs_7bit(uint32_t aux) {
  return grid8(kSignBytes.data(), aux & 127, (aux >> 7) & 127, (aux >> 14) & 127, (aux >> 21) & 127);
}

// Eight 4-byte entries of a uint32 grid (elements 0..31 of a chunk) at the 8 int32 indices.
inline __m256i grid4(const uint32_t* grid, __m256i idx) {
  return _mm256_i32gather_epi32(reinterpret_cast<const int*>(grid), idx, 4);
}

// 8 index bytes -> 8 int32 lanes.
inline __m256i bytes8(const uint8_t* p) { return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }

// Scales: one per 32-element chunk (ChunkScales), or one per 16 elements (PairScales: int16
// lanes in pair_scales() order, the even groups' scales in the low 128 bits, the odd in the high).
struct ChunkScales {
  int16_t ls[8];
  __m256i sc(int k) const { return _mm256_set1_epi16(ls[k]); }
};
struct PairScales {
  __m256i pairs;
  __m256i sc(int k) const { return pair_scale(pairs, k); }
};

// 8 bytes of 4-bit fields (group 2i in the low nibble of byte i, 2i + 1 in the high) -> the 16
// scales 2 * f + 1, in pair order.
inline PairScales nibble_scales(const uint8_t* p) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p));
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m128i f = _mm_unpacklo_epi64(_mm_and_si128(v, m), _mm_and_si128(_mm_srli_epi16(v, 4), m));
  const __m256i f16 = _mm256_cvtepu8_epi16(f);
  return {_mm256_add_epi16(_mm256_add_epi16(f16, f16), _mm256_set1_epi16(1))};
}

struct UIQ2_XXS : ChunkScales {
  static constexpr int kBytes = sizeof(BlockIQ2_XXS);
  static constexpr bool kMins = false;  // q(k): unsigned magnitudes, signs(k): their signs
  const uint8_t* qs;
  float d;
  explicit UIQ2_XXS(const uint8_t* b) : qs(b + 2), d(fp16(b) * 0.125f) {
    for (int k = 0; k < 8; ++k) ls[k] = static_cast<int16_t>(2 * (u32at(qs + 8 * k + 4) >> 28) + 1);
  }
  __m256i q(int k) const {
    const uint8_t* g = qs + 8 * k;
    return grid8(kIq2xxsGrid.data(), g[0], g[1], g[2], g[3]);
  }
  __m256i signs(int k) const { return signs_7bit(u32at(qs + 8 * k + 4)); }
};

struct UIQ2_XS : PairScales {
  static constexpr int kBytes = sizeof(BlockIQ2_XS);
  static constexpr bool kMins = false;  // q(k): unsigned magnitudes, signs(k): their signs
  const uint8_t* qs;
  float d;
  explicit UIQ2_XS(const uint8_t* b) : PairScales(nibble_scales(b + 66)), qs(b + 2), d(fp16(b) * 0.125f) {}
  // Group l's 16-bit word (bits 16l.. of the chunk's 64): 9-bit index | 7 sign bits << 9.
  __m256i q(int k) const {
    const uint64_t v = u64at(qs + 8 * k);
    return grid8(kIq2xsGrid.data(), v & 511, (v >> 16) & 511, (v >> 32) & 511, (v >> 48) & 511);
  }
  __m256i signs(int k) const {
    const uint64_t v = u64at(qs + 8 * k);
    return grid8(kSignBytes.data(), (v >> 9) & 127, (v >> 25) & 127, (v >> 41) & 127, v >> 57);
  }
};

struct UIQ2_S : PairScales {
  static constexpr int kBytes = sizeof(BlockIQ2_S);
  static constexpr bool kMins = false;  // q(k): unsigned magnitudes, signs(k): their signs
  const uint8_t* qs;
  const uint8_t* qh;
  float d;
  explicit UIQ2_S(const uint8_t* b) : PairScales(nibble_scales(b + 74)), qs(b + 2), qh(b + 66), d(fp16(b) * 0.125f) {}
  __m256i q(int k) const {
    const uint8_t* g = qs + 4 * k;
    const int h = qh[k];
    return grid8(kIq2sGrid.data(), g[0] | ((h & 3) << 8), g[1] | ((h & 0xc) << 6), g[2] | ((h & 0x30) << 4),
                 g[3] | ((h & 0xc0) << 2));
  }
  __m256i signs(int k) const { return sign_bytes(u32at(qs + 32 + 4 * k)); }
};

struct UIQ3_XXS : ChunkScales {
  static constexpr int kBytes = sizeof(BlockIQ3_XXS);
  static constexpr bool kMins = false;  // q(k): unsigned magnitudes, signs(k): their signs
  const uint8_t* qs;
  float d;
  explicit UIQ3_XXS(const uint8_t* b) : qs(b + 2), d(fp16(b) * 0.25f) {
    for (int k = 0; k < 8; ++k) ls[k] = static_cast<int16_t>(2 * (u32at(qs + 64 + 4 * k) >> 28) + 1);
  }
  __m256i q(int k) const { return grid4(kIq3xxsGrid.data(), bytes8(qs + 8 * k)); }
  __m256i signs(int k) const { return signs_7bit(u32at(qs + 64 + 4 * k)); }
};

struct UIQ3_S : ChunkScales {
  static constexpr int kBytes = sizeof(BlockIQ3_S);
  static constexpr bool kMins = false;  // q(k): unsigned magnitudes, signs(k): their signs
  const uint8_t* qs;
  const uint8_t* qh;
  const uint8_t* sign_bits;
  float d;
  explicit UIQ3_S(const uint8_t* b) : qs(b + 2), qh(b + 66), sign_bits(b + 74), d(fp16(b)) {
    for (int k = 0; k < 8; ++k) ls[k] = static_cast<int16_t>(2 * ((b[106 + k / 2] >> (4 * (k % 2))) & 0xf) + 1);
  }
  // Entry t's 9th index bit is bit t of qh[k].
  __m256i q(int k) const {
    const __m256i high = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(qh[k]), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)),
                                          _mm256_set1_epi32(1));
    return grid4(kIq3sGrid.data(), _mm256_or_si256(bytes8(qs + 8 * k), _mm256_slli_epi32(high, 8)));
  }
  __m256i signs(int k) const { return sign_bytes(u32at(sign_bits + 4 * k)); }
};

// IQ1: grid -1/0/+1 and delta +-1/8, in eighths: q = 8 * grid + delta8 (delta8 = +-1 per byte).
inline __m256i iq1_eighths(__m256i grid, __m256i delta8) {
  return _mm256_add_epi8(_mm256_sign_epi8(_mm256_set1_epi8(8), grid), delta8);
}

struct UIQ1_S : ChunkScales {
  static constexpr int kBytes = sizeof(BlockIQ1_S);
  static constexpr bool kSigned = true, kMins = false;
  const uint8_t* qs;
  const uint8_t* qh;
  float d;
  explicit UIQ1_S(const uint8_t* b) : qs(b + 2), qh(b + 34), d(fp16(b) * 0.125f) {
    for (int k = 0; k < 8; ++k) ls[k] = static_cast<int16_t>(2 * ((u16at(qh + 2 * k) >> 12) & 7) + 1);
  }
  __m256i q(int k) const {
    const int h = u16at(qh + 2 * k);
    const uint8_t* g = qs + 4 * k;
    const __m256i grid = grid8(kIq1sGrid.data(), g[0] | ((h & 7) << 8), g[1] | ((h & 0x38) << 5),
                               g[2] | ((h & 0x1c0) << 2), g[3] | ((h & 0xe00) >> 1));
    return iq1_eighths(grid, _mm256_set1_epi8(h & 0x8000 ? -1 : 1));
  }
};

struct UIQ1_M : PairScales {
  static constexpr int kBytes = sizeof(BlockIQ1_M);
  static constexpr bool kSigned = true, kMins = false;
  const uint8_t* qs;
  const uint8_t* qh;
  float d;
  explicit UIQ1_M(const uint8_t* b) : PairScales(scales(b + 48)), qs(b), qh(b + 32), d(scale_d(b + 48)) {}
  // Three bits per 16 elements: group i's scale field is bits 3(i%4).. of word i/4. Each lane
  // gets its word and moves its field to bits 9..11 by a multiply (a per-lane left shift).
  static PairScales scales(const uint8_t* p) {
    const __m128i words = _mm_shuffle_epi8(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)),
                                           _mm_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7));
    const __m256i w = _mm256_set_m128i(words, words);  // lane m of each half: word m / 2
    const __m256i to9 = _mm256_setr_epi16(512, 8, 512, 8, 512, 8, 512, 8,   // even groups: fields 0, 2
                                          64, 1, 64, 1, 64, 1, 64, 1);     // odd groups: fields 1, 3
    const __m256i f = _mm256_and_si256(_mm256_srli_epi16(_mm256_mullo_epi16(w, to9), 9), _mm256_set1_epi16(7));
    return {_mm256_add_epi16(_mm256_add_epi16(f, f), _mm256_set1_epi16(1))};
  }
  // The fp16 d from the top nibbles of the 4 words, times 1/8.
  static float scale_d(const uint8_t* p) {
    uint16_t h = 0;
    for (int w = 0; w < 4; ++w) h = static_cast<uint16_t>(h | ((u16at(p + 2 * w) >> 12) << (4 * w)));
    uint8_t bytes[2];
    std::memcpy(bytes, &h, 2);
    return fp16(bytes) * 0.125f;
  }
  __m256i q(int k) const {
    int idx[4];
    int64_t delta[4];
    for (int l = 0; l < 4; ++l) {
      const int nib = (qh[2 * k + l / 2] >> (4 * (l % 2))) & 0xf;
      idx[l] = qs[4 * k + l] | ((nib & 7) << 8);
      delta[l] = nib & 8 ? -1 : 0x0101010101010101;
    }
    return iq1_eighths(grid8(kIq1sGrid.data(), idx[0], idx[1], idx[2], idx[3]),
                       _mm256_setr_epi64x(delta[0], delta[1], delta[2], delta[3]));
  }
};

struct UTQ2_0 {
  static constexpr int kBytes = sizeof(BlockTQ2_0);
  static constexpr bool kSigned = true, kMins = false;
  const uint8_t* qs;
  float d;
  explicit UTQ2_0(const uint8_t* b) : qs(b), d(fp16(b + 64)) {}
  __m256i q(int k) const {
    const __m256i v = _mm256_srli_epi16(loadu(qs + 32 * (k / 4)), 2 * (k % 4));
    return _mm256_sub_epi8(_mm256_and_si256(v, _mm256_set1_epi8(3)), _mm256_set1_epi8(1));
  }
  __m256i sc(int) const { return _mm256_set1_epi16(1); }
};

// 16 bytes -> their base-3 digit n (per lane: pow3 = 3^n) as 16 int16 in 0..2: the byte is a
// fraction of 3^5, digit n = ((uint8_t)(byte * 3^n) * 3) >> 8.
inline __m256i trits16(__m128i bytes, __m256i pow3) {
  const __m256i scaled = _mm256_and_si256(_mm256_mullo_epi16(_mm256_cvtepu8_epi16(bytes), pow3), _mm256_set1_epi16(0xff));
  return _mm256_srli_epi16(_mm256_mullo_epi16(scaled, _mm256_set1_epi16(3)), 8);
}

// Two sets of 16 digits -> 32 int8 (a's, then b's), minus 1.
inline __m256i join_trits(__m256i a, __m256i b) {
  const __m256i bytes = _mm256_permute4x64_epi64(_mm256_packus_epi16(a, b), 0xd8);
  return _mm256_sub_epi8(bytes, _mm256_set1_epi8(1));
}

// Element order (ref_iq.cpp): chunks 0..4 are digit k of qs[0..31]; 160..239 digits 0..4 of
// qs[32..47], 16 at a time; 240..255 digit f/4 of qh[f%4].
struct UTQ1_0 {
  static constexpr int kBytes = sizeof(BlockTQ1_0);
  static constexpr bool kSigned = true, kMins = false;
  const uint8_t* b;
  float d;
  explicit UTQ1_0(const uint8_t* block) : b(block), d(fp16(block + 52)) {}
  static __m256i pow3(int n) {
    static constexpr int16_t kPow3[5] = {1, 3, 9, 27, 81};
    return _mm256_set1_epi16(kPow3[n]);
  }
  __m256i q(int k) const {
    if (k < 5) return join_trits(trits16(loadu128(b), pow3(k)), trits16(loadu128(b + 16), pow3(k)));
    const __m128i tail = loadu128(b + 32);
    if (k < 7) return join_trits(trits16(tail, pow3(2 * k - 10)), trits16(tail, pow3(2 * k - 9)));
    const __m128i qh = _mm_set1_epi32(static_cast<int>(u32at(b + 48)));  // byte 4n + j = qh[j]
    const __m256i qh_pow3 = _mm256_setr_epi16(1, 1, 1, 1, 3, 3, 3, 3, 9, 9, 9, 9, 27, 27, 27, 27);
    return join_trits(trits16(tail, pow3(4)), trits16(qh, qh_pow3));
  }
  __m256i sc(int) const { return _mm256_set1_epi16(1); }
};

}  // namespace

void tile_iq2_xxs(const TileArgs& a) { QK<UIQ2_XXS>::tile(a); }
void tile_iq2_xs(const TileArgs& a) { QK<UIQ2_XS>::tile(a); }
void tile_iq2_s(const TileArgs& a) { QK<UIQ2_S>::tile(a); }
void tile_iq3_xxs(const TileArgs& a) { QK<UIQ3_XXS>::tile(a); }
void tile_iq3_s(const TileArgs& a) { QK<UIQ3_S>::tile(a); }
void tile_iq1_s(const TileArgs& a) { QK<UIQ1_S>::tile(a); }
void tile_iq1_m(const TileArgs& a) { QK<UIQ1_M>::tile(a); }
void tile_tq1_0(const TileArgs& a) { QK<UTQ1_0>::tile(a); }
void tile_tq2_0(const TileArgs& a) { QK<UTQ2_0>::tile(a); }

}  // namespace engine::kernels::avx2
