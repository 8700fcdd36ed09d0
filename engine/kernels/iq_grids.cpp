// The lattice grids of iq_grids.h, expanded at compile time from level codes (iq_grid_codes.inc):
// a code holds, for each element of an entry, the index of its magnitude in the type's level list.
#include "engine/kernels/iq_grids.h"

#include <cstddef>

namespace engine::kernels {

namespace {

#include "engine/kernels/iq_grid_codes.inc"

// codes (N,) with `Bits` bits per element -> N entries of sizeof(Word) bytes, byte j = levels[code j]
template <class Word, int Bits, size_t N, size_t L>
constexpr std::array<Word, N> expand(const uint16_t (&codes)[N], const uint8_t (&levels)[L]) {
  std::array<Word, N> out{};
  for (size_t i = 0; i < N; ++i) {
    Word w = 0;
    for (size_t j = 0; j < sizeof(Word); ++j) {
      const unsigned code = (codes[i] >> (Bits * j)) & ((1u << Bits) - 1);
      w |= static_cast<Word>(levels[code]) << (8 * j);  // a code past the list fails to compile
    }
    out[i] = w;
  }
  return out;
}

constexpr uint8_t kIq2Levels[3] = {8, 25, 43};
constexpr uint8_t kIq3xxsLevels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
constexpr uint8_t kIq3sLevels[8] = {1, 3, 5, 7, 9, 11, 13, 15};
constexpr uint8_t kIq1Levels[3] = {0xff, 0x00, 0x01};  // -1, 0, +1 as int8 bytes

}  // namespace

constinit const std::array<uint64_t, 256> kIq2xxsGrid = expand<uint64_t, 2>(kIq2xxsCodes, kIq2Levels);
constinit const std::array<uint64_t, 512> kIq2xsGrid = expand<uint64_t, 2>(kIq2xsCodes, kIq2Levels);
constinit const std::array<uint64_t, 1024> kIq2sGrid = expand<uint64_t, 2>(kIq2sCodes, kIq2Levels);
constinit const std::array<uint32_t, 256> kIq3xxsGrid = expand<uint32_t, 3>(kIq3xxsCodes, kIq3xxsLevels);
constinit const std::array<uint32_t, 512> kIq3sGrid = expand<uint32_t, 3>(kIq3sCodes, kIq3sLevels);
constinit const std::array<uint64_t, 2048> kIq1sGrid = expand<uint64_t, 2>(kIq1sCodes, kIq1Levels);

}  // namespace engine::kernels
