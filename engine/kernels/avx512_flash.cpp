// AVX-512 VNNI tiled attention: flash_tiles.inc with the Q8_0 byte dots on vpdpbusd (ymm, EVEX)
// and the f32 accumulation of F32 / F16 keys on zmm (flash_zmm.inc).
// Called only when cpu_features() reports AVX-512 F/BW/VL/VNNI (dispatch.cpp).
#include "engine/kernels/avx2_common.h"

#define GGUFD_FLASH_NS avx512vnni
#define GGUFD_FLASH_VNNI 1
#define GGUFD_FLASH_ZMM 1
#include "engine/kernels/flash_tiles.inc"
