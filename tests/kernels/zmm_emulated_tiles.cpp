// A second copy of the AVX-512 tiles (engine/kernels/avx512_tiles.inc, avx512_float.inc) built for AVX2, with
// SIMDe emulating every 512-bit instruction, so that code is tested on any AVX2 machine
// (packing_test.cpp compares it with the reference). Test-only: compiled into kernels_tests when
// SIMDe's headers are found, with -mavx2 -mfma -mf16c; called only when the CPU has those.
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>

#include "engine/kernels/avx2_common.h"
#include "engine/kernels/packed_tiles.h"

#define GGUFD_ZMM_NS zmm_emulated
#define GGUFD_ZMM_EMULATED 1
#include "engine/kernels/avx512_tiles.inc"
#include "engine/kernels/avx512_float.inc"
