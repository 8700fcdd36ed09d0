#include "bench/dot_peak.h"

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/thread_pool.h"

namespace bench {

namespace {

// Each loop: `iters` (>= 1) rounds of independent accumulations, more of them than latency x
// throughput of the instruction needs (5 cycles x 2 per cycle on current cores). Written in asm so
// the loop is exactly these instructions on registers, whatever the compiler: no loads, no spills,
// nothing hoisted. The operands are all-ones bytes (u8 255 x s8 -1); the sums are thrown away.

#define GGUFD_DP_ZMM(acc) "vpdpbusd %%zmm1, %%zmm0, %%zmm" #acc "\n\t"
#define GGUFD_DP_YMM(acc) "%{vex%} vpdpbusd %%ymm1, %%ymm0, %%ymm" #acc "\n\t"
// one u8 x s8 product into a temporary, pairs summed to int32 (by ones), added to an accumulator
#define GGUFD_MADDUBS(acc, tmp)                       \
  "vpmaddubsw %%ymm1, %%ymm0, %%ymm" #tmp "\n\t"    \
  "vpmaddwd %%ymm15, %%ymm" #tmp ", %%ymm" #tmp "\n\t" \
  "vpaddd %%ymm" #tmp ", %%ymm" #acc ", %%ymm" #acc "\n\t"

constexpr int kAccZmm = 16;     // zmm2..zmm17, 64 MACs each
constexpr int kAccYmm = 12;     // ymm2..ymm13, 32 MACs each
constexpr int kAccMaddubs = 6;  // ymm2..ymm7 (temporaries ymm8..ymm13, ones in ymm15), 32 MACs each

__attribute__((target("avx512f,avx512bw,avx512vnni"))) void loop_vpdpbusd_zmm(int64_t iters) {
  __asm__ volatile(
      "vpternlogd $0xff, %%zmm0, %%zmm0, %%zmm0\n\t"
      "vmovdqa64 %%zmm0, %%zmm1\n\t"
      "1:\n\t" GGUFD_DP_ZMM(2) GGUFD_DP_ZMM(3) GGUFD_DP_ZMM(4) GGUFD_DP_ZMM(5) GGUFD_DP_ZMM(6) GGUFD_DP_ZMM(7)
      GGUFD_DP_ZMM(8) GGUFD_DP_ZMM(9) GGUFD_DP_ZMM(10) GGUFD_DP_ZMM(11) GGUFD_DP_ZMM(12) GGUFD_DP_ZMM(13)
      GGUFD_DP_ZMM(14) GGUFD_DP_ZMM(15) GGUFD_DP_ZMM(16) GGUFD_DP_ZMM(17)
      "dec %0\n\t"
      "jnz 1b\n\t"
      : "+r"(iters)
      :
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm14", "xmm15", "xmm16", "xmm17");
}

__attribute__((target("avx2,avxvnni"))) void loop_vpdpbusd_ymm(int64_t iters) {
  __asm__ volatile(
      "vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n\t"
      "vmovdqa %%ymm0, %%ymm1\n\t"
      "1:\n\t" GGUFD_DP_YMM(2) GGUFD_DP_YMM(3) GGUFD_DP_YMM(4) GGUFD_DP_YMM(5) GGUFD_DP_YMM(6) GGUFD_DP_YMM(7)
      GGUFD_DP_YMM(8) GGUFD_DP_YMM(9) GGUFD_DP_YMM(10) GGUFD_DP_YMM(11) GGUFD_DP_YMM(12) GGUFD_DP_YMM(13)
      "dec %0\n\t"
      "jnz 1b\n\t"
      : "+r"(iters)
      :
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13");
}

__attribute__((target("avx2"))) void loop_maddubs_ymm(int64_t iters) {
  __asm__ volatile(
      "vpcmpeqd %%ymm0, %%ymm0, %%ymm0\n\t"
      "vmovdqa %%ymm0, %%ymm1\n\t"
      "vpabsw %%ymm0, %%ymm15\n\t"  // int16 ones
      "1:\n\t" GGUFD_MADDUBS(2, 8) GGUFD_MADDUBS(3, 9) GGUFD_MADDUBS(4, 10) GGUFD_MADDUBS(5, 11)
      GGUFD_MADDUBS(6, 12) GGUFD_MADDUBS(7, 13)
      "dec %0\n\t"
      "jnz 1b\n\t"
      : "+r"(iters)
      :
      : "cc", "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",
        "xmm12", "xmm13", "xmm15");
}

#undef GGUFD_DP_ZMM
#undef GGUFD_DP_YMM
#undef GGUFD_MADDUBS

// The loop of `insn` and its multiply-adds per round.
struct Loop {
  void (*fn)(int64_t iters);
  double macs_per_iter;
};

Loop loop_of(DotInsn insn) {
  switch (insn) {
    case DotInsn::kVpdpbusdZmm: return {loop_vpdpbusd_zmm, kAccZmm * 64.0};
    case DotInsn::kVpdpbusdYmm: return {loop_vpdpbusd_ymm, kAccYmm * 32.0};
    case DotInsn::kMaddubsYmm: return {loop_maddubs_ymm, kAccMaddubs * 32.0};
    case DotInsn::kNone: break;
  }
  return {nullptr, 0};
}

}  // namespace

const char* dot_insn_name(DotInsn insn) {
  switch (insn) {
    case DotInsn::kMaddubsYmm: return "vpmaddubsw ymm";
    case DotInsn::kVpdpbusdYmm: return "vpdpbusd ymm";
    case DotInsn::kVpdpbusdZmm: return "vpdpbusd zmm";
    case DotInsn::kNone: break;
  }
  return "none";
}

DotInsn dot_insn_of(engine::kernels::Isa isa) {
  switch (isa) {
    case engine::kernels::Isa::kAvx2: return DotInsn::kMaddubsYmm;
    case engine::kernels::Isa::kAvxVnni: return DotInsn::kVpdpbusdYmm;
    case engine::kernels::Isa::kAvx512Vnni: return DotInsn::kVpdpbusdZmm;
    case engine::kernels::Isa::kScalar: break;
  }
  return DotInsn::kNone;
}

bool cpu_has(DotInsn insn) {
  const engine::CpuFeatures& f = engine::cpu_features();
  switch (insn) {
    case DotInsn::kMaddubsYmm: return f.avx2;
    case DotInsn::kVpdpbusdYmm: return f.avx2 && f.avx_vnni;
    case DotInsn::kVpdpbusdZmm: return f.avx512f && f.avx512bw && f.avx512_vnni;
    case DotInsn::kNone: break;
  }
  return false;
}

double int8_dot_peak_gmacs(DotInsn insn, int threads) {
  const Loop loop = loop_of(insn);
  if (loop.fn == nullptr || !cpu_has(insn)) return 0;
  engine::ThreadPool pool(threads);
  auto timed = [&](int64_t iters) {
    const auto t0 = std::chrono::steady_clock::now();
    pool.run([&](int, int) { loop.fn(iters); });
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  int64_t iters = 1 << 12;
  while (timed(iters) < 0.02 && iters < (int64_t{1} << 40)) iters *= 2;  // ~20-40 ms per run
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    const double s = timed(iters);
    best = std::max(best, loop.macs_per_iter * static_cast<double>(iters) * pool.size() / s / 1e9);
  }
  return best;
}

}  // namespace bench
