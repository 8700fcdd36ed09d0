// Scalar activation quantization and integer dot products: the spec for the SIMD kernels.
// Each weight block is first unpacked to the canonical form of unpacked.h, then dotted.
#include <algorithm>
#include <cmath>

#include "engine/kernels/blocks.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/ref.h"
#include "engine/kernels/unpacked.h"

namespace engine::kernels::ref {

// ---------------------------------------------------------------------------------------------
// Activations

// As ggml's x86 quantize_row_q8_0 / q8_1: the scale is 127 / amax, not 1 / d (the two differ in
// the last bit for some blocks, which moves a quant where x lands within an ulp of a rounding
// boundary), and d is kept in binary16 as block_q8_0 keeps it. s = d * sum with that d, exact in
// f32, so the offset form of Q4_0 / Q5_0 (d_w * d_x * sum(u * x) - 8 d_w * s) is ggml's
// d_w * d_x * sum((u - 8) * x) (ggml's q8_1 for Q4_1 / Q5_1 keeps binary16(d * sum) with the
// unrounded d instead: within 2^-11 of ours, on those two types' min term only). The rounding
// is up to 2^-11 of d per block; a random model turns that into quant flips in the next layer (an
// error of 1.8e-4 of a layer's output became 4e-3 after the FFN's Q8_0 activations,
// synth-qwen35-Q8_0; scripts/drift/README.md, Findings), so it must match.
void quantize_q8a(const float* x, ActQ8A* y, int64_t cols) {
  for (int64_t i = 0; i < cols / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      const int q = static_cast<int>(std::nearbyint(x[j] * id));
      y[i].qs[j] = static_cast<int8_t>(q);
      sum += q;
    }
    y[i].d = round_fp16(d);
    y[i].s = y[i].d * static_cast<float>(sum);
  }
}

// As ggml's quantize_row_q8_K_ref, bit for bit: the scale is 127 / amax and d its reciprocal
// (ggml uses -127 / max, max the signed element of largest magnitude, so its quants and d may both
// come out negated: the same products). d = amax / 127 with 1 / d as the scale differs from that in
// the last bit for about a quarter of all blocks, which moves a quant by one where x lands within
// an ulp of a rounding boundary.
void quantize_q8k(const float* x, ActQ8K* y, int64_t cols) {
  for (int64_t i = 0; i < cols / kQKK; ++i, x += kQKK) {
    float amax = 0.0f;
    for (int j = 0; j < kQKK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    const float d = amax != 0.0f ? 1.0f / id : 0.0f;
    for (int g = 0; g < 16; ++g) {
      int sum = 0;
      for (int j = 16 * g; j < 16 * g + 16; ++j) {
        const int q = static_cast<int>(std::nearbyint(x[j] * id));
        y[i].qs[j] = static_cast<int8_t>(q);
        sum += q;
      }
      y[i].bsums[g] = static_cast<int16_t>(sum);
    }
    y[i].d = d;
  }
}

void round_f16(const float* x, float* y, int64_t cols) {
  for (int64_t i = 0; i < cols; ++i) y[i] = round_fp16(x[i]);
}

void round_bf16(const float* x, float* y, int64_t cols) {
  for (int64_t i = 0; i < cols; ++i) y[i] = bf16_to_fp32(fp32_to_bf16(x[i]));
}

void silu_mul(float* gate, const float* up, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

// ---------------------------------------------------------------------------------------------
// Unpacking one block to the canonical form

namespace {

void unpack(const BlockQ4_0& b, Unpacked32& u) {
  for (int j = 0; j < 16; ++j) {
    u.q[j] = static_cast<int8_t>(b.qs[j] & 0xf);
    u.q[j + 16] = static_cast<int8_t>(b.qs[j] >> 4);
  }
  u.d = load_fp16(b.d);
  u.m = -8.0f * u.d;
}

void unpack(const BlockQ4_1& b, Unpacked32& u) {
  for (int j = 0; j < 16; ++j) {
    u.q[j] = static_cast<int8_t>(b.qs[j] & 0xf);
    u.q[j + 16] = static_cast<int8_t>(b.qs[j] >> 4);
  }
  u.d = load_fp16(b.d);
  u.m = load_fp16(b.m);
}

void unpack_q5(const uint8_t* qs, const uint8_t* qhp, Unpacked32& u) {
  const uint32_t qh = load_u32(qhp);
  for (int j = 0; j < 16; ++j) {
    u.q[j] = static_cast<int8_t>((qs[j] & 0xf) | (((qh >> j) & 1) << 4));
    u.q[j + 16] = static_cast<int8_t>((qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
  }
}

void unpack(const BlockQ5_0& b, Unpacked32& u) {
  unpack_q5(b.qs, b.qh, u);
  u.d = load_fp16(b.d);
  u.m = -16.0f * u.d;
}

void unpack(const BlockQ5_1& b, Unpacked32& u) {
  unpack_q5(b.qs, b.qh, u);
  u.d = load_fp16(b.d);
  u.m = load_fp16(b.m);
}

void unpack(const BlockQ8_0& b, Unpacked32& u) {
  for (int j = 0; j < 32; ++j) u.q[j] = b.qs[j];
  u.d = load_fp16(b.d);
  u.m = 0.0f;
}

void unpack(const BlockIQ4_NL& b, Unpacked32& u) {
  lookup_nibbles(b.qs, kIq4nlValues, u.q);
  u.d = load_fp16(b.d);
  u.m = 0.0f;
}

void unpack(const BlockQ2_K& b, UnpackedK& u) {
  for (int e = 0; e < kQKK; ++e) {
    const int half = e / 128, s = (e % 128) / 32, l = e % 32;
    u.q[e] = static_cast<int8_t>((b.qs[32 * half + l] >> (2 * s)) & 3);
  }
  for (int g = 0; g < 16; ++g) {
    u.sc[g] = static_cast<int16_t>(b.scales[g] & 0xf);
    u.mn[g] = static_cast<int16_t>(b.scales[g] >> 4);
  }
  u.d = load_fp16(b.d);
  u.dm = load_fp16(b.dmin);
}

void unpack(const BlockQ3_K& b, UnpackedK& u) {
  for (int e = 0; e < kQKK; ++e) {
    const int half = e / 128, s = (e % 128) / 32, l = e % 32;
    const int lo = (b.qs[32 * half + l] >> (2 * s)) & 3;
    const int hbit = (b.hmask[l] >> (e / 32)) & 1;
    u.q[e] = static_cast<int8_t>(lo + 4 * hbit);
  }
  int8_t sc[16];
  q3k_scales(b.scales, sc);
  for (int g = 0; g < 16; ++g) {
    u.sc[g] = sc[g];
    u.mn[g] = static_cast<int16_t>(4 * sc[g]);
  }
  u.d = load_fp16(b.d);
  u.dm = u.d;
}

// Q4_K / Q5_K share the scales layout; `qh` is null for Q4_K.
void unpack_k45(const uint8_t* d, const uint8_t* dmin, const uint8_t* scales, const uint8_t* qs,
                const uint8_t* qh, UnpackedK& u) {
  for (int e = 0; e < kQKK; ++e) {
    const int sub = e / 32, l = e % 32;
    const uint8_t byte = qs[32 * (sub / 2) + l];
    int q = (sub % 2) ? (byte >> 4) : (byte & 0xf);
    if (qh) q |= ((qh[l] >> sub) & 1) << 4;
    u.q[e] = static_cast<int8_t>(q);
  }
  for (int sub = 0; sub < 8; ++sub) {
    uint8_t sc, mn;
    k4_scale_min(scales, sub, sc, mn);
    u.sc[2 * sub] = u.sc[2 * sub + 1] = sc;
    u.mn[2 * sub] = u.mn[2 * sub + 1] = mn;
  }
  u.d = load_fp16(d);
  u.dm = load_fp16(dmin);
}

void unpack(const BlockQ4_K& b, UnpackedK& u) {
  unpack_k45(b.d, b.dmin, b.scales, b.qs, nullptr, u);
}

void unpack(const BlockQ5_K& b, UnpackedK& u) { unpack_k45(b.d, b.dmin, b.scales, b.qs, b.qh, u); }

void unpack(const BlockQ6_K& b, UnpackedK& u) {
  for (int e = 0; e < kQKK; ++e) {
    const int h = e / 128, s = (e % 128) / 32, l = e % 32;
    const uint8_t lbyte = b.ql[64 * h + l + 32 * (s & 1)];
    const int lo = (s >> 1) ? (lbyte >> 4) : (lbyte & 0xf);
    const int hi = (b.qh[32 * h + l] >> (2 * s)) & 3;
    u.q[e] = static_cast<int8_t>(lo | (hi << 4));
  }
  for (int g = 0; g < 16; ++g) {
    u.sc[g] = b.scales[g];
    u.mn[g] = static_cast<int16_t>(32 * b.scales[g]);
  }
  u.d = load_fp16(b.d);
  u.dm = u.d;
}

void unpack(const BlockIQ4_XS& b, UnpackedK& u) {
  const uint16_t sh = load_u16(b.scales_h);
  for (int sub = 0; sub < 8; ++sub) {
    lookup_nibbles(b.qs + 16 * sub, kIq4nlValues, u.q + 32 * sub);
    const int ls = ((b.scales_l[sub / 2] >> (4 * (sub % 2))) & 0xf) | (((sh >> (2 * sub)) & 3) << 4);
    u.sc[2 * sub] = u.sc[2 * sub + 1] = static_cast<int16_t>(ls - 32);
    u.mn[2 * sub] = u.mn[2 * sub + 1] = 0;
  }
  u.d = load_fp16(b.d);
  u.dm = 0.0f;
}

}  // namespace

float vec_dot_f32(const void* w, const void* x, int64_t cols) {
  const auto* a = static_cast<const float*>(w);
  const auto* b = static_cast<const float*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < cols; ++i) sum += a[i] * b[i];
  return sum;
}

float vec_dot_f16(const void* w, const void* x, int64_t cols) {
  const auto* a = static_cast<const uint8_t*>(w);
  const auto* b = static_cast<const float*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < cols; ++i) sum += load_fp16(a + 2 * i) * b[i];
  return sum;
}

float vec_dot_bf16(const void* w, const void* x, int64_t cols) {
  const auto* a = static_cast<const uint8_t*>(w);
  const auto* b = static_cast<const float*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < cols; ++i) sum += bf16_to_fp32(load_u16(a + 2 * i)) * b[i];
  return sum;
}

float vec_dot_q4_0(const void* w, const void* x, int64_t c) { return row_dot<BlockQ4_0, Unpacked32, ActQ8A, unpack>(w, x, c); }
float vec_dot_q4_1(const void* w, const void* x, int64_t c) { return row_dot<BlockQ4_1, Unpacked32, ActQ8A, unpack>(w, x, c); }
float vec_dot_q5_0(const void* w, const void* x, int64_t c) { return row_dot<BlockQ5_0, Unpacked32, ActQ8A, unpack>(w, x, c); }
float vec_dot_q5_1(const void* w, const void* x, int64_t c) { return row_dot<BlockQ5_1, Unpacked32, ActQ8A, unpack>(w, x, c); }
float vec_dot_q8_0(const void* w, const void* x, int64_t c) { return row_dot<BlockQ8_0, Unpacked32, ActQ8A, unpack>(w, x, c); }
float vec_dot_iq4_nl(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ4_NL, Unpacked32, ActQ8A, unpack>(w, x, c); }
float vec_dot_q2_k(const void* w, const void* x, int64_t c) { return row_dot<BlockQ2_K, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_q3_k(const void* w, const void* x, int64_t c) { return row_dot<BlockQ3_K, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_q4_k(const void* w, const void* x, int64_t c) { return row_dot<BlockQ4_K, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_q5_k(const void* w, const void* x, int64_t c) { return row_dot<BlockQ5_K, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_q6_k(const void* w, const void* x, int64_t c) { return row_dot<BlockQ6_K, UnpackedK, ActQ8K, unpack>(w, x, c); }
float vec_dot_iq4_xs(const void* w, const void* x, int64_t c) { return row_dot<BlockIQ4_XS, UnpackedK, ActQ8K, unpack>(w, x, c); }

}  // namespace engine::kernels::ref
