// AVX-512 VNNI tiles over packed 16-row groups: avx512_tiles.inc with vpdpbusd on zmm registers,
// one row per 32-bit lane. Compiled for AVX-512F/BW/VL/VNNI (CMakeLists.txt); called only when
// cpu_features() reports them (dispatch.cpp).
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packed_tiles.h"

#define GGUFD_ZMM_NS avx512vnni
#define GGUFD_ZMM_EMULATED 0
#include "engine/kernels/avx512_tiles.inc"
