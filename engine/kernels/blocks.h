// What the kernels read blocks with: the file's block layouts (gguf/blocks.h, the format facts),
// little-endian field loads (load_u16/u32; fp16.h has load_fp16), the decoding of packed scales,
// and our own activation blocks.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "gguf/blocks.h"

namespace engine::kernels {

using gguf::kQK;
using gguf::kQKK;
using gguf::BlockIQ1_M;
using gguf::BlockIQ1_S;
using gguf::BlockIQ2_S;
using gguf::BlockIQ2_XS;
using gguf::BlockIQ2_XXS;
using gguf::BlockIQ3_S;
using gguf::BlockIQ3_XXS;
using gguf::BlockIQ4_NL;
using gguf::BlockIQ4_XS;
using gguf::BlockMXFP4;
using gguf::BlockQ2_K;
using gguf::BlockQ3_K;
using gguf::BlockQ4_0;
using gguf::BlockQ4_1;
using gguf::BlockQ4_K;
using gguf::BlockQ5_0;
using gguf::BlockQ5_1;
using gguf::BlockQ5_K;
using gguf::BlockQ6_K;
using gguf::BlockQ8_0;
using gguf::BlockTQ1_0;
using gguf::BlockTQ2_0;

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
struct ActQ8A {
  float d;
  float s;  // d * sum(qs)
  int8_t qs[32];
};
// Q8_K: 256 int8, f32 scale, sums of each 16-element group (for K-quant mins / offsets): ggml's
// block_q8_K, with typed fields.
struct ActQ8K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};
static_assert(sizeof(ActQ8K) == sizeof(gguf::BlockQ8_K));

}  // namespace engine::kernels
