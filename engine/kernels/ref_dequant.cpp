// Scalar dequantization: W row (cols,) -> y (cols,). The bit-exact spec of every block layout.
#include <cstring>

#include "engine/kernels/blocks.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/ref.h"

namespace engine::kernels::ref {

void dequant_f32(const void* row, float* y, int64_t cols) {
  std::memcpy(y, row, static_cast<size_t>(cols) * sizeof(float));
}

void dequant_f16(const void* row, float* y, int64_t cols) {
  const auto* p = static_cast<const uint8_t*>(row);
  for (int64_t i = 0; i < cols; ++i) y[i] = load_fp16(p + 2 * i);
}

void dequant_bf16(const void* row, float* y, int64_t cols) {
  const auto* p = static_cast<const uint8_t*>(row);
  for (int64_t i = 0; i < cols; ++i) y[i] = bf16_to_fp32(load_u16(p + 2 * i));
}

void dequant_q4_0(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ4_0*>(row);
  for (int64_t i = 0; i < cols / kQK; ++i, ++b, y += kQK) {
    const float d = load_fp16(b->d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>((b->qs[j] & 0xf) - 8);
      y[j + 16] = d * static_cast<float>((b->qs[j] >> 4) - 8);
    }
  }
}

void dequant_q4_1(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ4_1*>(row);
  for (int64_t i = 0; i < cols / kQK; ++i, ++b, y += kQK) {
    const float d = load_fp16(b->d);
    const float m = load_fp16(b->m);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(b->qs[j] & 0xf) + m;
      y[j + 16] = d * static_cast<float>(b->qs[j] >> 4) + m;
    }
  }
}

// Element j's fifth bit is bit j of qh (elements 0..15 low nibbles, 16..31 high nibbles).
void dequant_q5_0(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ5_0*>(row);
  for (int64_t i = 0; i < cols / kQK; ++i, ++b, y += kQK) {
    const float d = load_fp16(b->d);
    const uint32_t qh = load_u32(b->qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b->qs[j] & 0xf) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b->qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      y[j] = d * static_cast<float>(lo - 16);
      y[j + 16] = d * static_cast<float>(hi - 16);
    }
  }
}

void dequant_q5_1(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ5_1*>(row);
  for (int64_t i = 0; i < cols / kQK; ++i, ++b, y += kQK) {
    const float d = load_fp16(b->d);
    const float m = load_fp16(b->m);
    const uint32_t qh = load_u32(b->qh);
    for (int j = 0; j < 16; ++j) {
      const int lo = (b->qs[j] & 0xf) | static_cast<int>(((qh >> j) & 1) << 4);
      const int hi = (b->qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1) << 4);
      y[j] = d * static_cast<float>(lo) + m;
      y[j + 16] = d * static_cast<float>(hi) + m;
    }
  }
}

void dequant_q8_0(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ8_0*>(row);
  for (int64_t i = 0; i < cols / kQK; ++i, ++b, y += kQK) {
    const float d = load_fp16(b->d);
    for (int j = 0; j < 32; ++j) y[j] = d * static_cast<float>(b->qs[j]);
  }
}

void dequant_iq4_nl(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockIQ4_NL*>(row);
  for (int64_t i = 0; i < cols / kQK; ++i, ++b, y += kQK) {
    const float d = load_fp16(b->d);
    for (int j = 0; j < 16; ++j) {
      y[j] = d * static_cast<float>(kIq4nlValues[b->qs[j] & 0xf]);
      y[j + 16] = d * static_cast<float>(kIq4nlValues[b->qs[j] >> 4]);
    }
  }
}

// Each 128-element half uses 32 qs bytes; element 32*s + l of the half is bits 2s..2s+1 of
// qs[l]; sub-block (16 elements) k of the super-block uses scales[k].
void dequant_q2_k(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ2_K*>(row);
  for (int64_t i = 0; i < cols / kQKK; ++i, ++b) {
    const float d = load_fp16(b->d);
    const float dmin = load_fp16(b->dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int half = e / 128, s = (e % 128) / 32, l = e % 32;
      const int q = (b->qs[32 * half + l] >> (2 * s)) & 3;
      const uint8_t sc = b->scales[e / 16];
      *y++ = d * static_cast<float>(sc & 0xf) * static_cast<float>(q) -
             dmin * static_cast<float>(sc >> 4);
    }
  }
}

// As Q2_K for the low bits; the high bit of element e is bit (e / 32) of hmask[e % 32].
void dequant_q3_k(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ3_K*>(row);
  for (int64_t i = 0; i < cols / kQKK; ++i, ++b) {
    const float d = load_fp16(b->d);
    int8_t sc[16];
    q3k_scales(b->scales, sc);
    for (int e = 0; e < kQKK; ++e) {
      const int half = e / 128, s = (e % 128) / 32, l = e % 32;
      const int lo = (b->qs[32 * half + l] >> (2 * s)) & 3;
      const int hbit = (b->hmask[l] >> (e / 32)) & 1;
      *y++ = d * static_cast<float>(sc[e / 16]) * static_cast<float>(lo + 4 * hbit - 4);
    }
  }
}

// 64-element chunk c uses qs[32c..32c+31]: low nibbles are sub-block 2c, high nibbles 2c+1.
void dequant_q4_k(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ4_K*>(row);
  for (int64_t i = 0; i < cols / kQKK; ++i, ++b) {
    const float d = load_fp16(b->d);
    const float dmin = load_fp16(b->dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int sub = e / 32, l = e % 32;
      const uint8_t byte = b->qs[32 * (sub / 2) + l];
      const int q = (sub % 2) ? (byte >> 4) : (byte & 0xf);
      uint8_t sc, mn;
      k4_scale_min(b->scales, sub, sc, mn);
      *y++ = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(mn);
    }
  }
}

// As Q4_K; the fifth bit of element e is bit (e / 32) of qh[e % 32].
void dequant_q5_k(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ5_K*>(row);
  for (int64_t i = 0; i < cols / kQKK; ++i, ++b) {
    const float d = load_fp16(b->d);
    const float dmin = load_fp16(b->dmin);
    for (int e = 0; e < kQKK; ++e) {
      const int sub = e / 32, l = e % 32;
      const uint8_t byte = b->qs[32 * (sub / 2) + l];
      const int q = ((sub % 2) ? (byte >> 4) : (byte & 0xf)) | (((b->qh[l] >> sub) & 1) << 4);
      uint8_t sc, mn;
      k4_scale_min(b->scales, sub, sc, mn);
      *y++ = d * static_cast<float>(sc) * static_cast<float>(q) - dmin * static_cast<float>(mn);
    }
  }
}

// 128-element half h uses ql[64h..64h+63] and qh[32h..32h+31]. Within the half, element
// 32*s + l: low 4 bits from ql[64h + l + 32*(s&1)] (nibble s>>1), high 2 bits from
// qh[32h + l] bits 2s..2s+1.
void dequant_q6_k(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockQ6_K*>(row);
  for (int64_t i = 0; i < cols / kQKK; ++i, ++b) {
    const float d = load_fp16(b->d);
    for (int e = 0; e < kQKK; ++e) {
      const int h = e / 128, s = (e % 128) / 32, l = e % 32;
      const uint8_t lbyte = b->ql[64 * h + l + 32 * (s & 1)];
      const int lo = (s >> 1) ? (lbyte >> 4) : (lbyte & 0xf);
      const int hi = (b->qh[32 * h + l] >> (2 * s)) & 3;
      const int q = (lo | (hi << 4)) - 32;
      *y++ = d * static_cast<float>(b->scales[e / 16]) * static_cast<float>(q);
    }
  }
}

void dequant_iq4_xs(const void* row, float* y, int64_t cols) {
  const auto* b = static_cast<const BlockIQ4_XS*>(row);
  for (int64_t i = 0; i < cols / kQKK; ++i, ++b) {
    const float d = load_fp16(b->d);
    const uint16_t sh = load_u16(b->scales_h);
    for (int sub = 0; sub < 8; ++sub, y += 32) {
      const int ls = ((b->scales_l[sub / 2] >> (4 * (sub % 2))) & 0xf) | (((sh >> (2 * sub)) & 3) << 4);
      const float dl = d * static_cast<float>(ls - 32);
      const uint8_t* qs = b->qs + 16 * sub;
      for (int j = 0; j < 16; ++j) {
        y[j] = dl * static_cast<float>(kIq4nlValues[qs[j] & 0xf]);
        y[j + 16] = dl * static_cast<float>(kIq4nlValues[qs[j] >> 4]);
      }
    }
  }
}

}  // namespace engine::kernels::ref
