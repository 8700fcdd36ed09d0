// The kernel dispatch table: chosen once at start-up from cpu_features(), then read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "engine/kernels/blocks.h"
#include "engine/kernels/delta_rule.h"
#include "engine/kernels/flash_attn.h"
#include "gguf/types.h"

namespace engine::kernels {

struct KernelTraits;

// A tile of the product: out[j * ldo + r] = W[r, :] . X[j, :] for r < rows, j < n.
// W rows are `w_stride` bytes apart; X rows are activation rows (per the type's ActFormat)
// `x_stride` bytes apart. `traits` is the weight type's row of the type table (the reference
// tile reads its vec_dot; SIMD tiles are specific to their type and ignore it).
// W (rows, cols) @ X^T (cols, n) -> out (n, rows) with row stride ldo
struct TileArgs {
  const uint8_t* w;
  size_t w_stride;
  int64_t rows;
  int64_t cols;
  const uint8_t* x;
  size_t x_stride;
  int64_t n;
  float* out;
  int64_t ldo;
  const KernelTraits* traits;
};
using TileFn = void (*)(const TileArgs& a);

// x (cols,) f32 -> activation blocks
using QuantizeQ8AFn = void (*)(const float* x, ActQ8A* y, int64_t cols);
using QuantizeQ8KFn = void (*)(const float* x, ActQ8K* y, int64_t cols);
// x (cols,) f32 -> y (cols,) f32, each rounded to the weights' 16-bit precision
using RoundFn = void (*)(const float* x, float* y, int64_t cols);
// gate (n,) = silu(gate) * up (n,): the gated FFN's activation, silu(g) = g / (1 + e^-g)
using GluFn = void (*)(float* gate, const float* up, int64_t n);

// Which columns of the type table (traits.h) a dispatch table reads.
enum class Isa : uint8_t { kScalar, kAvx2, kAvxVnni, kAvx512Vnni };

struct Dispatch {
  const char* name;  // "avx512vnni", "avxvnni", "avx2" or "scalar"
  Isa isa;
  int pack_rows;     // rows per packed group of this table's packed tiles (packing.h); 0: none
  QuantizeQ8AFn quantize_q8a;
  QuantizeQ8KFn quantize_q8k;
  RoundFn round_f16;
  RoundFn round_bf16;
  FlashFn flash;  // tiled attention (flash_attn.h)
  GluFn silu_mul;
  DeltaRowFn delta_row;  // Gated DeltaNet's chunked delta rule (delta_rule.h)
  DeltaEndFn delta_end;

  // The tile over the file layout for `type`: this instruction set's (AVX-512 ones where the
  // table and type have them, else AVX2), else the reference tile; nullptr for types the kernels
  // do not support.
  TileFn tile_for(gguf::TensorType type) const;
  // The tile over packed groups of pack_rows rows (kernels/packing.h) for `type`: TileArgs.w is
  // the first group, w_stride the bytes of a group, rows a multiple of pack_rows. nullptr when
  // this table has none for `type`, and then weights of that type stay in the file layout.
  TileFn packed_tile_for(gguf::TensorType type) const;
};

// The table for this CPU (detected on first call; thread-safe): the best one it runs, or the one
// the environment variable GGUFD_ISA names (choose_dispatch), read once. Throws
// std::invalid_argument when GGUFD_ISA is set to something this CPU can't run (every call
// until it is fixed: nothing is cached then).
const Dispatch& dispatch();
// The names GGUFD_ISA accepts, from the portable table to the widest.
inline constexpr std::string_view kIsaNames[] = {"scalar", "avx2", "avxvnni", "avx512vnni"};
// The tables this CPU runs, best first (the scalar one last, always there).
std::vector<const Dispatch*> available_dispatches();
// The table named `requested` (one of kIsaNames) among `available` (best first), or the best
// (the first) when `requested` is empty. Throws std::invalid_argument naming the value and what
// is allowed when it is no table's name, or what this CPU runs when `available` lacks it.
const Dispatch& choose_dispatch(std::string_view requested, std::span<const Dispatch* const> available);
// The portable scalar table (the reference; tests compare against it).
const Dispatch& scalar_dispatch();
// The AVX2+FMA+F16C table, or nullptr when this CPU lacks those features.
const Dispatch* avx2_dispatch();
// The AVX2 table with AVX-512 VNNI packed tiles, or nullptr without AVX-512 F/BW/VL/VNNI.
const Dispatch* avx512_dispatch();
// The AVX2 table with AVX-VNNI (VEX) packed tiles, or nullptr without avx_vnni.
const Dispatch* avxvnni_dispatch();

// Scalar tile over the reference vec_dot of the type in a.traits (any supported type).
void ref_tile(const TileArgs& a);

}  // namespace engine::kernels
