// How the flash kernels carve their per-thread scratch (flash_attn.h): one layout for the
// reference and the SIMD kernels, so flash_scratch_bytes() fits both. Kernel-internal.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/blocks.h"
#include "engine/kernels/flash_attn.h"
#include "engine/kernels/fp16.h"

namespace engine::kernels {

// A query's 32-element block for Q8_0 keys, as ggml quantizes it for vec_dot (its Q8_0 with the
// scale rounded to f16): x ~ d * qs.
struct FlashQ8 {
  float d;
  int8_t qs[32];
};

// qs / d of x (d_k,) -> d_k / 32 blocks (the scalar definition; SIMD copies match it bit for bit).
inline void flash_quantize_query(const float* x, FlashQ8* y, int64_t d_k) {
  for (int64_t c = 0; c < d_k / kQK; ++c) {
    float d;
    quantize_q8_block(x + c * kQK, y[c].qs, d);
    y[c].d = fp16_to_fp32(fp32_to_fp16(d));
  }
}

struct FlashLayout {
  // Byte offsets into the scratch, each region 64-byte aligned.
  size_t qf;     // (kFlashRows, d_k) f32: the tile's queries (f16-rounded in the f16 accumulation)
  size_t q8;     // (kFlashRows, d_k / 32) FlashQ8: the queries quantized (Q8_0 keys)
  size_t qa;     // (kFlashRows, d_k) uint8: |q8 quants| (the unsigned operand of the byte dots)
  size_t kt;     // (d_k, kFlashKeys) f32: a block's K rows, transposed (keys contiguous)
  size_t kd;     // (d_k / 32, kFlashKeys) f32: a block's Q8_0 K scales, transposed
  size_t vf;     // (kFlashKeys, d_v) f32: a block's V rows
  size_t s;      // (kFlashRows, kFlashKeys) f32: scores, then probabilities
  size_t seq;    // (2, kFlashKeys) f32: per-key weights of the f16 accumulation (vs, ms)
  size_t bytes;  // total

  explicit FlashLayout(const FlashParams& p) {
    size_t at = 0;
    auto take = [&at](size_t n) {
      const size_t off = at;
      at += (n + 63) / 64 * 64;
      return off;
    };
    const size_t dk = static_cast<size_t>(p.d_k), dv = static_cast<size_t>(p.d_v);
    qf = take(kFlashRows * dk * sizeof(float));
    q8 = take(kFlashRows * (dk / 32 + 1) * sizeof(FlashQ8));
    qa = take(kFlashRows * dk);
    kt = take(dk * kFlashKeys * sizeof(float));
    kd = take((dk / 32 + 1) * kFlashKeys * sizeof(float));
    vf = take(kFlashKeys * dv * sizeof(float));
    s = take(kFlashRows * kFlashKeys * sizeof(float));
    seq = take(2 * kFlashKeys * sizeof(float));
    bytes = at;
  }

  template <typename T>
  static T* at(void* scratch, size_t off) {
    return reinterpret_cast<T*>(static_cast<uint8_t*>(scratch) + off);
  }
};

// The end of the block that starts at key j0 (at most k1): keys whose positions fall in the same
// kFlashKeys-aligned window of positions as key j0's (of indices, without positions).
inline int64_t flash_block_end(const FlashKv& kv, int64_t j0, int64_t k1) {
  if (kv.pos == nullptr) {
    const int64_t e = (j0 / kFlashKeys + 1) * kFlashKeys;
    return e < k1 ? e : k1;
  }
  const int64_t limit = (static_cast<int64_t>(kv.pos[j0]) / kFlashKeys + 1) * kFlashKeys;
  int64_t e = j0 + 1;
  while (e < k1 && kv.pos[e] < limit) ++e;
  return e;
}

// Whether a query at q_pos sees the key at k_pos.
// q_see: the last position it sees (q_pos but for non-causal spans, FlashQuery::see).
inline bool flash_visible(const FlashParams& p, int32_t q_pos, int32_t q_see, int32_t k_pos) {
  return k_pos <= q_see && (p.window == 0 || static_cast<int64_t>(q_pos) - k_pos < p.window);
}

inline const uint8_t* flash_k_row(const FlashKv& kv, int64_t j) {
  return kv.k + static_cast<size_t>(kv.cells ? kv.cells[j] : j) * kv.k_stride;
}
inline const uint8_t* flash_v_row(const FlashKv& kv, int64_t j) {
  return kv.v + static_cast<size_t>(kv.cells ? kv.cells[j] : j) * kv.v_stride;
}

}  // namespace engine::kernels
