// AVX2 tiled attention: flash_tiles.inc with the Q8_0 byte dots on maddubs + madd.
#include "engine/kernels/avx2_common.h"

#define GGUFD_FLASH_NS avx2
#define GGUFD_FLASH_VNNI 0
#include "engine/kernels/flash_tiles.inc"
