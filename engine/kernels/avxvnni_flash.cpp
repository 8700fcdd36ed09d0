// AVX-VNNI tiled attention: flash_tiles.inc with the Q8_0 byte dots on VEX-encoded vpdpbusd.
// Called only when cpu_features() reports avx_vnni (dispatch.cpp).
#include "engine/kernels/avx2_common.h"

#define GGUFD_FLASH_NS avxvnni
#define GGUFD_FLASH_VNNI 1
#define GGUFD_FLASH_DPBUSD _mm256_dpbusd_avx_epi32
#include "engine/kernels/flash_tiles.inc"
