// Scalar reference kernels of the lattice quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS,
// IQ3_S), the ternary TQ1_0 / TQ2_0 and MXFP4: the spec their SIMD tiles are tested against.
//
// Each block is unpacked to the canonical form of unpacked.h (signed int8 q, int16 scale per 16
// elements, f32 d); dequantization and the dot products both read that form, so one decoder per
// type serves both. The layouts follow llama.cpp b10108's dequantize_row_* (ggml-quants.c) and
// the rounding its scalar vec_dot functions (ggml-cpu/quants.c): per super-block an integer sum
// of scale * (q . x), then one float product with d_w * d_x. ggml's constant factors (1/8 for
// IQ2, 1/4 for IQ3_XXS, IQ1's delta of 1/8) are powers of two; folding them into d (and IQ1's
// delta into q, in eighths) changes no bit of either result.
#include <cstring>

#include "engine/kernels/blocks.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/iq_grids.h"
#include "engine/kernels/ref.h"
#include "engine/kernels/unpacked.h"

namespace engine::kernels::ref {

namespace {

// 8 magnitudes (grid entry, byte j = element j) with sign bits (bit j: element j negative) -> q (8,)
void put8(int8_t* q, uint64_t grid, uint8_t signs) {
  for (int j = 0; j < 8; ++j) {
    const int mag = static_cast<int>((grid >> (8 * j)) & 0xff);
    q[j] = static_cast<int8_t>((signs >> j) & 1 ? -mag : mag);
  }
}

// Two IQ3 entries of 4 magnitudes -> one group of 8.
uint64_t join4(uint32_t lo, uint32_t hi) { return lo | (static_cast<uint64_t>(hi) << 32); }

// The two 16-element groups of sub-block `sub` share scale `s`.
void set_sub_scale(UnpackedK& u, int sub, int s) {
  u.sc[2 * sub] = u.sc[2 * sub + 1] = static_cast<int16_t>(s);
}

void no_mins(UnpackedK& u) {
  for (int g = 0; g < 16; ++g) u.mn[g] = 0;
  u.dm = 0.0f;
}

// Sub-block: 4 index bytes, then 32 bits = 4 x 7 sign-index bits | 4-bit ls << 28.
void unpack(const BlockIQ2_XXS& b, UnpackedK& u) {
  for (int sub = 0; sub < 8; ++sub) {
    const uint8_t* idx = b.qs + 8 * sub;
    const uint32_t aux = load_u32(idx + 4);
    for (int l = 0; l < 4; ++l) put8(u.q + 32 * sub + 8 * l, kIq2xxsGrid[idx[l]], kIqSigns[(aux >> (7 * l)) & 127]);
    set_sub_scale(u, sub, 2 * static_cast<int>(aux >> 28) + 1);
  }
  u.d = load_fp16(b.d) * 0.125f;
  no_mins(u);
}

// Group g: 16-bit qs word = 9-bit index | 7 sign-index bits << 9; scales: ls of each 16 elements.
void unpack(const BlockIQ2_XS& b, UnpackedK& u) {
  for (int g = 0; g < 32; ++g) {
    const uint16_t v = load_u16(b.qs + 2 * g);
    put8(u.q + 8 * g, kIq2xsGrid[v & 511], kIqSigns[v >> 9]);
  }
  for (int i = 0; i < 16; ++i) u.sc[i] = static_cast<int16_t>(2 * ((b.scales[i / 2] >> (4 * (i % 2))) & 0xf) + 1);
  u.d = load_fp16(b.d) * 0.125f;
  no_mins(u);
}

// Group g: index qs[g] | bits 2(g%4).. of qh[g/4] << 8, signs qs[32 + g].
void unpack(const BlockIQ2_S& b, UnpackedK& u) {
  for (int g = 0; g < 32; ++g) {
    const int index = b.qs[g] | (((b.qh[g / 4] >> (2 * (g % 4))) & 3) << 8);
    put8(u.q + 8 * g, kIq2sGrid[index], b.qs[32 + g]);
  }
  for (int i = 0; i < 16; ++i) u.sc[i] = static_cast<int16_t>(2 * ((b.scales[i / 2] >> (4 * (i % 2))) & 0xf) + 1);
  u.d = load_fp16(b.d) * 0.125f;
  no_mins(u);
}

// Sub-block: 8 index bytes in qs[8 sub..], its 32 bits of signs and ls at qs[64 + 4 sub].
void unpack(const BlockIQ3_XXS& b, UnpackedK& u) {
  for (int sub = 0; sub < 8; ++sub) {
    const uint8_t* idx = b.qs + 8 * sub;
    const uint32_t aux = load_u32(b.qs + 64 + 4 * sub);
    for (int l = 0; l < 4; ++l) {
      const uint64_t grid = join4(kIq3xxsGrid[idx[2 * l]], kIq3xxsGrid[idx[2 * l + 1]]);
      put8(u.q + 32 * sub + 8 * l, grid, kIqSigns[(aux >> (7 * l)) & 127]);
    }
    set_sub_scale(u, sub, 2 * static_cast<int>(aux >> 28) + 1);
  }
  u.d = load_fp16(b.d) * 0.25f;
  no_mins(u);
}

// Entry i (2 per group of 8): index qs[i] | bit i%8 of qh[i/8] << 8; signs[g] per group.
void unpack(const BlockIQ3_S& b, UnpackedK& u) {
  for (int g = 0; g < 32; ++g) {
    uint32_t half[2];
    for (int h = 0; h < 2; ++h) {
      const int i = 2 * g + h;
      half[h] = kIq3sGrid[b.qs[i] | (((b.qh[i / 8] >> (i % 8)) & 1) << 8)];
    }
    put8(u.q + 8 * g, join4(half[0], half[1]), b.signs[g]);
  }
  for (int sub = 0; sub < 8; ++sub) set_sub_scale(u, sub, 2 * ((b.scales[sub / 2] >> (4 * (sub % 2))) & 0xf) + 1);
  u.d = load_fp16(b.d);
  no_mins(u);
}

// IQ1 group of 8: values grid + delta with delta = +-1/8, kept in eighths: q = 8 * grid +- 1.
void put8_iq1(int8_t* q, int index, bool minus) {
  const uint64_t grid = kIq1sGrid[index];
  for (int j = 0; j < 8; ++j) {
    const auto v = static_cast<int8_t>((grid >> (8 * j)) & 0xff);
    q[j] = static_cast<int8_t>(8 * v + (minus ? -1 : 1));
  }
}

// Sub-block: 16-bit qh = 4 x 3 high index bits | ls << 12 | delta sign << 15.
void unpack(const BlockIQ1_S& b, UnpackedK& u) {
  for (int sub = 0; sub < 8; ++sub) {
    const uint16_t qh = load_u16(b.qh + 2 * sub);
    for (int l = 0; l < 4; ++l) {
      put8_iq1(u.q + 32 * sub + 8 * l, b.qs[4 * sub + l] | (((qh >> (3 * l)) & 7) << 8), qh & 0x8000);
    }
    set_sub_scale(u, sub, 2 * ((qh >> 12) & 7) + 1);
  }
  u.d = load_fp16(b.d) * 0.125f;
  no_mins(u);
}

// Group g: 3 high index bits and the delta sign in nibble g%2 of qh[g/2]; word s of scales
// holds ls of 16-element groups 4s..4s+3 in bits 0-2, 3-5, 6-8, 9-11 and a nibble of d on top.
void unpack(const BlockIQ1_M& b, UnpackedK& u) {
  uint16_t words[4];
  for (int s = 0; s < 4; ++s) words[s] = load_u16(b.scales + 2 * s);
  for (int g = 0; g < 32; ++g) {
    const int nib = (b.qh[g / 2] >> (4 * (g % 2))) & 0xf;
    put8_iq1(u.q + 8 * g, b.qs[g] | ((nib & 7) << 8), nib & 8);
  }
  for (int i = 0; i < 16; ++i) u.sc[i] = static_cast<int16_t>(2 * ((words[i / 4] >> (3 * (i % 4))) & 7) + 1);
  const uint16_t d = static_cast<uint16_t>((words[0] >> 12) | ((words[1] >> 8) & 0x00f0) |
                                           ((words[2] >> 4) & 0x0f00) | (words[3] & 0xf000));
  u.d = fp16_to_fp32(d) * 0.125f;
  no_mins(u);
}

// Base-3 digit n of a TQ1_0 byte, minus 1: the byte is a fraction of 3^5 read by multiplying.
int8_t trit(uint8_t byte, int n) {
  static constexpr uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  const auto scaled = static_cast<uint8_t>(byte * kPow3[n]);
  return static_cast<int8_t>(((scaled * 3) >> 8) - 1);
}

// Elements 0..159: digit e/32 of qs[e%32]; 160..239: digit f/16 of qs[32 + f%16] (f = e - 160);
// 240..255: digit f/4 of qh[f%4] (f = e - 240).
void unpack(const BlockTQ1_0& b, UnpackedK& u) {
  for (int e = 0; e < 160; ++e) u.q[e] = trit(b.qs[e % 32], e / 32);
  for (int f = 0; f < 80; ++f) u.q[160 + f] = trit(b.qs[32 + f % 16], f / 16);
  for (int f = 0; f < 16; ++f) u.q[240 + f] = trit(b.qh[f % 4], f / 4);
  for (int g = 0; g < 16; ++g) u.sc[g] = 1;
  u.d = load_fp16(b.d);
  no_mins(u);
}

// Element 128h + 32l + m: bits 2l, 2l+1 of qs[32h + m], minus 1.
void unpack(const BlockTQ2_0& b, UnpackedK& u) {
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, l = (e % 128) / 32, m = e % 32;
    u.q[e] = static_cast<int8_t>(((b.qs[32 * h + m] >> (2 * l)) & 3) - 1);
  }
  for (int g = 0; g < 16; ++g) u.sc[g] = 1;
  u.d = load_fp16(b.d);
  no_mins(u);
}

// The E8M0 exponent halved (kMxfp4Values are doubled): 2^(e - 128), exact for every byte
// (e = 0, 1 give the subnormals 2^-128, 2^-127; 255 gives 2^127, never inf or NaN).
float e8m0_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return bits_to_f32(bits);
}

void unpack(const BlockMXFP4& b, Unpacked32& u) {
  lookup_nibbles(b.qs, kMxfp4Values, u.q);
  u.d = e8m0_half(b.e);
  u.m = 0.0f;
}

}  // namespace

void dequant_iq2_xxs(const void* r, float* y, int64_t c) { row_dequant<BlockIQ2_XXS, unpack>(r, y, c); }
void dequant_iq2_xs(const void* r, float* y, int64_t c) { row_dequant<BlockIQ2_XS, unpack>(r, y, c); }
void dequant_iq2_s(const void* r, float* y, int64_t c) { row_dequant<BlockIQ2_S, unpack>(r, y, c); }
void dequant_iq3_xxs(const void* r, float* y, int64_t c) { row_dequant<BlockIQ3_XXS, unpack>(r, y, c); }
void dequant_iq3_s(const void* r, float* y, int64_t c) { row_dequant<BlockIQ3_S, unpack>(r, y, c); }
void dequant_iq1_s(const void* r, float* y, int64_t c) { row_dequant<BlockIQ1_S, unpack>(r, y, c); }
void dequant_iq1_m(const void* r, float* y, int64_t c) { row_dequant<BlockIQ1_M, unpack>(r, y, c); }
void dequant_tq1_0(const void* r, float* y, int64_t c) { row_dequant<BlockTQ1_0, unpack>(r, y, c); }
void dequant_tq2_0(const void* r, float* y, int64_t c) { row_dequant<BlockTQ2_0, unpack>(r, y, c); }

// W row (cols,) -> y (cols,): y = d * q (ggml: q * d, the same product).
void dequant_mxfp4(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockMXFP4*>(row);
  Unpacked32 u;
  for (int64_t i = 0; i < cols / kQK; ++i, y += kQK) {
    unpack(b[i], u);
    for (int j = 0; j < kQK; ++j) y[j] = u.d * static_cast<float>(u.q[j]);
  }
}

float vec_dot_iq2_xxs(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ2_XXS, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq2_xs(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ2_XS, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq2_s(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ2_S, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq3_xxs(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ3_XXS, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq3_s(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ3_S, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq1_s(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ1_S, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq1_m(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ1_M, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_tq1_0(const void* w, const void* x, int64_t c) { return row_dot<BlockTQ1_0, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_tq2_0(const void* w, const void* x, int64_t c) { return row_dot<BlockTQ2_0, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_mxfp4(const void* w, const void* x, int64_t c) { return row_dot<BlockMXFP4, Unpacked32, ActQ8A, unpack>(w, x, c); }

}  // namespace engine::kernels::ref
