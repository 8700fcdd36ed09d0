// AVX-VNNI kernels (avxvnni_*.cpp, compiled with -mavxvnni). Call only when cpu_features()
// reports avx_vnni on top of AVX2/FMA/F16C; dispatch.cpp does. Everything not here comes from the
// AVX2 kernels.
#pragma once

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avxvnni {

// The tile over packed 8-row groups (packing.h) for `type`, or nullptr (avxvnni_packed.cpp).
TileFn packed_tile_for(gguf::TensorType type);

}  // namespace engine::kernels::avxvnni
