// Scalar tiled attention: the specification of flash_block (flash_attn.h) that the SIMD kernels
// are tested against. Block by block: each row's scores against the block's keys, then the f32
// block-wise softmax update or the f16 key-by-key one.
#include <cmath>
#include <cstdlib>
#include <limits>

#include "engine/kernels/flash_attn.h"
#include "engine/kernels/flash_layout.h"
#include "engine/kernels/fp16.h"

namespace engine::kernels::ref {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// The tile's queries in the precision the dots use: qf (n, d_k) f32, f16-rounded for the f16
// accumulation; q8 (n, d_k / 32) blocks for Q8_0 keys.
void prepare_queries(const FlashParams& p, const FlashQuery& q, KvElem elem, float* qf, FlashQ8* q8) {
  for (int r = 0; r < q.n; ++r) {
    if (elem == KvElem::kQ8_0) {
      flash_quantize_query(q.rows[r], q8 + r * (p.d_k / kQK), p.d_k);
      continue;
    }
    for (int64_t i = 0; i < p.d_k; ++i) {
      const float x = q.rows[r][i];
      qf[r * p.d_k + i] = p.f16_accum ? round_fp16(x) : x;
    }
  }
}

// s (n, kFlashKeys): the scores of keys [j0, j1) (column j - j0), -inf where masked.
void scores(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t j0, int64_t j1,
            const float* qf, const FlashQ8* q8, float* kf, float* s) {
  for (int64_t j = j0; j < j1; ++j) {
    const uint8_t* k = flash_k_row(kv, j);
    if (kv.elem != KvElem::kQ8_0) kv_load(kv.elem, k, kf, p.d_k);
    for (int r = 0; r < q.n; ++r) {
      float& out = s[r * kFlashKeys + (j - j0)];
      if (kv.pos != nullptr && !flash_visible(p, q.pos[r], q.see_at(r), kv.pos[j])) {
        out = kNegInf;
        continue;
      }
      float dot = 0.0f;
      if (kv.elem == KvElem::kQ8_0) {  // per block: d_k d_q * (integer dot)
        const auto* kb = reinterpret_cast<const BlockQ8_0*>(k);
        const FlashQ8* qb = q8 + r * (p.d_k / kQK);
        for (int64_t c = 0; c < p.d_k / kQK; ++c) {
          int isum = 0;
          for (int i = 0; i < kQK; ++i) isum += kb[c].qs[i] * qb[c].qs[i];
          dot += load_fp16(kb[c].d) * qb[c].d * static_cast<float>(isum);
        }
      } else {
        for (int64_t i = 0; i < p.d_k; ++i) dot += qf[r * p.d_k + i] * kf[i];
      }
      float x = p.scale * dot;
      if (p.softcap != 0.0f) x = p.softcap * std::tanh(x);
      if (q.alibi != nullptr) {
        const int64_t k_pos = kv.pos != nullptr ? kv.pos[j] : j;
        x -= q.alibi[r] * static_cast<float>(std::abs(static_cast<int64_t>(q.pos[r]) - k_pos));
      }
      out = x;
    }
  }
}

// f32: per row, the block's max joins the running max, then o = o * e^(m_old - m) + sum P v.
void update_f32(const FlashParams& p, int n, const FlashKv& kv, int64_t j0, int64_t j1, float* s, float* vf,
                FlashState& st) {
  const int64_t nb = j1 - j0;
  for (int r = 0; r < n; ++r) {
    float* sr = s + r * kFlashKeys;
    float mb = kNegInf;
    for (int64_t j = 0; j < nb; ++j) mb = std::max(mb, sr[j]);
    if (mb == kNegInf) {  // the row sees none of these keys
      for (int64_t j = 0; j < nb; ++j) sr[j] = 0.0f;
      continue;
    }
    const float m = std::max(st.m[r], mb), c = std::exp(st.m[r] - m);
    float* o = st.o + r * p.d_v;
    for (int64_t i = 0; i < p.d_v; ++i) o[i] *= c;
    float l = 0.0f;
    for (int64_t j = 0; j < nb; ++j) {
      sr[j] = sr[j] == kNegInf ? 0.0f : std::exp(sr[j] - m);
      l += sr[j];
    }
    st.l[r] = st.l[r] * c + l;
    st.m[r] = m;
  }
  // o (n, d_v) += P (n, nb) . V (nb, d_v)
  for (int64_t j = 0; j < nb; ++j) {
    kv_load(kv.elem, flash_v_row(kv, j0 + j), vf, p.d_v);
    for (int r = 0; r < n; ++r) {
      const float w = s[r * kFlashKeys + j];
      float* o = st.o + r * p.d_v;
      for (int64_t i = 0; i < p.d_v; ++i) o[i] += w * vf[i];
    }
  }
}

// f16 (llama.cpp's one-row path): key by key, a new maximum rescales o; o is rounded to f16
// after every update.
void update_f16(const FlashParams& p, int n, const FlashKv& kv, int64_t j0, int64_t j1, const float* s, float* vf,
                FlashState& st) {
  for (int64_t j = j0; j < j1; ++j) {
    kv_load(kv.elem, flash_v_row(kv, j), vf, p.d_v);
    for (int r = 0; r < n; ++r) {
      const float x = s[r * kFlashKeys + (j - j0)];
      if (x == kNegInf) continue;
      float* o = st.o + r * p.d_v;
      float ms = 1.0f, vs = 1.0f;
      if (x > st.m[r]) {
        ms = std::exp(st.m[r] - x);
        st.m[r] = x;
        for (int64_t i = 0; i < p.d_v; ++i) o[i] = round_fp16(o[i] * ms);
      } else {
        vs = std::exp(x - st.m[r]);
      }
      for (int64_t i = 0; i < p.d_v; ++i) o[i] = round_fp16(o[i] + vs * vf[i]);
      st.l[r] = st.l[r] * ms + vs;
    }
  }
}

}  // namespace

void flash_block(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                 FlashState& st, void* scratch) {
  const FlashLayout lay(p);
  float* qf = FlashLayout::at<float>(scratch, lay.qf);
  auto* q8 = FlashLayout::at<FlashQ8>(scratch, lay.q8);
  float* kf = FlashLayout::at<float>(scratch, lay.kt);  // (d_k,) one K row
  float* vf = FlashLayout::at<float>(scratch, lay.vf);  // (d_v,) one V row
  float* s = FlashLayout::at<float>(scratch, lay.s);
  prepare_queries(p, q, kv.elem, qf, q8);
  for (int64_t j0 = k0; j0 < k1;) {
    const int64_t j1 = flash_block_end(kv, j0, k1);
    scores(p, q, kv, j0, j1, qf, q8, kf, s);
    if (p.f16_accum) {
      update_f16(p, q.n, kv, j0, j1, s, vf, st);
    } else {
      update_f32(p, q.n, kv, j0, j1, s, vf, st);
    }
    j0 = j1;
  }
}

}  // namespace engine::kernels::ref
