// AVX-VNNI kernels (avxvnni_*.cpp, compiled with -mavxvnni). Call only when cpu_features()
// reports avx_vnni on top of AVX2/FMA/F16C; dispatch.cpp does. Everything not here comes from the
// AVX2 kernels.
#pragma once

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avxvnni {

// Tiles over packed 8-row groups (packing.h; avxvnni_packed.cpp: packed_tiles.inc with the VEX
// vpdpbusd).
void packed_q4_0(const TileArgs& a);
void packed_q8_0(const TileArgs& a);
void packed_iq4_nl(const TileArgs& a);
void packed_q4_k(const TileArgs& a);

}  // namespace engine::kernels::avxvnni
