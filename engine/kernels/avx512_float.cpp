// AVX-512 tiles for the f32 family over the file layout: avx512_float.inc on zmm registers.
// Compiled for AVX-512F/BW/VL/VNNI (CMakeLists.txt); called only when cpu_features() reports them
// (dispatch.cpp: the avx512vnni table).
#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packed_tiles.h"

#define GGUFD_ZMM_NS avx512vnni
#define GGUFD_ZMM_EMULATED 0
#include "engine/kernels/avx512_float.inc"
