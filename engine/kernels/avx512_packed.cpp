// AVX-512 VNNI tiles over packed 8-row groups: packed_tiles.inc with vpdpbusd on ymm registers
// (AVX512-VL encoding), which sums four u8 x s8 products into an int32 lane in one instruction
// where AVX2 needs maddubs + madd. Compiled for AVX-512F/BW/VL/VNNI (flags.cmake); called only
// when cpu_features() reports them (dispatch.cpp).
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packed_tiles.h"

#define GGUFD_PACKED_NS avx512vnni
#define GGUFD_PACKED_VNNI 1
#include "engine/kernels/packed_tiles.inc"
