// AVX-512 (F, BW, VL, VNNI) kernels (avx512_*.cpp, compiled with those target flags). Call only
// when cpu_features() reports all four; dispatch.cpp does. Everything not here comes from the
// AVX2 kernels, which every AVX-512 CPU also runs.
#pragma once

#include "engine/kernels/dispatch.h"

namespace engine::kernels::avx512vnni {

// Tiles over packed 8-row groups (packing.h; avx512_packed.cpp: packed_tiles.inc with vpdpbusd).
void packed_q4_0(const TileArgs& a);
void packed_q8_0(const TileArgs& a);
void packed_iq4_nl(const TileArgs& a);
void packed_q4_k(const TileArgs& a);

}  // namespace engine::kernels::avx512vnni
