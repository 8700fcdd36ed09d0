// A fourth copy of the tiled attention (engine/kernels/flash_tiles.inc) as the AVX-512 copy has it
// (GGUFD_FLASH_VNNI = 1, GGUFD_FLASH_ZMM = 1), built for AVX2 with SIMDe emulating vpdpbusd and
// the 512-bit instructions, so the VNNI byte dots of the Q8_0 cache and the zmm f32 accumulation
// are tested on any AVX2 machine (flash_attn_test.cpp compares it with the reference). Test-only,
// like vnni_emulated_tiles.cpp.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include "engine/kernels/avx2_common.h"

#define GGUFD_FLASH_NS vnni_emulated
#define GGUFD_FLASH_VNNI 1
#define GGUFD_FLASH_ZMM 1
#include "engine/kernels/flash_tiles.inc"
