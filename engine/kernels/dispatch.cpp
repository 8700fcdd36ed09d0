#include "engine/kernels/dispatch.h"

#include "engine/kernels/avx2.h"
#include "engine/kernels/avx512.h"
#include "engine/kernels/avxvnni.h"
#include "engine/kernels/cpu_features.h"
#include "engine/kernels/ref.h"
#include "engine/kernels/traits.h"

namespace engine::kernels {

namespace {

// One scalar tile per type, so a table entry is a plain function pointer.
template <gguf::TensorType T>
void ref_tile_of(const TileArgs& a) {
  ref_tile(T, a);
}

TileFn scalar_tile_for(gguf::TensorType type) {
  using gguf::TensorType;
  switch (type) {
#define GGUFD_REF_TILE(T) \
  case TensorType::T: return ref_tile_of<TensorType::T>;
    GGUFD_REF_TILE(F32) GGUFD_REF_TILE(F16) GGUFD_REF_TILE(BF16)
    GGUFD_REF_TILE(Q4_0) GGUFD_REF_TILE(Q4_1) GGUFD_REF_TILE(Q5_0) GGUFD_REF_TILE(Q5_1)
    GGUFD_REF_TILE(Q8_0) GGUFD_REF_TILE(IQ4_NL) GGUFD_REF_TILE(Q2_K) GGUFD_REF_TILE(Q3_K)
    GGUFD_REF_TILE(Q4_K) GGUFD_REF_TILE(Q5_K) GGUFD_REF_TILE(Q6_K) GGUFD_REF_TILE(IQ4_XS)
#undef GGUFD_REF_TILE
    default: return nullptr;
  }
}

TileFn no_packed_tile(gguf::TensorType) { return nullptr; }

}  // namespace

void ref_tile(gguf::TensorType type, const TileArgs& a) {
  const KernelTraits* t = kernel_traits(type);
  for (int64_t r = 0; r < a.rows; ++r) {
    const uint8_t* w = a.w + static_cast<size_t>(r) * a.w_stride;
    for (int64_t j = 0; j < a.n; ++j) {
      a.out[j * a.ldo + r] = t->vec_dot(w, a.x + static_cast<size_t>(j) * a.x_stride, a.cols);
    }
  }
}

const Dispatch& scalar_dispatch() {
  static const Dispatch table{"scalar", ref::quantize_q8a, ref::quantize_q8k, scalar_tile_for,
                               &ref::attn_ops(), no_packed_tile};
  return table;
}

const Dispatch* avx2_dispatch() {
  static const Dispatch table{"avx2", avx2::quantize_q8a, avx2::quantize_q8k, avx2::tile_for,
                               &avx2::attn_ops(), avx2::packed_tile_for};
  const CpuFeatures& f = cpu_features();
  return (f.avx2 && f.fma && f.f16c) ? &table : nullptr;
}

const Dispatch* avx512_dispatch() {
  static const Dispatch table{"avx512vnni", avx2::quantize_q8a, avx2::quantize_q8k, avx2::tile_for,
                               &avx2::attn_ops(), avx512vnni::packed_tile_for};
  const CpuFeatures& f = cpu_features();
  return avx2_dispatch() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni ? &table : nullptr;
}

const Dispatch* avxvnni_dispatch() {
  static const Dispatch table{"avxvnni", avx2::quantize_q8a, avx2::quantize_q8k, avx2::tile_for,
                               &avx2::attn_ops(), avxvnni::packed_tile_for};
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
