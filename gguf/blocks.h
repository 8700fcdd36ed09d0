// ggml quantization block layouts, byte for byte as stored in GGUF files: format facts, from
// which the type table (types.h) takes its block sizes and the kernels their field offsets.
//
// Every field is a byte array (alignment 1) so a block may sit at any address inside a mapped
// file; multi-byte fields are little-endian. Field names follow ggml-common.h. Value formulas
// (the spec; engine/kernels/ref_dequant.cpp implements them):
//   Q4_0  x = d * (q4 - 8)                Q4_1  x = d * q4 + m
//   Q5_0  x = d * (q5 - 16)               Q5_1  x = d * q5 + m
//   Q8_0  x = d * q8                      IQ4_NL x = d * kIq4nlValues[q4]
//   K-quants: 256-element super-blocks of 16- or 32-element sub-blocks with quantized scales.
#pragma once

#include <cstdint>

namespace gguf {

inline constexpr int kQK = 32;    // elements in a Q4_0 / Q4_1 / Q5_0 / Q5_1 / Q8_0 / IQ4_NL block
inline constexpr int kQKK = 256;  // elements in a K-quant / IQ-quant super-block

struct BlockQ4_0 { uint8_t d[2]; uint8_t qs[16]; };
struct BlockQ4_1 { uint8_t d[2]; uint8_t m[2]; uint8_t qs[16]; };
struct BlockQ5_0 { uint8_t d[2]; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ5_1 { uint8_t d[2]; uint8_t m[2]; uint8_t qh[4]; uint8_t qs[16]; };
struct BlockQ8_0 { uint8_t d[2]; int8_t qs[32]; };
struct BlockQ8_1 { uint8_t d[2]; uint8_t s[2]; int8_t qs[32]; };
struct BlockIQ4_NL { uint8_t d[2]; uint8_t qs[16]; };

// x = d * (scales[i] & 15) * q2 - dmin * (scales[i] >> 4), 16 sub-blocks of 16.
struct BlockQ2_K { uint8_t scales[16]; uint8_t qs[64]; uint8_t d[2]; uint8_t dmin[2]; };
// x = d * (s6[i] - 32) * (q2 + 4*hbit - 4), 16 sub-blocks of 16, 6-bit scales packed in 12 bytes.
struct BlockQ3_K { uint8_t hmask[32]; uint8_t qs[64]; uint8_t scales[12]; uint8_t d[2]; };
// x = d * sc[i] * q4 - dmin * mn[i], 8 sub-blocks of 32, 6-bit scale/min pairs in 12 bytes.
struct BlockQ4_K { uint8_t d[2]; uint8_t dmin[2]; uint8_t scales[12]; uint8_t qs[128]; };
// As Q4_K with a fifth bit in qh.
struct BlockQ5_K { uint8_t d[2]; uint8_t dmin[2]; uint8_t scales[12]; uint8_t qh[32]; uint8_t qs[128]; };
// x = d * scales[i] * (q6 - 32), 16 sub-blocks of 16, int8 scales.
struct BlockQ6_K { uint8_t ql[128]; uint8_t qh[64]; int8_t scales[16]; uint8_t d[2]; };
// f32 scale, 256 int8 and the sums of each 16 (ggml's dot-product partner of the K-quants).
struct BlockQ8_K { uint8_t d[4]; int8_t qs[256]; uint8_t bsums[32]; };
// x = d * (ls[i] - 32) * kIq4nlValues[q4], 8 sub-blocks of 32, 6-bit scales.
struct BlockIQ4_XS { uint8_t d[2]; uint8_t scales_h[2]; uint8_t scales_l[4]; uint8_t qs[128]; };

// Lattice ("IQ") quants: 8 sub-blocks of 32, each of groups of 8 (or 4) elements whose magnitudes
// are one grid entry (engine/kernels/iq_grids.h) chosen by an index, with sign bits per element
// (engine/kernels/ref_iq.cpp implements them). ls = a sub-block's 4- or 3-bit scale field.
// x = d * (2*ls + 1) / 8 * grid * sign; qs: 4 index bytes, then 4 x 7 sign bits + ls (32 bits).
struct BlockIQ2_XXS { uint8_t d[2]; uint8_t qs[64]; };
// As IQ2_XXS with 16-bit qs: a 9-bit index and 7 sign bits; two 4-bit ls per sub-block.
struct BlockIQ2_XS { uint8_t d[2]; uint8_t qs[64]; uint8_t scales[8]; };
// 10-bit index: qs[0..31] low bits, qh 2 bits per group; qs[32..63] 8 sign bits per group.
struct BlockIQ2_S { uint8_t d[2]; uint8_t qs[64]; uint8_t qh[8]; uint8_t scales[8]; };
// x = d * (2*ls + 1) / 4 * grid * sign, groups of 8 = 2 entries of 4; qs[64..95] as IQ2_XXS's.
struct BlockIQ3_XXS { uint8_t d[2]; uint8_t qs[96]; };
// x = d * (2*ls + 1) * grid * sign, 9-bit index (qh the 9th bits), 8 sign bits per group of 8.
struct BlockIQ3_S { uint8_t d[2]; uint8_t qs[64]; uint8_t qh[8]; uint8_t signs[32]; uint8_t scales[4]; };
// x = d * (2*ls + 1) * (grid + delta), grid -1/0/+1, delta = +-1/8: an 11-bit index per group of
// 8, its 3 high bits, ls and delta's sign in the sub-block's 16-bit qh.
struct BlockIQ1_S { uint8_t d[2]; uint8_t qs[32]; uint8_t qh[16]; };
// As IQ1_S with a delta sign per group and two 3-bit ls per sub-block; no d field: d is an fp16
// whose 4 nibbles are the top nibbles of the 4 little-endian 16-bit words of `scales`.
struct BlockIQ1_M { uint8_t qs[32]; uint8_t qh[16]; uint8_t scales[8]; };
// Ternary: x = d * (t - 1), t in 0..2, 5 base-3 digits per qs byte (4 per qh byte), read as
// t = ((uint8_t)(byte * 3^n) * 3) >> 8.
struct BlockTQ1_0 { uint8_t qs[48]; uint8_t qh[4]; uint8_t d[2]; };
// x = d * (q2 - 1), 2-bit q2.
struct BlockTQ2_0 { uint8_t qs[64]; uint8_t d[2]; };
// OCP MXFP4, 32 elements: x = 2^(e - 127) * e2m1(q4), e an E8M0 exponent (kMxfp4Values).
struct BlockMXFP4 { uint8_t e; uint8_t qs[16]; };

// The sizes the format fixes, whatever the compiler: every field is bytes, so no padding.
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24 && sizeof(BlockQ8_0) == 34 && sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176 && sizeof(BlockQ6_K) == 210 && sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockQ8_1) == 36 && sizeof(BlockQ8_K) == 292 && sizeof(BlockMXFP4) == 17);
static_assert(sizeof(BlockIQ2_XXS) == 66 && sizeof(BlockIQ2_XS) == 74 && sizeof(BlockIQ2_S) == 82);
static_assert(sizeof(BlockIQ3_XXS) == 98 && sizeof(BlockIQ3_S) == 110 && sizeof(BlockIQ1_S) == 50);
static_assert(sizeof(BlockIQ1_M) == 56 && sizeof(BlockTQ1_0) == 54 && sizeof(BlockTQ2_0) == 66);

}  // namespace gguf
