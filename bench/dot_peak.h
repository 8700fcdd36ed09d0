// The machine's int8 dot-product peak, per instruction: what bench/kernels_bench sets each
// kernel's GMAC/s against, as tools/membw's probe is what it sets the GB/s against.
#pragma once

#include "engine/kernels/dispatch.h"

namespace bench {

// The u8 x s8 multiply-add a dispatch table's packed tiles are built on.
enum class DotInsn {
  kNone,            // the scalar table
  kMaddubsYmm,      // avx2: vpmaddubsw + vpmaddwd (by ones) + vpaddd, 32 MACs per vpmaddubsw
  kVpdpbusdYmm,     // avxvnni: VEX vpdpbusd ymm, 32 MACs
  kVpdpbusdZmm,     // avx512vnni: EVEX vpdpbusd zmm, 64 MACs
};

// "vpmaddubsw ymm", "vpdpbusd ymm", "vpdpbusd zmm" ("none" for kNone).
const char* dot_insn_name(DotInsn insn);

// The instruction of a table's packed tiles (its file-layout tiles are the AVX2 ones on every
// SIMD table).
DotInsn dot_insn_of(engine::kernels::Isa isa);

// Whether this CPU (and OS) runs `insn`.
bool cpu_has(DotInsn insn);

// Best of a few timed runs of a loop that keeps `insn` busy on values in registers only (many
// independent accumulators, operands made opaque to the compiler so nothing is hoisted), on
// `threads` threads at once, each its own loop: GMAC/s (1e9 multiply-adds per second) summed over
// the threads. 0 when the CPU lacks the instruction. Takes about 0.5 s.
double int8_dot_peak_gmacs(DotInsn insn, int threads);

}  // namespace bench
