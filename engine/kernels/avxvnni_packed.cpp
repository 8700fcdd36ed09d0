// AVX-VNNI tiles over packed 8-row groups: packed_tiles.inc with the VEX-encoded vpdpbusd of CPUs
// that have VNNI without AVX-512 (Intel Alder Lake and later client cores, Sierra Forest). Same code
// and results as avx512_packed.cpp, another encoding. Compiled with -mavxvnni (flags.cmake); called
// only when cpu_features() reports avx_vnni (dispatch.cpp).
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packed_tiles.h"

#define GGUFD_PACKED_NS avxvnni
#define GGUFD_PACKED_VNNI 1
#define GGUFD_PACKED_DPBUSD _mm256_dpbusd_avx_epi32
#include "engine/kernels/packed_tiles.inc"
