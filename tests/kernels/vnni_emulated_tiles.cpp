// A third copy of the packed tiles (engine/kernels/packed_tiles.inc) with GGUFD_PACKED_VNNI = 1,
// built for AVX2 with SIMDe emulating vpdpbusd, so the AVX-512 VNNI code paths are tested on any
// AVX2 machine (packing_test.cpp compares it with the reference). Test-only: compiled into
// engine_tests when SIMDe's headers are found, with -mavx2 -mfma -mf16c; called only when the
// CPU has those (the test checks).
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512/dpbusd.h>

#include "engine/kernels/avx2_common.h"

#define GGUFD_PACKED_NS vnni_emulated
#define GGUFD_PACKED_VNNI 1
#include "engine/kernels/packed_tiles.inc"
