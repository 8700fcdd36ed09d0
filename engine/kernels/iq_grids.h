// Format tables of the lattice quants (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) and of
// MXFP4: the values a block's index bits select. Every implementation of these formats carries the
// same numbers; ours come from llama.cpp's ggml/src/ggml-common.h (b10108), re-encoded by
// scripts/iq-grids and checked against that file's bytes by tests/kernels/iq_grids_test.cpp.
//
// A grid entry holds the magnitudes of one group of 8 elements (IQ1, IQ2) or 4 elements (IQ3), one
// byte per element in element order (the low byte is element 0). Every table has an entry for
// every value its index field can hold, so any block bytes index inside it.
#pragma once

#include <array>
#include <cstdint>

namespace engine::kernels {

// IQ2_XXS (8-bit index), IQ2_XS (9-bit), IQ2_S (10-bit): 8 magnitudes, each 8, 25 or 43.
extern const std::array<uint64_t, 256> kIq2xxsGrid;
extern const std::array<uint64_t, 512> kIq2xsGrid;
extern const std::array<uint64_t, 1024> kIq2sGrid;
// IQ3_XXS (8-bit index): 4 magnitudes from {4, 12, 20, 28, 36, 44, 52, 62}.
extern const std::array<uint32_t, 256> kIq3xxsGrid;
// IQ3_S (9-bit index): 4 magnitudes from {1, 3, 5, ..., 15}.
extern const std::array<uint32_t, 512> kIq3sGrid;
// IQ1_S and IQ1_M (11-bit index): 8 signed values -1, 0 or +1 (bytes 0xff, 0x00, 0x01).
extern const std::array<uint64_t, 2048> kIq1sGrid;

// IQ2_XXS / IQ2_XS / IQ3_XXS signs: a group of 8 stores 7 sign bits; the 8th is the one that makes
// the count of negative elements even. kIqSigns[7 bits] -> 8 bits, bit j set: element j negative.
inline constexpr std::array<uint8_t, 128> kIqSigns = [] {
  std::array<uint8_t, 128> t{};
  for (int i = 0; i < 128; ++i) {
    int ones = 0;
    for (int b = 0; b < 7; ++b) ones += (i >> b) & 1;
    t[i] = static_cast<uint8_t>(i | ((ones & 1) << 7));
  }
  return t;
}();

// MXFP4 element codes (OCP microscaling e2m1: sign, 2 exponent bits, 1 mantissa bit) -> twice the
// value, so that every value is an integer: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
inline constexpr int8_t kMxfp4Values[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

}  // namespace engine::kernels
