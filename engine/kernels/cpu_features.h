// What the CPU running us can do, read once through CPUID (and XGETBV for OS register support).
#pragma once

#include <string>

namespace engine {

struct CpuFeatures {
  bool sse42 = false;
  bool avx = false;
  bool avx2 = false;
  bool fma = false;
  bool f16c = false;
  bool avx_vnni = false;      // VEX-encoded vpdpbusd (ymm)
  bool avx512f = false;
  bool avx512bw = false;
  bool avx512vl = false;
  bool avx512_vnni = false;
  bool avx512_bf16 = false;
  bool amx_int8 = false;      // hardware support; the OS permission is requested separately

  // "avx2 fma f16c avx512f ..." — the features present, for banners and /props.
  std::string to_string() const;
};

// Detected on first call; thread-safe.
const CpuFeatures& cpu_features();

}  // namespace engine
