#include "engine/kernels/dispatch.h"

#include "engine/kernels/avx2.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/ref.h"
#include "engine/kernels/traits.h"

namespace engine::kernels {

void ref_tile(const TileArgs& a) {
  const VecDotFn vec_dot = a.traits->vec_dot;
  for (int64_t r = 0; r < a.rows; ++r) {
    const uint8_t* w = a.w + static_cast<size_t>(r) * a.w_stride;
    for (int64_t j = 0; j < a.n; ++j) {
      a.out[j * a.ldo + r] = vec_dot(w, a.x + static_cast<size_t>(j) * a.x_stride, a.cols);
    }
  }
}

TileFn Dispatch::tile_for(gguf::TensorType type) const {
  const KernelTraits* t = kernel_traits(type);
  if (t == nullptr) return nullptr;
  if (isa == Isa::kAvx512Vnni && t->avx512 != nullptr) return t->avx512;
  return isa != Isa::kScalar && t->avx2 != nullptr ? t->avx2 : ref_tile;
}

TileFn Dispatch::packed_tile_for(gguf::TensorType type) const {
  const KernelTraits* t = kernel_traits(type);
  if (t == nullptr || t->packed == nullptr) return nullptr;
  switch (isa) {
    case Isa::kScalar: return nullptr;
    case Isa::kAvx2: return t->packed_tiles.avx2;
    case Isa::kAvxVnni: return t->packed_tiles.avxvnni;
    case Isa::kAvx512Vnni: return t->packed_tiles.avx512vnni;
  }
  return nullptr;
}

const Dispatch& scalar_dispatch() {
  static const Dispatch table{"scalar", Isa::kScalar, 0, ref::quantize_q8a, ref::quantize_q8k, ref::round_f16, ref::round_bf16,
                              ref::flash_block, ref::silu_mul};
  return table;
}

const Dispatch* avx2_dispatch() {
  static const Dispatch table{"avx2", Isa::kAvx2, 8, avx2::quantize_q8a, avx2::quantize_q8k, avx2::round_f16, avx2::round_bf16,
                              avx2::flash_block, avx2::silu_mul};
  const CpuFeatures& f = cpu_features();
  return (f.avx2 && f.fma && f.f16c) ? &table : nullptr;
}

const Dispatch* avx512_dispatch() {
  static const Dispatch table{"avx512vnni", Isa::kAvx512Vnni, 16, avx2::quantize_q8a, avx2::quantize_q8k, avx2::round_f16, avx2::round_bf16,
                               avx512vnni::flash_block, avx2::silu_mul};
  const CpuFeatures& f = cpu_features();
  return avx2_dispatch() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni ? &table : nullptr;
}

const Dispatch* avxvnni_dispatch() {
  static const Dispatch table{"avxvnni", Isa::kAvxVnni, 8, avx2::quantize_q8a, avx2::quantize_q8k, avx2::round_f16, avx2::round_bf16,
                               avxvnni::flash_block, avx2::silu_mul};
  return avx2_dispatch() && cpu_features().avx_vnni ? &table : nullptr;
}

// AVX-512 VNNI before AVX-VNNI: the same ymm instruction, and a CPU with both runs either.
const Dispatch& dispatch() {
  static const Dispatch& chosen = avx512_dispatch()    ? *avx512_dispatch()
                                  : avxvnni_dispatch() ? *avxvnni_dispatch()
                                  : avx2_dispatch()    ? *avx2_dispatch()
                                                       : scalar_dispatch();
  return chosen;
}

}  // namespace engine::kernels
