// The tiles over packed 8-row groups (packing.h) that packed_tiles.inc defines, one set per copy:
// avx2 (maddubs, avx2_packed.cpp), avxvnni (VEX vpdpbusd, avxvnni_packed.cpp) and avx512vnni
// (EVEX vpdpbusd on ymm, avx512_packed.cpp). Call a set only on a CPU that has its instructions;
// the type table (traits.cpp) names them and dispatch.cpp picks the set.
#pragma once

#include "engine/kernels/dispatch.h"

// Declares one copy's tiles in namespace engine::kernels::<ns>.
#define GGUFD_DECLARE_PACKED_TILES(ns)   \
  namespace engine::kernels::ns {        \
  void packed_q4_0(const TileArgs& a);   \
  void packed_q8_0(const TileArgs& a);   \
  void packed_iq4_nl(const TileArgs& a); \
  void packed_q4_k(const TileArgs& a);   \
  void packed_q6_k(const TileArgs& a);   \
  }

GGUFD_DECLARE_PACKED_TILES(avx2)
GGUFD_DECLARE_PACKED_TILES(avxvnni)
GGUFD_DECLARE_PACKED_TILES(avx512vnni)
