// A fourth copy of the tiled attention (engine/kernels/flash_tiles.inc) with GGUFD_FLASH_VNNI = 1,
// built for AVX2 with SIMDe emulating vpdpbusd, so the VNNI byte dots of the Q8_0 cache are
// tested on any AVX2 machine (flash_attn_test.cpp compares it with the reference). Test-only,
// like vnni_emulated_tiles.cpp.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512/dpbusd.h>

#include "engine/kernels/avx2_common.h"

#define GGUFD_FLASH_NS vnni_emulated
#define GGUFD_FLASH_VNNI 1
#include "engine/kernels/flash_tiles.inc"
