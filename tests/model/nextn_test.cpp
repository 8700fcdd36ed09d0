// The NextN / MTP block (qwen35's nextn_predict_layers, `--spec mtp`): its draft logits against a
// straightforward f32 computation of llama.cpp's qwen35 MTP graph from the stack's hidden states;
// its rows do not depend on what else is in the batch; the hidden states the cache keeps follow
// truncation; a cache cannot have NextN rows for a model without them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/kernels/matmul.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/model/ops.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

const std::string kMtp = "models/synth/synth-qwen35mtp-Q8_0.gguf";
using Vec = std::vector<float>;

std::vector<int32_t> prompt(size_t n, int64_t n_vocab, int32_t salt) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>((i * 7919 + 31 + static_cast<size_t>(salt) * 57) % static_cast<size_t>(n_vocab - 3)) + 3;
  t[0] = 1;
  return t;
}

// y (rows,) = W (rows, cols) @ x (cols,), W's rows dequantized to f32
Vec mv(const Matrix& w, const Vec& x) {
  Vec row(static_cast<size_t>(w.cols)), y(static_cast<size_t>(w.rows));
  for (int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w, r, row.data());
    double s = 0;
    for (int64_t c = 0; c < w.cols; ++c) s += static_cast<double>(row[static_cast<size_t>(c)]) * x[static_cast<size_t>(c)];
    y[static_cast<size_t>(r)] = static_cast<float>(s);
  }
  return y;
}

Vec norm(const Vec& x, const std::vector<float>& w, float eps) {
  double ss = 0;
  for (float v : x) ss += static_cast<double>(v) * v;
  const double inv = 1.0 / std::sqrt(ss / static_cast<double>(x.size()) + eps);
  Vec y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = static_cast<float>(x[i] * inv) * w[i];
  return y;
}

Vec add(Vec a, const Vec& b) {
  for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  return a;
}

// llama.cpp's qwen35 graph_mtp, one position at a time, everything in f32 / double: keeps the
// block's K and V of every position it has seen.
struct ReferenceMtp {
  const Model& m;
  const HParams& hp = m.hparams();
  std::vector<Vec> keys, values;  // per position (n_head_kv * hd,)

  // The block for token x at position p = keys.size() with input h; returns (hidden after the head norm, logits).
  std::pair<Vec, Vec> step(int32_t x, const Vec& h) {
    const LayerWeights& l = m.nextn_layers[0];
    const NextNWeights& w = m.nextn[0];
    const int64_t E = hp.n_embd, hd = hp.head_dim_k, H = hp.n_head, KV = hp.n_head_kv;
    const auto p = static_cast<int32_t>(keys.size());
    Vec e(static_cast<size_t>(E));
    dequantize_row(w.embed_tokens.data ? w.embed_tokens : m.tok_embd, x, e.data());
    Vec cat = norm(e, w.enorm, hp.rms_eps);
    const Vec hn = norm(h, w.hnorm, hp.rms_eps);
    cat.insert(cat.end(), hn.begin(), hn.end());
    const Vec x0 = mv(w.eh_proj, cat);
    const Vec a = norm(x0, l.attn_norm, hp.rms_eps);
    const Vec qg = mv(l.wq, a);  // per head: query (hd), then gate (hd)
    Vec k = mv(l.wk, a), v = mv(l.wv, a);
    RopeParams rp;
    rp.n_rot = hp.n_rot;
    rp.freq_base = hp.rope_freq_base;
    rp.freq_scale = hp.rope_freq_scale;
    rp.imrope = hp.imrope;
    std::copy(std::begin(hp.rope_sections), std::end(hp.rope_sections), rp.sections);
    Vec angles(static_cast<size_t>(hp.n_rot));
    rope_angles(angles.data(), p, rp);
    for (int64_t g = 0; g < KV; ++g) {
      Vec kh(k.begin() + g * hd, k.begin() + (g + 1) * hd);
      kh = norm(kh, l.k_norm, hp.rms_eps);
      rope(kh.data(), angles.data(), hp.n_rot, hp.rope_style);
      std::copy(kh.begin(), kh.end(), k.begin() + g * hd);
    }
    keys.push_back(k);
    values.push_back(v);
    const float scale = hp.kq_scale != 0.0f ? hp.kq_scale : 1.0f / std::sqrt(static_cast<float>(hd));
    Vec att(static_cast<size_t>(H * hd));
    for (int64_t hh = 0; hh < H; ++hh) {
      Vec q(qg.begin() + hh * 2 * hd, qg.begin() + hh * 2 * hd + hd);
      q = norm(q, l.q_norm, hp.rms_eps);
      rope(q.data(), angles.data(), hp.n_rot, hp.rope_style);
      const int64_t g = hh / (H / KV);
      std::vector<double> s(keys.size());
      double top = -1e300, sum = 0;
      for (size_t j = 0; j < keys.size(); ++j) {
        double d = 0;
        for (int64_t c = 0; c < hd; ++c) d += static_cast<double>(q[static_cast<size_t>(c)]) * keys[j][static_cast<size_t>(g * hd + c)];
        s[j] = d * scale;
        top = std::max(top, s[j]);
      }
      for (double& x2 : s) sum += (x2 = std::exp(x2 - top));
      for (int64_t c = 0; c < hd; ++c) {
        double o = 0;
        for (size_t j = 0; j < keys.size(); ++j) o += s[j] / sum * values[j][static_cast<size_t>(g * hd + c)];
        const float gate = qg[static_cast<size_t>(hh * 2 * hd + hd + c)];
        att[static_cast<size_t>(hh * hd + c)] = static_cast<float>(o) / (1.0f + std::exp(-gate));
      }
    }
    const Vec x1 = add(x0, mv(l.wo, att));
    const Vec f = norm(x1, l.ffn_norm, hp.rms_eps);
    Vec gate = mv(l.ffn_gate, f);
    const Vec up = mv(l.ffn_up, f);
    for (size_t i = 0; i < gate.size(); ++i) gate[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
    const Vec x2 = add(x1, mv(l.ffn_down, gate));
    Vec out = norm(x2, w.shared_head_norm.empty() ? m.output_norm : w.shared_head_norm, hp.rms_eps);
    Vec logits = mv(w.shared_head_head.data ? w.shared_head_head : m.output, out);
    return {out, logits};
  }
};

// Relative to the reference's largest magnitude.
float worst(const float* got, const Vec& want) {
  float top = 0, diff = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    top = std::max(top, std::fabs(want[i]));
    diff = std::max(diff, std::fabs(got[i] - want[i]));
  }
  return diff / top;
}

TEST(NextN, DraftLogitsMatchAStraightforwardComputation) {
  GGUFD_REQUIRE_SHARED(kMtp);
  const Model m = Model::load(shared_path(kMtp));
  const Model plain = Model::load(shared_path(kMtp), /*repack=*/false);
  const HParams& hp = m.hparams();
  const auto E = static_cast<size_t>(hp.n_embd);
  ThreadPool pool(2);
  Forward fwd(m, 64);
  KvCache cache(hp, 128, KvType::kF32, 0, /*nextn=*/true);
  const std::vector<int32_t> t = prompt(21, hp.n_vocab, 0);
  Batch b;
  for (size_t i = 0; i < t.size(); ++i) b.add(t[i], 0, static_cast<int32_t>(i), false, true);
  fwd.eval(b, cache, pool);
  ASSERT_EQ(fwd.n_hidden(), static_cast<int64_t>(t.size()));
  // The reference's K/V of positions 0..n-1: token p with the stack's hidden state at p - 1 (0 at p = 0).
  ReferenceMtp ref{plain};
  Vec h(E, 0.0f);
  for (size_t p = 0; p < t.size(); ++p) {
    ref.step(t[p], h);
    h.assign(fwd.hidden(static_cast<int64_t>(p)), fwd.hidden(static_cast<int64_t>(p)) + E);
    const float* kept = cache.hidden(0, static_cast<int32_t>(p));
    ASSERT_NE(kept, nullptr) << "position " << p;
    EXPECT_EQ(Vec(kept, kept + E), h) << "the cache keeps the stack's hidden state of position " << p;
  }
  // Three chained drafts after the next token, from position n on.
  int32_t next = 7;
  Vec hin = h;
  for (int32_t i = 0; i < 3; ++i) {
    const auto pos = static_cast<int32_t>(t.size()) + i;
    Batch d;
    d.add(next, 0, pos, true);
    fwd.eval_nextn(d, hin.data(), cache, pool);
    const auto [want_h, want_logits] = ref.step(next, hin);
    const float lerr = worst(fwd.logits(0), want_logits), herr = worst(fwd.hidden(0), want_h);
    EXPECT_LT(lerr, 0.02f) << "draft " << i;
    EXPECT_LT(herr, 0.02f) << "draft " << i;
    std::printf("[ nextn    ] draft %d: logits within %.5f, hidden within %.5f of the reference (relative to its largest)\n",
                i, static_cast<double>(lerr), static_cast<double>(herr));
    next = static_cast<int32_t>(std::max_element(want_logits.begin(), want_logits.end()) - want_logits.begin());
    hin.assign(fwd.hidden(0), fwd.hidden(0) + E);
  }
  EXPECT_EQ(cache.seq_length(0), static_cast<int32_t>(t.size()) + 3) << "the drafts' rows are in cells";
  EXPECT_EQ(cache.recurrent()->length(0), static_cast<int32_t>(t.size())) << "the recurrent state is left alone";
  EXPECT_EQ(cache.truncate(0, static_cast<int32_t>(t.size())), static_cast<int32_t>(t.size()));
}

// Sequence 0's drafts are the same bits whatever else is in the stack's and the NextN block's batches.
TEST(NextN, RowsDoNotDependOnTheBatch) {
  GGUFD_REQUIRE_SHARED(kMtp);
  const Model m = Model::load(shared_path(kMtp));
  const HParams& hp = m.hparams();
  const auto E = static_cast<size_t>(hp.n_embd);
  const auto V = static_cast<size_t>(hp.n_vocab);
  ThreadPool pool(2);
  const std::vector<int32_t> a = prompt(19, hp.n_vocab, 1), other = prompt(27, hp.n_vocab, 2);
  auto drafts = [&](bool together) {
    Forward fwd(m, 64);
    KvCache cache(hp, 128, KvType::kF16, 0, true);
    Batch b;
    for (size_t i = 0; i < a.size(); ++i) b.add(a[i], 0, static_cast<int32_t>(i), false);
    if (together) {
      for (size_t i = 0; i < other.size(); ++i) b.add(other[i], 1, static_cast<int32_t>(i), false);
    }
    fwd.eval(b, cache, pool);
    Batch d;
    d.add(5, 0, static_cast<int32_t>(a.size()), true);
    Vec h(cache.hidden(0, static_cast<int32_t>(a.size()) - 1), cache.hidden(0, static_cast<int32_t>(a.size()) - 1) + E);
    if (together) {
      d.add(9, 1, static_cast<int32_t>(other.size()), true);
      const float* h1 = cache.hidden(1, static_cast<int32_t>(other.size()) - 1);
      h.insert(h.end(), h1, h1 + E);
    }
    fwd.eval_nextn(d, h.data(), cache, pool);
    return Vec(fwd.logits(0), fwd.logits(0) + V);
  };
  EXPECT_EQ(drafts(false), drafts(true));
}

TEST(NextN, KeptHiddenStatesFollowTruncation) {
  GGUFD_REQUIRE_SHARED(kMtp);
  const Model m = Model::load(shared_path(kMtp));
  const HParams& hp = m.hparams();
  const auto E = static_cast<int64_t>(hp.n_embd);
  KvCache cache(hp, 256, KvType::kF16, 0, true);
  std::vector<float> rows(static_cast<size_t>(100 * E));
  for (size_t i = 0; i < rows.size(); ++i) rows[i] = static_cast<float>(i / static_cast<size_t>(E));  // row r holds r
  cache.keep_hidden(3, 0, rows.data(), 10);
  cache.keep_hidden(3, 10, rows.data() + 10 * E, 90);  // continues: the last kKeptHidden of 0..99 kept
  EXPECT_EQ(cache.hidden(3, 99 - KvCache::kKeptHidden), nullptr);
  ASSERT_NE(cache.hidden(3, 100 - KvCache::kKeptHidden), nullptr);
  EXPECT_EQ(cache.hidden(3, 100 - KvCache::kKeptHidden)[0], 100.0f - KvCache::kKeptHidden);
  EXPECT_EQ(cache.hidden(3, 99)[E - 1], 99.0f);
  EXPECT_EQ(cache.hidden(3, 100), nullptr);
  cache.truncate(3, 90);
  EXPECT_EQ(cache.hidden(3, 90), nullptr) << "dropped positions' states go";
  EXPECT_EQ(cache.hidden(3, 89)[0], 89.0f);
  cache.keep_hidden(3, 50, rows.data(), 2);  // not a continuation: replaces
  EXPECT_EQ(cache.hidden(3, 89), nullptr);
  EXPECT_EQ(cache.hidden(3, 51)[0], 1.0f);
  cache.free_sequence(3);
  EXPECT_EQ(cache.hidden(3, 51), nullptr);
  EXPECT_EQ(KvCache::cell_bytes_for(hp, KvType::kF16, true), 2 * KvCache::cell_bytes_for(hp, KvType::kF16))
      << "one attention layer in the stack, one NextN block";
}

TEST(NextN, AModelWithoutNextNLayersHasNoNextNRows) {
  const std::string file = "models/synth/synth-qwen35-Q8_0.gguf";
  GGUFD_REQUIRE_SHARED(file);
  const Model m = Model::load(shared_path(file));
  try {
    KvCache cache(m.hparams(), 16, KvType::kF16, 0, true);
    ADD_FAILURE() << "NextN rows for a model without NextN layers";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "KV cache: NextN rows for a model without NextN / MTP layers (nextn_predict_layers)");
  }
}

}  // namespace
}  // namespace engine
