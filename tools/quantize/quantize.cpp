// Reference weight quantizers (f32 -> ggml blocks). Layouts and value formulas: blocks.h and
// ref_dequant.cpp; each packer below is the exact inverse of the matching ref::dequant_*.
#include "tools/quantize/quantize.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

#include "engine/kernels/blocks.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/ref.h"
#include "engine/kernels/traits.h"

namespace engine::quantize {

using namespace engine::kernels;  // block layouts, fp16, the reference dequantizers

namespace {

// Branch-free rounding helpers for the hot loops (lrintf is a library call and integer clamps
// compile to mispredicted branches). round_near: nearest integer, ties to even, exact for
// |v| < 2^22 (v is clamped there first; no -ffast-math here, so the add/sub pair is kept).
float clampf(float v, float lo, float hi) { return std::min(std::max(v, lo), hi); }
float round_near(float v) { return (clampf(v, -4.0e6f, 4.0e6f) + 12582912.0f) - 12582912.0f; }
// round(v) clamped to [lo, hi], as a float.
float qclamp(float v, float lo, float hi) { return clampf(round_near(v), lo, hi); }
int nearest(float v) { return static_cast<int>(round_near(v)); }
int clampi(int v, int lo, int hi) { return std::min(hi, std::max(lo, v)); }

void store_fp16(uint8_t* dst, float v) {
  const uint16_t h = fp32_to_fp16(v);
  std::memcpy(dst, &h, sizeof h);
}

// Stores v as fp16 and returns the value a reader will see.
float store_fp16_read(uint8_t* dst, float v) {
  store_fp16(dst, v);
  return load_fp16(dst);
}

// The element of largest magnitude, with its sign (0 for an all-zero block).
float signed_absmax(const float* x, int n) {
  float amax = 0.0f, mx = 0.0f;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      mx = x[i];
    }
  }
  return mx;
}

// Affine fit x ~= scale * l - mn with l in [0, nmax] and mn >= 0 (as in the K-quant sub-blocks):
// stretched min-max grids, each refit by least squares; keeps the best SSE (computed from the
// sums, with each grid's own codes).
float fit_affine(const float* x, int n, int nmax, float* mn) {
  float lo = 0.0f, hi = x[0], sx = 0.0f, sx2 = 0.0f;
  for (int i = 0; i < n; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sx += x[i];
    sx2 += x[i] * x[i];
  }
  *mn = -lo;
  if (!(hi > lo)) return 0.0f;
  const auto fn = static_cast<float>(n), fmax = static_cast<float>(nmax);
  float best_scale = (hi - lo) / static_cast<float>(nmax), best_min = lo, best_err = INFINITY;
  for (int step = 0; step <= 4; ++step) {
    const float iscale = (static_cast<float>(nmax) - 1.0f + 0.5f * static_cast<float>(step)) / (hi - lo);
    float sl = 0, sl2 = 0, slx = 0;
    for (int i = 0; i < n; ++i) {
      const float l = qclamp(iscale * (x[i] - lo), 0.0f, fmax);
      sl += l;
      sl2 += l * l;
      slx += l * x[i];
    }
    const float det = fn * sl2 - sl * sl;
    if (!(det > 0.0f)) continue;
    float scale = (fn * slx - sl * sx) / det;
    float min = (sl2 * sx - sl * slx) / det;
    if (min > 0.0f) {
      min = 0.0f;
      scale = slx / sl2;
    }
    if (!(scale > 0.0f)) continue;
    const float err = scale * scale * sl2 + 2 * scale * min * sl - 2 * scale * slx + fn * min * min -
                      2 * min * sx + sx2;
    if (err < best_err) {
      best_err = err;
      best_scale = scale;
      best_min = min;
    }
  }
  *mn = -best_min;
  return best_scale;
}

// Symmetric fit x ~= scale * l with l in [-nmax, nmax - 1]: maximizes (x.l)^2 / (l.l) over a few
// grids around "largest magnitude maps to -nmax". Returns a signed scale (0 for all zeros).
float fit_symmetric(const float* x, int n, int nmax) {
  const float mx = signed_absmax(x, n);
  if (mx == 0.0f) return 0.0f;
  const auto fmax = static_cast<float>(nmax);
  float best_scale = -mx / fmax, best_score = -1.0f;
  for (int t = -3; t <= 3; ++t) {
    const float iscale = -(static_cast<float>(nmax) + 0.2f * static_cast<float>(t)) / mx;
    float slx = 0, sl2 = 0;
    for (int i = 0; i < n; ++i) {
      const float l = qclamp(iscale * x[i], -fmax, fmax - 1.0f);
      slx += l * x[i];
      sl2 += l * l;
    }
    if (sl2 > 0.0f && slx * slx / sl2 > best_score) {
      best_score = slx * slx / sl2;
      best_scale = slx / sl2;
    }
  }
  return best_scale;
}

// Index of the IQ4_NL level nearest to v (v rounded to an integer first; levels are integers).
struct NlTable {
  uint8_t index[256];  // [v + 128]
  NlTable() {
    for (int v = -128; v < 128; ++v) {
      int best = 0;
      for (int k = 1; k < 16; ++k) {
        if (std::abs(v - kIq4nlValues[k]) < std::abs(v - kIq4nlValues[best])) best = k;
      }
      index[v + 128] = static_cast<uint8_t>(best);
    }
  }
};
const NlTable kNlTable;

int nl_index(float v) { return kNlTable.index[static_cast<int>(qclamp(v, -128.0f, 127.0f)) + 128]; }

// Scale d for x ~= d * kIq4nlValues[idx]: grid search around "largest magnitude maps to -127",
// each candidate refit by least squares.
float fit_nl(const float* x, int n) {
  const float mx = signed_absmax(x, n);
  if (mx == 0.0f) return 0.0f;
  float best_d = mx / static_cast<float>(kIq4nlValues[0]), best_score = -1.0f;
  for (int t = -6; t <= 6; t += 2) {
    const float id = (static_cast<float>(t) + static_cast<float>(kIq4nlValues[0])) / mx;
    float sqx = 0, sq2 = 0;
    for (int i = 0; i < n; ++i) {
      const float q = static_cast<float>(kIq4nlValues[nl_index(id * x[i])]);
      sqx += q * x[i];
      sq2 += q * q;
    }
    if (sq2 > 0.0f && sqx * sqx / sq2 > best_score) {
      best_score = sqx * sqx / sq2;
      best_d = sqx / sq2;
    }
  }
  return best_d;
}

// 32 IQ4_NL indices of x with scale d, packed as in the 32-element blocks (j | j+16 << 4).
void pack_nl(const float* x, float d, uint8_t qs[16]) {
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  for (int j = 0; j < 16; ++j) {
    qs[j] = static_cast<uint8_t>(nl_index(id * x[j]) | (nl_index(id * x[j + 16]) << 4));
  }
}

// Legacy 32-blocks with an unsigned code q in [0, nmax] = round(x / d) + offset (Q4_0 / Q5_0).
template <int kBits>
void quantize_symmetric_block(const float* x, uint8_t* d_out, uint8_t* qs, uint8_t* qh) {
  constexpr int kOffset = 1 << (kBits - 1), kMax = (1 << kBits) - 1;
  const float mx = signed_absmax(x, kQK);
  const float d = mx / -static_cast<float>(kOffset);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(d_out, d);
  uint32_t hbits = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(kMax, static_cast<int>(x[j] * id + static_cast<float>(kOffset) + 0.5f));
    const int q1 = std::min(kMax, static_cast<int>(x[j + 16] * id + static_cast<float>(kOffset) + 0.5f));
    qs[j] = static_cast<uint8_t>((q0 & 0xf) | ((q1 & 0xf) << 4));
    hbits |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    hbits |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
  if (qh) std::memcpy(qh, &hbits, sizeof hbits);
}

// Legacy 32-blocks x = d * q + m, q in [0, 2^kBits - 1] (Q4_1 / Q5_1).
template <int kBits>
void quantize_affine_block(const float* x, uint8_t* d_out, uint8_t* m_out, uint8_t* qs, uint8_t* qh) {
  constexpr int kMax = (1 << kBits) - 1;
  float lo = x[0], hi = x[0];
  for (int j = 1; j < kQK; ++j) {
    lo = std::min(lo, x[j]);
    hi = std::max(hi, x[j]);
  }
  const float d = (hi - lo) / static_cast<float>(kMax);
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  store_fp16(d_out, d);
  store_fp16(m_out, lo);
  uint32_t hbits = 0;
  for (int j = 0; j < 16; ++j) {
    const int q0 = std::min(kMax, static_cast<int>((x[j] - lo) * id + 0.5f));
    const int q1 = std::min(kMax, static_cast<int>((x[j + 16] - lo) * id + 0.5f));
    qs[j] = static_cast<uint8_t>((q0 & 0xf) | ((q1 & 0xf) << 4));
    hbits |= static_cast<uint32_t>((q0 >> 4) & 1) << j;
    hbits |= static_cast<uint32_t>((q1 >> 4) & 1) << (j + 16);
  }
  if (qh) std::memcpy(qh, &hbits, sizeof hbits);
}

// Q4_K / Q5_K super-block: 8 affine sub-blocks of 32, 6-bit scales and mins, codes L (256,).
void kquant_affine_32(const float* x, int nmax, uint8_t* d_out, uint8_t* dmin_out,
                      uint8_t scales[12], uint8_t L[kQKK]) {
  float sc[8], mn[8], max_sc = 0.0f, max_mn = 0.0f;
  for (int j = 0; j < 8; ++j) {
    sc[j] = fit_affine(x + 32 * j, 32, nmax, &mn[j]);
    max_sc = std::max(max_sc, sc[j]);
    max_mn = std::max(max_mn, mn[j]);
  }
  const float d = store_fp16_read(d_out, max_sc / 63.0f);
  const float dmin = store_fp16_read(dmin_out, max_mn / 63.0f);
  std::memset(scales, 0, 12);
  for (int j = 0; j < 8; ++j) {
    const int ls = d > 0.0f ? clampi(nearest(sc[j] / d), 0, 63) : 0;
    const int lm = dmin > 0.0f ? clampi(nearest(mn[j] / dmin), 0, 63) : 0;
    if (j < 4) {
      scales[j] = static_cast<uint8_t>(ls);
      scales[j + 4] = static_cast<uint8_t>(lm);
    } else {
      scales[j + 4] = static_cast<uint8_t>((ls & 0xf) | ((lm & 0xf) << 4));
      scales[j - 4] |= static_cast<uint8_t>((ls >> 4) << 6);
      scales[j] |= static_cast<uint8_t>((lm >> 4) << 6);
    }
  }
  for (int j = 0; j < 8; ++j) {
    uint8_t ls, lm;
    k4_scale_min(scales, j, ls, lm);
    const float dl = d * static_cast<float>(ls), dm = dmin * static_cast<float>(lm);
    const float idl = dl > 0.0f ? 1.0f / dl : 0.0f;
    for (int i = 0; i < 32; ++i) {
      L[32 * j + i] = static_cast<uint8_t>(qclamp((x[32 * j + i] + dm) * idl, 0.0f, static_cast<float>(nmax)));
    }
  }
}

// Symmetric K-quant super-block (Q3_K / Q6_K): 16 sub-blocks of 16 with integer scales in
// [-smax, smax - 1] times d; codes L = round(x / (d * s)) + nmax in [0, 2 nmax - 1].
float kquant_symmetric_16(const float* x, int nmax, int smax, uint8_t* d_out, int sc_out[16],
                          uint8_t L[kQKK]) {
  float s[16], ms = 0.0f;
  for (int j = 0; j < 16; ++j) {
    s[j] = fit_symmetric(x + 16 * j, 16, nmax);
    if (std::fabs(s[j]) > std::fabs(ms)) ms = s[j];
  }
  const float iscale = ms != 0.0f ? -static_cast<float>(smax) / ms : 0.0f;
  const float d = store_fp16_read(d_out, iscale != 0.0f ? 1.0f / iscale : 0.0f);
  for (int j = 0; j < 16; ++j) {
    sc_out[j] = clampi(nearest(iscale * s[j]), -smax, smax - 1);
    const float dl = d * static_cast<float>(sc_out[j]);
    const float idl = dl != 0.0f ? 1.0f / dl : 0.0f;
    const auto fmax = static_cast<float>(nmax);
    for (int i = 0; i < 16; ++i) {
      L[16 * j + i] = static_cast<uint8_t>(qclamp(x[16 * j + i] * idl, -fmax, fmax - 1.0f) + fmax);
    }
  }
  return d;
}

// Packs 2-bit codes L (256,) into qs[64]: element 32*s + l of half h -> bits 2s of qs[32h + l].
void pack_2bit(const uint8_t L[kQKK], uint8_t qs[64]) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t* p = L + 128 * h + l;
      qs[32 * h + l] = static_cast<uint8_t>((p[0] & 3) | ((p[32] & 3) << 2) | ((p[64] & 3) << 4) |
                                            ((p[96] & 3) << 6));
    }
  }
}

void check_blocks(int64_t n, int block, const char* type) {
  if (n < 0 || n % block != 0) {
    throw std::invalid_argument(std::string("quantize ") + type + ": row length " +
                                std::to_string(n) + " is not a multiple of " + std::to_string(block));
  }
}

}  // namespace

void quantize_row_f32(const float* x, void* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

void quantize_row_f16(const float* x, void* y, int64_t n) {
  auto* p = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) store_fp16(p + 2 * i, x[i]);
}

void quantize_row_bf16(const float* x, void* y, int64_t n) {
  auto* p = static_cast<uint8_t*>(y);
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t b = fp32_to_bf16(x[i]);
    std::memcpy(p + 2 * i, &b, sizeof b);
  }
}

void quantize_row_q4_0(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ4_0*>(y);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) quantize_symmetric_block<4>(x, b->d, b->qs, nullptr);
}

void quantize_row_q5_0(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ5_0*>(y);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) quantize_symmetric_block<5>(x, b->d, b->qs, b->qh);
}

void quantize_row_q4_1(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ4_1*>(y);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) quantize_affine_block<4>(x, b->d, b->m, b->qs, nullptr);
}

void quantize_row_q5_1(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ5_1*>(y);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) quantize_affine_block<5>(x, b->d, b->m, b->qs, b->qh);
}

void quantize_row_q8_0(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) {
    const float d = std::fabs(signed_absmax(x, kQK)) / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    store_fp16(b->d, d);
    for (int j = 0; j < kQK; ++j) b->qs[j] = static_cast<int8_t>(qclamp(x[j] * id, -127.0f, 127.0f));
  }
}

void quantize_row_iq4_nl(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockIQ4_NL*>(y);
  for (int64_t i = 0; i < n / kQK; ++i, ++b, x += kQK) {
    const float d = store_fp16_read(b->d, fit_nl(x, kQK));
    pack_nl(x, d, b->qs);
  }
}

void quantize_row_iq4_xs(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockIQ4_XS*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, ++b, x += kQKK) {
    float s[8], ms = 0.0f;
    for (int j = 0; j < 8; ++j) {
      s[j] = fit_nl(x + 32 * j, 32);
      if (std::fabs(s[j]) > std::fabs(ms)) ms = s[j];
    }
    const float d = store_fp16_read(b->d, -ms / 32.0f);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    uint16_t sh = 0;
    std::memset(b->scales_l, 0, sizeof b->scales_l);
    for (int j = 0; j < 8; ++j) {
      const int l = clampi(nearest(id * s[j]), -32, 31);
      const int ls = l + 32;
      b->scales_l[j / 2] |= static_cast<uint8_t>((ls & 0xf) << (4 * (j % 2)));
      sh = static_cast<uint16_t>(sh | ((ls >> 4) << (2 * j)));
      pack_nl(x + 32 * j, d * static_cast<float>(l), b->qs + 16 * j);
    }
    std::memcpy(b->scales_h, &sh, sizeof sh);
  }
}

void quantize_row_q2_k(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ2_K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, ++b, x += kQKK) {
    float sc[16], mn[16], max_sc = 0.0f, max_mn = 0.0f;
    for (int j = 0; j < 16; ++j) {
      sc[j] = fit_affine(x + 16 * j, 16, 3, &mn[j]);
      max_sc = std::max(max_sc, sc[j]);
      max_mn = std::max(max_mn, mn[j]);
    }
    const float d = store_fp16_read(b->d, max_sc / 15.0f);
    const float dmin = store_fp16_read(b->dmin, max_mn / 15.0f);
    uint8_t L[kQKK];
    for (int j = 0; j < 16; ++j) {
      const int ls = d > 0.0f ? clampi(nearest(sc[j] / d), 0, 15) : 0;
      const int lm = dmin > 0.0f ? clampi(nearest(mn[j] / dmin), 0, 15) : 0;
      b->scales[j] = static_cast<uint8_t>(ls | (lm << 4));
      const float dl = d * static_cast<float>(ls), dm = dmin * static_cast<float>(lm);
      const float idl = dl > 0.0f ? 1.0f / dl : 0.0f;
      for (int k = 0; k < 16; ++k) L[16 * j + k] = static_cast<uint8_t>(qclamp((x[16 * j + k] + dm) * idl, 0.0f, 3.0f));
    }
    pack_2bit(L, b->qs);
  }
}

void quantize_row_q3_k(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ3_K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, ++b, x += kQKK) {
    int sc[16];
    uint8_t L[kQKK];  // value + 4, in [0, 7]
    kquant_symmetric_16(x, 4, 32, b->d, sc, L);
    std::memset(b->scales, 0, sizeof b->scales);
    for (int j = 0; j < 16; ++j) {
      const int ls = sc[j] + 32;
      if (j < 8) {
        b->scales[j] = static_cast<uint8_t>(ls & 0xf);
      } else {
        b->scales[j - 8] |= static_cast<uint8_t>((ls & 0xf) << 4);
      }
      b->scales[8 + j % 4] |= static_cast<uint8_t>((ls >> 4) << (2 * (j / 4)));
    }
    std::memset(b->hmask, 0, sizeof b->hmask);
    for (int e = 0; e < kQKK; ++e) {
      if (L[e] > 3) {
        b->hmask[e % 32] |= static_cast<uint8_t>(1 << (e / 32));
        L[e] = static_cast<uint8_t>(L[e] - 4);
      }
    }
    pack_2bit(L, b->qs);
  }
}

void quantize_row_q4_k(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ4_K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, ++b, x += kQKK) {
    uint8_t L[kQKK];
    kquant_affine_32(x, 15, b->d, b->dmin, b->scales, L);
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) b->qs[32 * c + l] = static_cast<uint8_t>(L[64 * c + l] | (L[64 * c + 32 + l] << 4));
    }
  }
}

void quantize_row_q5_k(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ5_K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, ++b, x += kQKK) {
    uint8_t L[kQKK];
    kquant_affine_32(x, 31, b->d, b->dmin, b->scales, L);
    std::memset(b->qh, 0, sizeof b->qh);
    for (int e = 0; e < kQKK; ++e) b->qh[e % 32] |= static_cast<uint8_t>((L[e] >> 4) << (e / 32));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        b->qs[32 * c + l] = static_cast<uint8_t>((L[64 * c + l] & 0xf) | ((L[64 * c + 32 + l] & 0xf) << 4));
      }
    }
  }
}

void quantize_row_q6_k(const float* x, void* y, int64_t n) {
  auto* b = static_cast<BlockQ6_K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, ++b, x += kQKK) {
    int sc[16];
    uint8_t L[kQKK];  // value + 32, in [0, 63]
    kquant_symmetric_16(x, 32, 128, b->d, sc, L);
    for (int j = 0; j < 16; ++j) b->scales[j] = static_cast<int8_t>(sc[j]);
    for (int h = 0; h < 2; ++h) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* q = L + 128 * h + l;
        b->ql[64 * h + l] = static_cast<uint8_t>((q[0] & 0xf) | ((q[64] & 0xf) << 4));
        b->ql[64 * h + l + 32] = static_cast<uint8_t>((q[32] & 0xf) | ((q[96] & 0xf) << 4));
        b->qh[32 * h + l] = static_cast<uint8_t>((q[0] >> 4) | ((q[32] >> 4) << 2) |
                                                 ((q[64] >> 4) << 4) | ((q[96] >> 4) << 6));
      }
    }
  }
}

namespace {

struct Entry {
  gguf::TensorType type;
  void (*quantize)(const float*, void*, int64_t);
};

// The quantizers' table; dequantization is the kernels' reference (their type table).
using T = gguf::TensorType;
constexpr Entry kEntries[] = {
    {T::F32, quantize_row_f32},   {T::F16, quantize_row_f16},   {T::BF16, quantize_row_bf16},
    {T::Q4_0, quantize_row_q4_0}, {T::Q4_1, quantize_row_q4_1}, {T::Q5_0, quantize_row_q5_0},
    {T::Q5_1, quantize_row_q5_1}, {T::Q8_0, quantize_row_q8_0}, {T::IQ4_NL, quantize_row_iq4_nl},
    {T::Q2_K, quantize_row_q2_k}, {T::Q3_K, quantize_row_q3_k}, {T::Q4_K, quantize_row_q4_k},
    {T::Q5_K, quantize_row_q5_k}, {T::Q6_K, quantize_row_q6_k}, {T::IQ4_XS, quantize_row_iq4_xs},
};

const Entry& entry(gguf::TensorType type, int64_t n) {
  for (const Entry& e : kEntries) {
    if (e.type == type) {
      const gguf::TypeInfo& info = gguf::type_info(type);
      check_blocks(n, static_cast<int>(info.block_size), std::string(info.name).c_str());
      return e;
    }
  }
  throw std::invalid_argument("quantize: type " + std::string(gguf::type_info(type).name) +
                              " is not supported");
}

}  // namespace

bool can_quantize(gguf::TensorType type) {
  return std::any_of(std::begin(kEntries), std::end(kEntries),
                     [type](const Entry& e) { return e.type == type; });
}

size_t quantize_row(gguf::TensorType type, const float* x, void* y, int64_t n) {
  entry(type, n).quantize(x, y, n);
  const gguf::TypeInfo& info = gguf::type_info(type);
  return static_cast<size_t>(n) / info.block_size * info.block_bytes;
}

void dequantize_row_ref(gguf::TensorType type, const void* x, float* y, int64_t n) {
  (void)entry(type, n);  // the same checks as quantize_row
  kernel_traits(type)->dequant(x, y, n);
}

}  // namespace engine::quantize
