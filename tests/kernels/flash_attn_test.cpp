// The tiled attention (engine/kernels/flash_attn.h): the scalar reference against a plain
// softmax attention computed in double, and every SIMD copy against the reference, over cache
// types, head sizes, tile heights, masks (causal, sliding window, none), position gaps, soft-cap,
// sinks, ALiBi and split key runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "engine/kernels/flash_attn.h"

namespace engine::kernels {
#if GGUFD_HAVE_SIMDE
namespace vnni_emulated {
void flash_block(const FlashParams& p, const FlashQuery& q, const FlashKv& kv, int64_t k0, int64_t k1,
                 FlashState& st, void* scratch);
}
#endif
namespace {

struct Case {
  KvElem elem = KvElem::kF16;
  bool f16_accum = false;
  int64_t d = 64;      // d_k = d_v
  int rows = 4;        // query rows of the tile
  int64_t keys = 100;  // cached positions
  int32_t window = 0;  // sliding window (0: causal only)
  float softcap = 0.0f;
  bool sinks = false;
  bool gaps = false;       // positions 0, 3, 4, 7, ... instead of 0, 1, 2, ...
  bool no_mask = false;    // keys without positions: every row sees every key (the encoder)
  bool alibi = false;      // ALiBi slopes per row (jina-bert-v2's encoder)
};

std::string name(const Case& c) {
  const char* e = c.elem == KvElem::kF32 ? "f32" : c.elem == KvElem::kF16 ? "f16" : "q8_0";
  return std::string(e) + (c.f16_accum ? " f16-accum" : "") + " d=" + std::to_string(c.d) + " rows=" +
         std::to_string(c.rows) + " keys=" + std::to_string(c.keys) + " window=" + std::to_string(c.window) +
         " softcap=" + std::to_string(c.softcap) + (c.sinks ? " sinks" : "") + (c.gaps ? " gaps" : "") +
         (c.no_mask ? " no-mask" : "") + (c.alibi ? " alibi" : "");
}

// A random tile and cache for a case; K/V rows stored in the cache's type, with cells shuffled
// (the kernel reads them through `cells`).
struct Fixture {
  Case c;
  std::vector<float> q;                       // (rows, d)
  std::vector<const float*> q_rows;           // (rows,)
  std::vector<int32_t> q_pos;                 // (rows,)
  std::vector<uint8_t> k, v;                  // (keys cells, row bytes)
  std::vector<int32_t> cells, pos;            // (keys,)
  std::vector<float> sinks;                   // (rows,)
  std::vector<float> slopes;                  // (rows,) ALiBi
  size_t row_bytes = 0;
  FlashParams p{};

  explicit Fixture(const Case& cs, unsigned seed) : c(cs) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> val(0.0f, 1.0f);
    for (int64_t i = 0; i < c.rows * c.d; ++i) q.push_back(val(rng));
    for (int r = 0; r < c.rows; ++r) q_rows.push_back(q.data() + r * c.d);
    int32_t at = 0;
    for (int64_t j = 0; j < c.keys; ++j) {
      pos.push_back(at);
      at += c.gaps ? 1 + static_cast<int32_t>(rng() % 3) : 1;
      cells.push_back(static_cast<int32_t>(j));
    }
    std::shuffle(cells.begin(), cells.end(), rng);
    // Query positions: the last rows' worth of key positions, so the causal mask cuts through
    // the tile (row r sees fewer keys than row r + 1).
    for (int r = 0; r < c.rows; ++r) {
      const int64_t j = std::max<int64_t>(0, c.keys - c.rows + r);
      q_pos.push_back(pos[static_cast<size_t>(j)]);
    }
    row_bytes = kv_bytes(c.elem, c.d);
    k.resize(row_bytes * static_cast<size_t>(c.keys));
    v.resize(row_bytes * static_cast<size_t>(c.keys));
    std::vector<float> row(static_cast<size_t>(c.d));
    for (int64_t cell = 0; cell < c.keys; ++cell) {
      for (float& x : row) x = 2.0f * val(rng);
      kv_store(c.elem, row.data(), k.data() + static_cast<size_t>(cell) * row_bytes, c.d);
      for (float& x : row) x = val(rng);
      kv_store(c.elem, row.data(), v.data() + static_cast<size_t>(cell) * row_bytes, c.d);
    }
    for (int r = 0; r < c.rows; ++r) sinks.push_back(val(rng));
    for (int r = 0; r < c.rows; ++r) slopes.push_back(std::pow(0.5f, static_cast<float>(r % 8 + 1)));
    p.d_k = p.d_v = c.d;
    p.softcap = c.softcap;
    p.scale = 1.0f / std::sqrt(static_cast<float>(c.d)) / (c.softcap != 0.0f ? c.softcap : 1.0f);
    p.window = c.window;
    p.f16_accum = c.f16_accum;
  }

  FlashQuery query() const { return {q_rows.data(), q_pos.data(), c.rows, c.alibi ? slopes.data() : nullptr}; }
  FlashKv kv() const {
    return {k.data(), v.data(), row_bytes, row_bytes, cells.data(), c.no_mask ? nullptr : pos.data(), c.keys, c.elem};
  }

  // The tile's outputs (rows, d) through `fn`, the keys cut into `splits` runs merged.
  std::vector<float> run(FlashFn fn, int splits = 1) const {
    const size_t n = static_cast<size_t>(c.rows), dv = static_cast<size_t>(c.d);
    auto scratch = std::unique_ptr<uint8_t[], decltype(&std::free)>(
        static_cast<uint8_t*>(std::aligned_alloc(64, (flash_scratch_bytes(p) + 63) / 64 * 64)), &std::free);
    std::vector<float> m(n * splits), l(n * splits), o(n * dv * splits);
    std::vector<FlashState> st;
    for (int s = 0; s < splits; ++s) st.push_back({m.data() + s * n, l.data() + s * n, o.data() + s * n * dv});
    const FlashQuery fq = query();
    const FlashKv fkv = kv();
    for (int s = 0; s < splits; ++s) {
      flash_init(st[s], c.rows, c.d);
      fn(p, fq, fkv, c.keys * s / splits, c.keys * (s + 1) / splits, st[s], scratch.get());
    }
    for (int s = 1; s < splits; ++s) flash_merge(st[0], st[s], c.rows, c.d);
    std::vector<float> out(n * dv);
    std::vector<float*> out_rows;
    for (size_t r = 0; r < n; ++r) out_rows.push_back(out.data() + r * dv);
    flash_finish(st[0], c.rows, c.d, c.sinks ? sinks.data() : nullptr, out_rows.data());
    return out;
  }

  // softmax(scores) @ V in double from the stored (dequantized) rows and f32 queries.
  std::vector<float> plain() const {
    std::vector<float> out(static_cast<size_t>(c.rows * c.d)), kr(static_cast<size_t>(c.d)), vr(kr.size());
    for (int r = 0; r < c.rows; ++r) {
      std::vector<double> s, acc(static_cast<size_t>(c.d), 0.0);
      std::vector<int64_t> seen;
      for (int64_t j = 0; j < c.keys; ++j) {
        const int32_t kp = pos[static_cast<size_t>(j)], qp = q_pos[static_cast<size_t>(r)];
        if (!c.no_mask && (kp > qp || (c.window != 0 && qp - kp >= c.window))) continue;
        kv_load(c.elem, k.data() + static_cast<size_t>(cells[static_cast<size_t>(j)]) * row_bytes, kr.data(), c.d);
        double dot = 0.0;
        for (int64_t i = 0; i < c.d; ++i) dot += static_cast<double>(q[static_cast<size_t>(r * c.d + i)]) * kr[static_cast<size_t>(i)];
        double x = p.scale * dot;
        if (c.softcap != 0.0f) x = c.softcap * std::tanh(x);
        if (c.alibi) x -= slopes[static_cast<size_t>(r)] * std::abs(static_cast<double>(qp) - (c.no_mask ? j : kp));
        s.push_back(x);
        seen.push_back(j);
      }
      double m = c.sinks ? sinks[static_cast<size_t>(r)] : -std::numeric_limits<double>::infinity();
      for (double x : s) m = std::max(m, x);
      double l = c.sinks ? std::exp(sinks[static_cast<size_t>(r)] - m) : 0.0;
      for (size_t t = 0; t < s.size(); ++t) {
        const double w = std::exp(s[t] - m);
        l += w;
        kv_load(c.elem, v.data() + static_cast<size_t>(cells[static_cast<size_t>(seen[t])]) * row_bytes, vr.data(), c.d);
        for (int64_t i = 0; i < c.d; ++i) acc[static_cast<size_t>(i)] += w * vr[static_cast<size_t>(i)];
      }
      for (int64_t i = 0; i < c.d; ++i) {
        out[static_cast<size_t>(r * c.d + i)] = l == 0.0 ? 0.0f : static_cast<float>(acc[static_cast<size_t>(i)] / l);
      }
    }
    return out;
  }
};

void expect_close(const std::vector<float>& got, const std::vector<float>& want, float tol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  float worst = 0.0f;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_FALSE(std::isnan(got[i])) << what << " NaN at " << i;
    const float e = std::fabs(got[i] - want[i]);
    if (e > worst) {
      worst = e;
      at = i;
    }
  }
  EXPECT_LE(worst, tol) << what << ": worst |got - want| at " << at << ": " << got[at] << " vs " << want[at];
}

// The cases: every cache type and accumulation across the shapes and masks.
std::vector<Case> cases() {
  std::vector<Case> out;
  for (KvElem e : {KvElem::kF32, KvElem::kF16, KvElem::kQ8_0}) {
    for (bool f16 : {false, true}) {
      if (f16 && e != KvElem::kF16) continue;
      for (int64_t d : {32, 64, 128, 40, 8}) {
        if (e == KvElem::kQ8_0 && d % 32 != 0) continue;
        for (int rows : {1, 4, 7, 64}) {
          Case c;
          c.elem = e, c.f16_accum = f16, c.d = d, c.rows = rows;
          c.keys = rows == 64 ? 150 : 77;
          out.push_back(c);
        }
      }
      Case w;  // sliding window, soft-cap, sinks, gaps, no mask, a long run
      w.elem = e, w.f16_accum = f16, w.rows = 8, w.window = 13;
      out.push_back(w);
      w.window = 0, w.softcap = 30.0f;
      out.push_back(w);
      w.softcap = 0.0f, w.sinks = true;
      out.push_back(w);
      w.sinks = false, w.gaps = true, w.window = 20;
      out.push_back(w);
      w.gaps = false, w.window = 0, w.no_mask = true, w.keys = 45;
      out.push_back(w);
      w.alibi = true;  // the encoder's ALiBi: every key seen, distances by key index
      out.push_back(w);
      w.no_mask = false, w.gaps = true, w.softcap = 30.0f;  // ALiBi by positions, masked, soft-capped
      out.push_back(w);
      w.alibi = false, w.gaps = false, w.softcap = 0.0f, w.rows = 4, w.keys = 1000;
      out.push_back(w);
    }
  }
  return out;
}

// Error bounds against the plain double attention: f32 arithmetic; the f16 accumulator (a few
// f16 ulps of values ~1); Q8_0 queries (the ~0.4% quantization of q moves the scores).
float plain_tolerance(const Case& c) {
  if (c.elem == KvElem::kQ8_0) return 0.05f;
  return c.f16_accum ? 1e-2f : 1e-4f;
}

TEST(FlashAttnReference, MatchesPlainSoftmaxAttention) {
  for (const Case& c : cases()) {
    const Fixture f(c, 7);
    expect_close(f.run(ref::flash_block), f.plain(), plain_tolerance(c), "reference " + name(c));
  }
}

TEST(FlashAttnReference, SplitRunsMergeToTheWhole) {
  for (const Case& c : cases()) {
    if (c.f16_accum) continue;  // the f16 accumulator restarts per split: not the same rounding
    const Fixture f(c, 8);
    expect_close(f.run(ref::flash_block, 3), f.run(ref::flash_block), 2e-5f, "3 splits " + name(c));
  }
}

// A sliding-window ring holds only a sequence's last positions: starting the run where the ring
// starts gives the bits of the full run whose earlier keys are masked.
TEST(FlashAttnReference, BlocksFollowPositionsNotTheRunStart) {
  Case c;
  c.rows = 4, c.keys = 200, c.window = 37;
  for (bool f16 : {false, true}) {
    c.f16_accum = f16;
    Fixture f(c, 9);
    const std::vector<float> full = f.run(ref::flash_block);
    const int64_t drop = 200 - 4 - 37 - 5;  // keys before every row's window
    f.pos.erase(f.pos.begin(), f.pos.begin() + drop);
    f.cells.erase(f.cells.begin(), f.cells.begin() + drop);
    f.c.keys -= drop;
    EXPECT_EQ(f.run(ref::flash_block), full) << (f16 ? "f16" : "f32");
  }
}

using SimdFn = std::pair<std::string, FlashFn>;

std::vector<SimdFn> simd_kernels() {
  std::vector<SimdFn> out;
  const CpuFeatures& cpu = cpu_features();
  if (avx2_dispatch() != nullptr) {
    out.emplace_back("avx2", avx2::flash_block);
#if GGUFD_HAVE_SIMDE
    out.emplace_back("vnni (emulated)", vnni_emulated::flash_block);
#endif
  }
  if (avx512_dispatch() != nullptr) out.emplace_back("avx512vnni", avx512vnni::flash_block);
  if (avxvnni_dispatch() != nullptr && cpu.avx_vnni) out.emplace_back("avxvnni", avxvnni::flash_block);
  return out;
}

// SIMD vs reference: f32 sums in another order and a polynomial exp (~1e-6 relative); the f16
// accumulator may round an update one f16 ulp the other way (a fused multiply-add), which later
// updates carry along.
TEST(FlashAttnSimd, AgreesWithTheReference) {
  const std::vector<SimdFn> kernels = simd_kernels();
  if (kernels.empty()) GTEST_SKIP() << "no AVX2 on this CPU: only the reference runs";
  for (const Case& c : cases()) {
    const Fixture f(c, 11);
    const std::vector<float> want = f.run(ref::flash_block);
    for (const auto& [isa, fn] : kernels) {
      expect_close(f.run(fn), want, c.f16_accum ? 4e-3f : 2e-5f, isa + " " + name(c));
      if (!c.f16_accum) expect_close(f.run(fn, 2), want, 2e-5f, isa + " 2 splits " + name(c));
    }
  }
}

TEST(FlashAttnSimd, DispatchTablesCarryTheirKernel) {
  EXPECT_EQ(scalar_dispatch().flash, &ref::flash_block);
  if (avx2_dispatch() != nullptr) {
    EXPECT_EQ(avx2_dispatch()->flash, &avx2::flash_block);
  }
  EXPECT_NE(dispatch().flash, nullptr);
}

TEST(KvRows, StoreAndLoadRoundTrip) {
  std::vector<float> x(64), y(64);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(static_cast<float>(i)) * 3.0f;
  std::vector<uint8_t> row(kv_bytes(KvElem::kF32, 64));
  kv_store(KvElem::kF32, x.data(), row.data(), 64);
  kv_load(KvElem::kF32, row.data(), y.data(), 64);
  EXPECT_EQ(x, y);
  EXPECT_EQ(kv_bytes(KvElem::kF16, 64), 128u);
  EXPECT_EQ(kv_bytes(KvElem::kQ8_0, 64), 68u);  // half of f16, plus two f16 scales
  row.assign(68, 0);
  kv_store(KvElem::kQ8_0, x.data(), row.data(), 64);
  kv_load(KvElem::kQ8_0, row.data(), y.data(), 64);
  for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], x[i], 3.0f / 127.0f) << i;  // half a step of max|x| / 127, and f16's d
}

}  // namespace
}  // namespace engine::kernels
