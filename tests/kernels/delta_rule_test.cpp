// The chunked gated delta rule (kernels/delta_rule.h) against the plain recurrence, token by token,
// for the scalar and AVX2 kernels: outputs and the state at each chunk's end agree to float
// rounding (head sizes 32 and 19: the vector loops' tails).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/delta_rule.h"
#include "engine/kernels/dispatch.h"

namespace engine::kernels {
namespace {

struct Tokens {
  int n, dk, dv;
  std::vector<float> q, k, v, gate, beta;  // (n, dk) (n, dk) (n, dv) (n,) (n,)
};

void normalize(float* x, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += double(x[i]) * x[i];
  for (int i = 0; i < n; ++i) x[i] = static_cast<float>(x[i] / std::sqrt(s));
}

Tokens make_tokens(int n, int dk, int dv, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  Tokens t{n, dk, dv, {}, {}, {}, {}, {}};
  for (int i = 0; i < n * dk; ++i) t.q.push_back(nd(rng)), t.k.push_back(nd(rng));
  for (int i = 0; i < n * dv; ++i) t.v.push_back(nd(rng));
  for (int i = 0; i < n; ++i) {
    normalize(&t.q[static_cast<size_t>(i * dk)], dk);
    normalize(&t.k[static_cast<size_t>(i * dk)], dk);
    t.gate.push_back(-0.5f * ud(rng));  // decays in (0.6, 1]
    t.beta.push_back(ud(rng));
  }
  return t;
}

// The chunked form over the tokens in chunks of C, from state s0; the state after them in s_end.
std::vector<float> chunked(const Tokens& x, int C, const std::vector<float>& s0_in, std::vector<float>& s_end,
                           DeltaRowFn row, DeltaEndFn end) {
  const int dk = x.dk, dv = x.dv;
  std::vector<float> s0 = s0_in, o(static_cast<size_t>(x.n * dv)), d(static_cast<size_t>(C * dv)), G(static_cast<size_t>(C));
  std::vector<float> scratch(static_cast<size_t>(3 * C + 2 * dv)), next(s0.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(dk));
  for (int c0 = 0; c0 < x.n; c0 += C) {
    const int m = std::min(C, x.n - c0);
    for (int t = 0; t < m; ++t) {
      G[static_cast<size_t>(t)] = (t ? G[static_cast<size_t>(t - 1)] : 0.0f) + x.gate[static_cast<size_t>(c0 + t)];
      row({s0.data(), &x.k[static_cast<size_t>(c0 * dk)], static_cast<size_t>(dk), d.data(), static_cast<size_t>(dv), G.data(), 1, t,
           &x.q[static_cast<size_t>((c0 + t) * dk)], &x.v[static_cast<size_t>((c0 + t) * dv)], x.beta[static_cast<size_t>(c0 + t)],
           scale, &o[static_cast<size_t>((c0 + t) * dv)], dk, dv, scratch.data()});
    }
    end({s0.data(), &x.k[static_cast<size_t>(c0 * dk)], static_cast<size_t>(dk), d.data(), static_cast<size_t>(dv), G.data(), 1, m,
         next.data(), dk, dv, scratch.data()});
    s0 = next;
  }
  s_end = s0;
  return o;
}

void check_against_recurrence(DeltaRowFn row, DeltaEndFn end) {
  for (int dk : {32, 19}) {
    const Tokens x = make_tokens(100, dk, dk, 7 + static_cast<uint32_t>(dk));
    std::vector<float> s(static_cast<size_t>(dk * dk));
    std::mt19937 rng(3);
    std::normal_distribution<float> nd(0.0f, 0.3f);
    for (float& v : s) v = nd(rng);
    const std::vector<float> s0 = s;
    std::vector<float> want(static_cast<size_t>(x.n * dk));
    for (int t = 0; t < x.n; ++t) {
      ref::delta_step(s.data(), &x.q[static_cast<size_t>(t * dk)], &x.k[static_cast<size_t>(t * dk)],
                      &x.v[static_cast<size_t>(t * dk)], x.gate[static_cast<size_t>(t)], x.beta[static_cast<size_t>(t)],
                      1.0f / std::sqrt(static_cast<float>(dk)), &want[static_cast<size_t>(t * dk)], dk, dk);
    }
    std::vector<float> s_end;
    const std::vector<float> got = chunked(x, 32, s0, s_end, row, end);
    for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 2e-5f + 2e-5f * std::abs(want[i])) << "output " << i;
    for (size_t i = 0; i < s.size(); ++i) ASSERT_NEAR(s_end[i], s[i], 2e-5f + 2e-5f * std::abs(s[i])) << "state " << i;
  }
}

TEST(DeltaRule, ScalarChunkedFormIsTheRecurrence) { check_against_recurrence(ref::delta_row, ref::delta_end); }

TEST(DeltaRule, Avx2ChunkedFormIsTheRecurrence) {
  if (avx2_dispatch() == nullptr) GTEST_SKIP() << "no AVX2";
  check_against_recurrence(avx2::delta_row, avx2::delta_end);
}

}  // namespace
}  // namespace engine::kernels
