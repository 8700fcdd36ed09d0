// The portable parts of the tiled attention (flash_attn.h): the cache's row conversions and the
// online-softmax state helpers, shared by every instruction set.
#include "engine/kernels/flash_attn.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/kernels/blocks.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/flash_layout.h"

namespace engine::kernels {

size_t kv_bytes(KvElem elem, int64_t n) {
  switch (elem) {
    case KvElem::kF32: return static_cast<size_t>(n) * 4;
    case KvElem::kF16: return static_cast<size_t>(n) * 2;
    case KvElem::kQ8_0: return static_cast<size_t>(n / kQK) * sizeof(BlockQ8_0);
  }
  return 0;
}

void kv_store(KvElem elem, const float* x, void* dst, int64_t n) {
  switch (elem) {
    case KvElem::kF32: std::memcpy(dst, x, static_cast<size_t>(n) * 4); return;
    case KvElem::kF16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
      return;
    }
    case KvElem::kQ8_0: {
      auto* b = static_cast<BlockQ8_0*>(dst);
      for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) {
        float d;
        quantize_q8_block(x, b->qs, d);
        const uint16_t dh = fp32_to_fp16(d);
        std::memcpy(b->d, &dh, 2);
      }
      return;
    }
  }
}

void kv_load(KvElem elem, const void* src, float* y, int64_t n) {
  switch (elem) {
    case KvElem::kF32: std::memcpy(y, src, static_cast<size_t>(n) * 4); return;
    case KvElem::kF16: {
      const auto* h = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(h[i]);
      return;
    }
    case KvElem::kQ8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (int64_t i = 0; i < n / kQK; ++i, ++b, y += kQK) {
        const float d = load_fp16(b->d);
        for (int j = 0; j < kQK; ++j) y[j] = d * static_cast<float>(b->qs[j]);
      }
      return;
    }
  }
}

void quantize_q8_block(const float* x, int8_t* q, float& d) {
  float amax = 0.0f;
  for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
  d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
}

size_t flash_scratch_bytes(const FlashParams& p) { return FlashLayout(p).bytes; }

void flash_init(FlashState& st, int n, int64_t d_v) {
  std::fill(st.m, st.m + n, -std::numeric_limits<float>::infinity());
  std::fill(st.l, st.l + n, 0.0f);
  std::fill(st.o, st.o + n * d_v, 0.0f);
}

// With m = max(m_a, m_b): o = o_a e^(m_a - m) + o_b e^(m_b - m), l likewise (llama.cpp's
// reduction of its split-KV partials).
void flash_merge(FlashState& into, const FlashState& from, int n, int64_t d_v) {
  for (int r = 0; r < n; ++r) {
    if (from.l[r] == 0.0f) continue;  // saw no key
    const float m = std::max(into.m[r], from.m[r]);
    const float ca = std::exp(into.m[r] - m), cb = std::exp(from.m[r] - m);
    float* o = into.o + r * d_v;
    const float* ob = from.o + r * d_v;
    for (int64_t i = 0; i < d_v; ++i) o[i] = o[i] * ca + ob[i] * cb;
    into.l[r] = into.l[r] * ca + from.l[r] * cb;
    into.m[r] = m;
  }
}

void flash_finish(const FlashState& st, int n, int64_t d_v, const float* sinks, float* const* out) {
  for (int r = 0; r < n; ++r) {
    float l = st.l[r], c = 1.0f;
    if (sinks != nullptr) {  // the sink joins the softmax: a score with no value row
      const float s = sinks[r], m = st.m[r];
      if (s > m) {
        c = std::exp(m - s);
        l = l * c + 1.0f;
      } else {
        l += std::exp(s - m);
      }
    }
    const float inv = l == 0.0f ? 0.0f : c / l;
    const float* o = st.o + r * d_v;
    for (int64_t i = 0; i < d_v; ++i) out[r][i] = o[i] * inv;
  }
}

}  // namespace engine::kernels
