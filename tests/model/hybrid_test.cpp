// Hybrid stacks (qwen35, qwen35moe, qwen3next): loading, and the recurrent state's contract -- a sequence's
// logits are the same bits however its tokens are cut into batches, truncating within the last
// two chunks is exact, further back drops the sequence, and a snapshot resumes it exactly.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

constexpr int32_t C = RecurrentCache::kChunk;

std::vector<int32_t> tokens(size_t n, int64_t n_vocab, int32_t salt = 0) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) {
    t[i] = static_cast<int32_t>((i * 7919 + 13 + static_cast<size_t>(salt) * 101) % static_cast<size_t>(n_vocab - 3)) + 3;
  }
  t[0] = 1;
  return t;
}

// Evaluates tokens [from, to) of `t` as sequence seq in batches of the given sizes (cycled);
// returns every token's logits.
std::vector<float> run(Forward& fwd, KvCache& cache, ThreadPool& pool, SeqId seq, const std::vector<int32_t>& t,
                       size_t from, size_t to, const std::vector<size_t>& sizes) {
  std::vector<float> out;
  for (size_t i = from, k = 0; i < to; ++k) {
    Batch b;
    const size_t end = std::min(to, i + sizes[k % sizes.size()]);
    for (; i < end; ++i) b.add(t[i], seq, static_cast<int32_t>(i), true);
    fwd.eval(b, cache, pool);
    out.insert(out.end(), fwd.logits(0), fwd.logits(0) + b.size() * fwd.n_vocab());
  }
  return out;
}

// "synth-x": ../shared/models/synth/synth-x.gguf; "repo/synth-x": tests/data/reference/models/synth-x.gguf.
std::string model_file(const std::string& name) {
  if (name.rfind("repo/", 0) == 0) return std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/" + name.substr(5) + ".gguf";
  return shared_path("models/synth/" + name + ".gguf");
}
Model load(const std::string& name) { return Model::load(model_file(name)); }
#define REQUIRE_MODEL(name) \
  if ((name).rfind("repo/", 0) != 0) GGUFD_REQUIRE_SHARED("models/synth/" + (name) + ".gguf")

TEST(Hybrid, Qwen35HyperparametersAndLayers) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-qwen35mtp-Q8_0.gguf");
  const Model m = load("synth-qwen35mtp-Q8_0");
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.n_layer, 4);
  EXPECT_EQ(hp.n_layer_nextn, 1);
  EXPECT_EQ(hp.recurrent_layer, (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(hp.ssm.d_conv, 4);
  EXPECT_EQ(hp.ssm.d_state, 32);
  EXPECT_EQ(hp.ssm.n_k_heads, 2);
  EXPECT_EQ(hp.ssm.n_v_heads, 4);
  EXPECT_EQ(hp.ssm.k_head(3), 1) << "qwen35 cycles through the key heads";
  EXPECT_TRUE(hp.imrope);
  EXPECT_EQ(std::vector<int>(hp.rope_sections, hp.rope_sections + 4), (std::vector<int>{4, 2, 2, 0}));
  EXPECT_TRUE(hp.attn_out_gate);
  EXPECT_TRUE(m.layers[0].dn.present());
  EXPECT_FALSE(m.layers[3].dn.present());
  EXPECT_EQ(m.layers[3].wq.rows, 2 * hp.q_dim()) << "query and gate rows";
  ASSERT_EQ(m.nextn.size(), 1u);
  EXPECT_EQ(m.nextn[0].eh_proj.cols, 2 * hp.n_embd);
  EXPECT_EQ(m.nextn[0].shared_head_norm.size(), static_cast<size_t>(hp.n_embd));
  // K/V rows for the one attention layer only; a recurrent state per sequence beside them
  KvCache cache(hp, 64);
  EXPECT_EQ(cache.cell_bytes(), KvCache::cell_bytes_for(hp, KvType::kF16));
  EXPECT_EQ(cache.bytes(), 64 * cache.cell_bytes());
  EXPECT_EQ(cache.cell_bytes(), 2 * 2 * static_cast<size_t>(hp.k_dim())) << "one layer's f16 K and V";
  ASSERT_NE(cache.recurrent(), nullptr);
  bool described = false;
  for (const HParamField& f : describe_hparams(hp)) described |= f.name == "delta_net" || f.name == "recurrent_state";
  EXPECT_TRUE(described);
}

// qwen3next (tests/data/reference, made as its README says): NeoX RoPE over part of the head,
// no sections; each key head read by consecutive value heads; ssm_ba, or the older fused ssm_in.
TEST(Hybrid, Qwen3NextHyperparametersAndLayers) {
  const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/";
  const Model m = Model::load(dir + "synth-qwen3next-F32.gguf");
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, Arch::kQwen3Next);
  EXPECT_EQ(hp.recurrent_layer, (std::vector<uint8_t>{1, 1, 1, 0}));
  EXPECT_EQ(hp.n_rot, 16);
  EXPECT_FALSE(hp.imrope);
  EXPECT_TRUE(hp.attn_out_gate);
  EXPECT_TRUE(hp.expert_weights_norm);
  EXPECT_EQ(hp.ssm.k_head(1), 0) << "qwen3next: value heads 0 and 1 read key head 0";
  EXPECT_EQ(hp.ssm.k_head(2), 1);
  const DeltaNetWeights& dn = m.layers[0].dn;
  EXPECT_EQ(dn.w_ba.rows, 2 * hp.ssm.n_v_heads);
  EXPECT_EQ(dn.w_beta.data, nullptr);
  EXPECT_EQ(dn.w_in.data, nullptr);
  std::string described;
  for (const HParamField& f : describe_hparams(hp)) described += f.name + "=" + f.value + ";";
  EXPECT_NE(described.find("(grouped)"), std::string::npos) << described;
  EXPECT_NE(described.find("recurrent_state="), std::string::npos) << described;

  const Model old = Model::load(dir + "synth-qwen3next-ssmin-F32.gguf");
  const DeltaNetWeights& fused = old.layers[0].dn;
  EXPECT_EQ(fused.w_in.rows, 2 * old.hparams().ssm.key_dim() + 2 * old.hparams().ssm.d_inner);
  EXPECT_EQ(fused.wqkv.data, nullptr);
}

// lfm2: head_count_kv per layer, 0 marking the short-convolution layers, whose state is the
// conv's last l_cache - 1 inputs (no delta rule); only the attention layers keep K/V rows.
TEST(Hybrid, Lfm2HyperparametersAndLayers) {
  const Model m = load("repo/synth-lfm2-F32");
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, Arch::kLfm2);
  EXPECT_EQ(hp.recurrent_layer, (std::vector<uint8_t>{1, 1, 0, 1, 1, 0}));
  EXPECT_EQ(hp.n_head_kv, 2);
  EXPECT_TRUE(hp.ssm.short_conv);
  EXPECT_EQ(hp.ssm.d_conv, 3);
  EXPECT_EQ(hp.ssm.conv_channels(), hp.n_embd);
  EXPECT_EQ(hp.ssm.state_floats(), 0);
  EXPECT_FALSE(hp.attn_out_gate);
  EXPECT_EQ(m.layers[0].sc.in_proj.rows, 3 * hp.n_embd);
  EXPECT_EQ(m.layers[0].sc.conv.size(), static_cast<size_t>(3 * hp.n_embd));
  EXPECT_EQ(m.layers[2].sc.in_proj.data, nullptr);
  EXPECT_FALSE(m.layers[2].q_norm.empty());
  KvCache cache(hp, 64);
  EXPECT_EQ(cache.cell_bytes(), 2 * 2 * 2 * static_cast<size_t>(hp.k_dim())) << "two layers' f16 K and V";
  ASSERT_NE(cache.recurrent(), nullptr);
  bool described = false;
  for (const HParamField& f : describe_hparams(hp)) described |= f.name == "short_conv";
  EXPECT_TRUE(described);
}

// The snapshot pool's bookkeeping, on a tiny layer shape: captures reuse free slots, then the least
// recently used committed ones (never one being written); going back drops unclaimed snapshots
// after the new end; a claimed one survives until released or evicted.
TEST(RecurrentCacheSnapshots, PoolBookkeeping) {
  HParams hp;
  hp.n_layer = 2;
  hp.ssm = {4, 8, 1, 2, 16, false};
  hp.recurrent_layer = {1, 0};
  RecurrentCache rc(hp, 2, 2);
  EXPECT_EQ(rc.n_snapshots(), 2);
  EXPECT_EQ(rc.snapshot_size(), (2 * 8 * 8 + 3 * (2 * 8 + 16)) * sizeof(float));
  rc.prepare(0);
  rc.prepare(1);
  EXPECT_THROW(rc.prepare(2), std::runtime_error) << "two sequences at most";
  const int32_t a = rc.capture(0, C), b = rc.capture(0, 2 * C);
  ASSERT_GE(a, 0);
  ASSERT_GE(b, 0);
  EXPECT_EQ(rc.capture(1, C), -1) << "both slots are being written";
  rc.commit(a);
  rc.commit(b);
  rc.advance(0, 2 * C + 5);
  EXPECT_FALSE(rc.valid(rc.claim(1, C))) << "another sequence's";
  const RecurrentCache::SnapshotRef ra = rc.claim(0, C);
  ASSERT_TRUE(rc.valid(ra));
  EXPECT_FALSE(rc.valid(rc.claim(0, C))) << "claimed once";
  EXPECT_EQ(rc.truncate(0, 2 * C - 1), 2 * C - 1) << "back into the chunk before";
  EXPECT_TRUE(rc.valid(ra)) << "claimed: kept";
  EXPECT_FALSE(rc.valid(rc.claim(0, 2 * C))) << "unclaimed and after the new end: dropped";
  EXPECT_EQ(rc.truncate(0, 10), -1) << "before the chunk at C: the state is gone";
  EXPECT_EQ(rc.length(0), 0);
  EXPECT_TRUE(rc.valid(ra));
  const int32_t c = rc.capture(1, C);  // the free slot, not ra's
  ASSERT_GE(c, 0);
  rc.commit(c);
  const int32_t d = rc.capture(1, 2 * C);  // the least recently used committed one: ra's
  ASSERT_GE(d, 0);
  EXPECT_FALSE(rc.valid(ra)) << "evicted";
  rc.drop_uncommitted();
  EXPECT_FALSE(rc.valid(rc.claim(1, 2 * C)));
  const RecurrentCache::SnapshotRef rc1 = rc.claim(1, C);
  ASSERT_TRUE(rc.valid(rc1));
  rc.release(rc1);
  EXPECT_FALSE(rc.valid(rc1));
}

class HybridState : public ::testing::TestWithParam<std::string> {};

// 100 tokens in one batch, one at a time, and in odd batch sizes: the same bits.
TEST_P(HybridState, LogitsDoNotDependOnHowTheSequenceIsCut) {
  REQUIRE_MODEL(GetParam());
  const Model m = load(GetParam());
  ThreadPool pool(2);
  const std::vector<int32_t> t = tokens(100, m.hparams().n_vocab);
  std::vector<std::vector<float>> got;
  for (const std::vector<size_t>& sizes : std::vector<std::vector<size_t>>{{100}, {1}, {7, 3, 40, 1}}) {
    KvCache cache(m.hparams(), 128);
    Forward fwd(m, 64);
    got.push_back(run(fwd, cache, pool, 5, t, 0, t.size(), sizes));
    EXPECT_EQ(cache.recurrent()->length(5), 100);
  }
  EXPECT_TRUE(got[0] == got[1]) << "token by token";
  EXPECT_TRUE(got[0] == got[2]) << "odd batches";
}

// Truncating within the last two chunks and evaluating the rest again gives the same logits;
// further back the state is gone and the sequence is dropped.
TEST_P(HybridState, TruncationIsExactWithinTwoChunks) {
  REQUIRE_MODEL(GetParam());
  const Model m = load(GetParam());
  const int64_t V = m.hparams().n_vocab;
  ThreadPool pool(2);
  const std::vector<int32_t> t = tokens(100, V, 2);
  KvCache cache(m.hparams(), 128);
  Forward fwd(m, 64);
  const std::vector<float> all = run(fwd, cache, pool, 0, t, 0, t.size(), {100});
  for (int32_t keep : {99, 96, 80, 64}) {  // (100 is in chunk 96; the one before starts at 64)
    ASSERT_EQ(cache.truncate(0, keep), keep);
    const std::vector<float> again = run(fwd, cache, pool, 0, t, static_cast<size_t>(keep), t.size(), {3});
    EXPECT_TRUE(std::equal(again.begin(), again.end(), all.begin() + keep * V)) << "from " << keep;
  }
  ASSERT_EQ(cache.truncate(0, 80), 80);
  EXPECT_EQ(cache.truncate(0, 40), 0) << "40 is before chunk 64, the oldest one held after going back to 80";
  EXPECT_FALSE(cache.has_sequence(0));
  EXPECT_EQ(cache.recurrent()->length(0), 0);
  // a batch that does not continue the state is refused
  run(fwd, cache, pool, 1, t, 0, 10, {10});
  Batch b;
  b.add(t[20], 1, 20, true);
  EXPECT_THROW(fwd.eval(b, cache, pool), std::invalid_argument);
}

// A snapshot taken at position 64 while sequence 0 passes it, restored into sequence 1 over the
// same cells: sequence 1's next tokens get sequence 0's logits, bit for bit.
TEST_P(HybridState, ASnapshotResumesASequenceExactly) {
  REQUIRE_MODEL(GetParam());
  const Model m = load(GetParam());
  const int64_t V = m.hparams().n_vocab;
  ThreadPool pool(2);
  const std::vector<int32_t> t = tokens(100, V, 3);
  KvCache cache(m.hparams(), 256);
  cache.reserve_recurrent(2, 8);
  Forward fwd(m, 48);
  const std::vector<float> all = run(fwd, cache, pool, 0, t, 0, t.size(), {48});
  RecurrentCache& rc = *cache.recurrent();
  EXPECT_FALSE(rc.valid(rc.claim(0, 50))) << "snapshots fall on chunk boundaries";
  const RecurrentCache::SnapshotRef snap = rc.claim(0, 2 * C);
  ASSERT_TRUE(rc.valid(snap));
  std::vector<int32_t> cells;
  for (const KvCache::Entry& e : cache.entries(0)) {
    if (e.pos < 2 * C) cells.push_back(e.cell);
  }
  cache.attach(1, cells);
  ASSERT_TRUE(rc.restore(1, snap));
  EXPECT_EQ(rc.length(1), 2 * C);
  const std::vector<float> resumed = run(fwd, cache, pool, 1, t, 2 * C, t.size(), {5});
  EXPECT_TRUE(std::equal(resumed.begin(), resumed.end(), all.begin() + 2 * C * V));
  // a claimed snapshot survives its sequence going back; released, it is gone
  ASSERT_EQ(cache.truncate(0, 70), 70);
  EXPECT_TRUE(rc.valid(snap));
  rc.release(snap);
  EXPECT_FALSE(rc.valid(snap));
}

INSTANTIATE_TEST_SUITE_P(Models, HybridState,
                         ::testing::Values("synth-qwen35-Q8_0", "synth-qwen35moe-F32", "repo/synth-lfm2-Q8_0",
                                           "repo/synth-lfm2moe-Q8_0"),
                         [](const auto& p) {
                           std::string s = p.param.substr(p.param.find('/') + 1);
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

}  // namespace
}  // namespace engine
