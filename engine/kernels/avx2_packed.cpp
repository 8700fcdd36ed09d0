// AVX2 tiles over packed 8-row groups: packed_tiles.inc with maddubs products.
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packed_tiles.h"

#define GGUFD_PACKED_NS avx2
#define GGUFD_PACKED_VNNI 0
#include "engine/kernels/packed_tiles.inc"
