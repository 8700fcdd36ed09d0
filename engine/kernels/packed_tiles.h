// The tiles over packed groups (packing.h), one set per copy: packed_tiles.inc defines 8-row ones,
// avx2 (maddubs, avx2_packed.cpp) and avxvnni (VEX vpdpbusd, avxvnni_packed.cpp); avx512_tiles.inc
// 16-row ones, avx512vnni (zmm vpdpbusd, avx512_packed.cpp). Call a set only on a CPU that has its
// instructions; the type table (traits.cpp) names them and dispatch.cpp picks the set.
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
  void packed_iq4_xs(const TileArgs& a); \
  }

// Declares one AVX-512 copy's tiles: the 16-row ones (avx512_tiles.inc: the same types) and the
// f32 family's over the file layout (avx512_float.inc).
#define GGUFD_DECLARE_ZMM_TILES(ns)      \
  GGUFD_DECLARE_PACKED_TILES(ns)         \
  namespace engine::kernels::ns {        \
  void tile_f32(const TileArgs& a);      \
  void tile_f16(const TileArgs& a);      \
  void tile_bf16(const TileArgs& a);     \
  }

GGUFD_DECLARE_PACKED_TILES(avx2)
GGUFD_DECLARE_PACKED_TILES(avxvnni)
GGUFD_DECLARE_ZMM_TILES(avx512vnni)
