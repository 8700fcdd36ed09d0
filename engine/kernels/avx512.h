// AVX-512 (F, BW, VL, VNNI) kernels (avx512_*.cpp, compiled with those target flags). Call only
// when cpu_features() reports all four; dispatch.cpp does. Everything not here comes from the
// AVX2 kernels, which every AVX-512 CPU also runs.
#pragma once

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avx512vnni {

// The tile over packed 8-row groups (packing.h) for `type`, or nullptr (avx512_packed.cpp).
TileFn packed_tile_for(gguf::TensorType type);

}  // namespace engine::kernels::avx512vnni
