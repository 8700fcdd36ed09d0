#include "engine/kernels/dispatch.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <iterator>
#include <stdexcept>
#include <string>

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
                              ref::flash_block, ref::silu_mul, ref::delta_row, ref::delta_end};
  return table;
}

const Dispatch* avx2_dispatch() {
  static const Dispatch table{"avx2", Isa::kAvx2, 8, avx2::quantize_q8a, avx2::quantize_q8k, avx2::round_f16, avx2::round_bf16,
                              avx2::flash_block, avx2::silu_mul, avx2::delta_row, avx2::delta_end};
  const CpuFeatures& f = cpu_features();
  return (f.avx2 && f.fma && f.f16c) ? &table : nullptr;
}

const Dispatch* avx512_dispatch() {
  static const Dispatch table{"avx512vnni", Isa::kAvx512Vnni, 16, avx2::quantize_q8a, avx2::quantize_q8k, avx2::round_f16, avx2::round_bf16,
                               avx512vnni::flash_block, avx2::silu_mul, avx2::delta_row, avx2::delta_end};
  const CpuFeatures& f = cpu_features();
  return avx2_dispatch() && f.avx512f && f.avx512bw && f.avx512vl && f.avx512_vnni ? &table : nullptr;
}

const Dispatch* avxvnni_dispatch() {
  static const Dispatch table{"avxvnni", Isa::kAvxVnni, 8, avx2::quantize_q8a, avx2::quantize_q8k, avx2::round_f16, avx2::round_bf16,
                               avxvnni::flash_block, avx2::silu_mul, avx2::delta_row, avx2::delta_end};
  return avx2_dispatch() && cpu_features().avx_vnni ? &table : nullptr;
}

// AVX-512 VNNI before AVX-VNNI: the same ymm instruction, and a CPU with both runs either.
std::vector<const Dispatch*> available_dispatches() {
  std::vector<const Dispatch*> tables;
  for (const Dispatch* t : {avx512_dispatch(), avxvnni_dispatch(), avx2_dispatch()}) {
    if (t != nullptr) tables.push_back(t);
  }
  tables.push_back(&scalar_dispatch());
  return tables;
}

namespace {

// `v` as an error message may show it: quoted, at most 32 characters, unprintable bytes as '?'.
std::string quoted(std::string_view v) {
  std::string q = "\"";
  for (size_t i = 0; i < v.size() && i < 32; ++i) q += std::isprint(static_cast<unsigned char>(v[i])) ? v[i] : '?';
  return q + (v.size() > 32 ? "...\"" : "\"");
}

}  // namespace

const Dispatch& choose_dispatch(std::string_view requested, std::span<const Dispatch* const> available) {
  if (requested.empty()) return *available.front();
  for (const Dispatch* t : available) {
    if (t->name == requested) return *t;
  }
  std::string names;
  const bool known = std::find(std::begin(kIsaNames), std::end(kIsaNames), requested) != std::end(kIsaNames);
  if (known) {
    for (const Dispatch* t : available) names += std::string(names.empty() ? "" : ", ") + t->name;
    throw std::invalid_argument("GGUFD_ISA=" + quoted(requested) + ": this CPU can't run that instruction set (" +
                                cpu_features().to_string() + "); it runs " + names);
  }
  for (std::string_view n : kIsaNames) names += std::string(names.empty() ? "" : ", ") + std::string(n);
  throw std::invalid_argument("GGUFD_ISA=" + quoted(requested) + ": unknown instruction set; expected one of " + names +
                              " (or unset: the best this CPU runs)");
}

const Dispatch& dispatch() {
  static const Dispatch& chosen = [] () -> const Dispatch& {
    const char* isa = std::getenv("GGUFD_ISA");
    return choose_dispatch(isa != nullptr ? isa : "", available_dispatches());
  }();
  return chosen;
}

}  // namespace engine::kernels
