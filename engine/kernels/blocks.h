// ggml quantization block layouts, byte for byte as stored in GGUF files.
//
// Every field is a byte array (alignment 1) so a block may sit at any address inside a mapped
// file; multi-byte fields are little-endian and read with memcpy (load_fp16, load_u16/u32).
// Value formulas (the spec; ref_dequant.cpp implements them):
//   Q4_0  x = d * (q4 - 8)                Q4_1  x = d * q4 + m
//   Q5_0  x = d * (q5 - 16)               Q5_1  x = d * q5 + m
//   Q8_0  x = d * q8                      IQ4_NL x = d * kIq4nlValues[q4]
//   K-quants: 256-element super-blocks of 16- or 32-element sub-blocks with quantized scales.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace engine::kernels {

inline constexpr int kQK = 32;    // elements in a Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / IQ4_NL block
inline constexpr int kQKK = 256;  // elements in a K-quant / IQ4_XS super-block

struct BlockQ4_0 { uint8_t d[2]; uint8_t qs[16]; };                      // 18 bytes
struct BlockQ4_1 { uint8_t d[2]; uint8_t m[2]; uint8_t qs[16]; };        // 20
struct BlockQ5_0 { uint8_t d[2]; uint8_t qh[4]; uint8_t qs[16]; };       // 22
struct BlockQ5_1 { uint8_t d[2]; uint8_t m[2]; uint8_t qh[4]; uint8_t qs[16]; };  // 24
struct BlockQ8_0 { uint8_t d[2]; int8_t qs[32]; };                       // 34
struct BlockIQ4_NL { uint8_t d[2]; uint8_t qs[16]; };                    // 18

// x = d * (scales[i] & 15) * q2 - dmin * (scales[i] >> 4), 16 sub-blocks of 16.
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint8_t d[2]; uint8_t dmin[2]; };  // 84
// x = d * (s6[i] - 32) * (q2 + 4*hbit - 4), 16 sub-blocks of 16, 6-bit scales packed in 12 bytes.
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint8_t d[2]; };  // 110
// x = d * sc[i] * q4 - dmin * mn[i], 8 sub-blocks of 32, 6-bit scale/min pairs in 12 bytes.
struct BlockQ4_K { uint8_t d[2]; uint8_t dmin[2]; uint8_t scales[12]; uint8_t qs[128]; };  // 144
// As Q4_K with a fifth bit in qh.
struct BlockQ5_K {
  uint8_t d[2]; uint8_t dmin[2]; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128];
};  // 176
// x = d * scales[i] * (q6 - 32), 16 sub-blocks of 16, int8 scales.
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint8_t d[2]; };  // 210
// x = d * (ls[i] - 32) * kIq4nlValues[q4], 8 sub-blocks of 32, 6-bit scales.
struct BlockIQ4_XS { uint8_t d[2]; uint8_t scales_h[2]; uint8_t scales_l[4]; uint8_t qs[128]; };  // 136

static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);

// The 16 non-linear levels of IQ4_NL / IQ4_XS.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                            1,    13,   25,  38,  53,  69,  89,  113};

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Sub-block j (0..7) scale and min of a Q4_K / Q5_K super-block (6 bits each).
inline void k4_scale_min(const uint8_t* s, int j, uint8_t& sc, uint8_t& mn) {
  if (j < 4) {
    sc = s[j] & 63;
    mn = s[j + 4] & 63;
  } else {
    sc = static_cast<uint8_t>((s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4));
    mn = static_cast<uint8_t>((s[j + 4] >> 4) | ((s[j] >> 6) << 4));
  }
}

// The 16 signed 6-bit sub-block scales (already minus 32) of a Q3_K super-block.
inline void q3k_scales(const uint8_t* packed, int8_t out[16]) {
  for (int i = 0; i < 16; ++i) {
    const int low = i < 8 ? (packed[i] & 0xf) : (packed[i - 8] >> 4);
    const int high = (packed[8 + i % 4] >> (2 * (i / 4))) & 3;
    out[i] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

// Activation blocks (our own layouts, not stored in files).
// Q8_0-style: 32 int8 with scale d and d * sum(qs), for the offset/min term of Q4_0/Q4_1/Q5_x.
struct BlockQ8A {
  float d;
  float s;  // d * sum(qs)
  int8_t qs[32];
};
// Q8_K: 256 int8, f32 scale, sums of each 16-element group (for K-quant mins / offsets).
struct BlockQ8K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

}  // namespace engine::kernels
