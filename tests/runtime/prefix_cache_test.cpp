// PrefixCache on a KvCache without a model: blocks published and attached, verified token by token
// (also under colliding hashes), cells adopted, counted and evicted least recently used first,
// never while a sequence uses them.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "engine/model/kv_cache.h"
#include "engine/runtime/prefix_cache.h"
#include "tests/runtime/scheduler_fakes.h"

namespace engine {
namespace {

using engine::test::one_head_hparams;

constexpr int32_t B = PrefixCache::kBlockTokens;

// n tokens, distinct per `salt`.
std::vector<int32_t> tokens(size_t n, int32_t salt = 0) {
  std::vector<int32_t> t(n);
  for (size_t i = 0; i < n; ++i) t[i] = static_cast<int32_t>(i * 7 + 1000 * salt) % 5000;
  return t;
}

std::vector<int32_t> concat(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// What the forward pass does to the cache: a cell for each of seq's positions from its length on.
void compute(KvCache& c, SeqId seq, size_t n) {
  for (auto p = static_cast<int32_t>(c.seq_length(seq)); p < static_cast<int32_t>(n); ++p) c.cell_for(seq, p);
}

std::vector<int32_t> cells(const KvCache& c, SeqId seq, size_t n) {
  std::vector<int32_t> out;
  for (size_t i = 0; i < n && i < c.entries(seq).size(); ++i) out.push_back(c.entries(seq)[i].cell);
  return out;
}

int32_t attach(PrefixCache& pc, SeqId seq, const std::vector<int32_t>& t, int32_t have = 0) {
  return pc.attach(seq, t, have, static_cast<int32_t>(t.size()) - 1);
}

TEST(PrefixCache, AnotherSequenceAttachesThePublishedBlocks) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache pc(c, 64);
  const std::vector<int32_t> p = tokens(100);
  compute(c, 0, p.size());
  pc.publish(0, p);
  EXPECT_EQ(pc.stats().blocks, 3) << "100 tokens: three complete blocks";
  EXPECT_EQ(pc.stats().bytes, 3u * B * c.cell_bytes());
  EXPECT_EQ(pc.stats().reserved_cells, 64);
  // A prompt sharing the first 80 tokens: two blocks, the third differs.
  const std::vector<int32_t> q = concat({p.begin(), p.begin() + 80}, tokens(30, 1));
  EXPECT_EQ(attach(pc, 1, q), 2 * B);
  EXPECT_EQ(c.seq_length(1), 2 * B);
  EXPECT_EQ(cells(c, 1, 2 * B), cells(c, 0, 2 * B));
  for (int32_t cell : cells(c, 1, 2 * B)) EXPECT_EQ(c.refs(cell), 3) << "seq 0, seq 1 and the block";
  EXPECT_EQ(c.refs(cells(c, 0, 3 * B).back()), 2) << "the third block: seq 0 and the cache";
  // seq 1 goes on in cells of its own.
  compute(c, 1, q.size());
  EXPECT_EQ(c.refs(c.entries(1).back().cell), 1);
  const PrefixCacheStats s = pc.stats();
  EXPECT_EQ(s.lookups, 1);
  EXPECT_EQ(s.hit_tokens, 2 * B);
  EXPECT_EQ(s.block_tokens, B);
}

// The last prompt token is always computed (n_max), and a sequence keeps what it has when the
// cache offers no more.
TEST(PrefixCache, AttachesOnlyWhatIsLongerThanWhatTheSequenceHasAndWithinNMax) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache pc(c);
  const std::vector<int32_t> p = tokens(2 * B);
  compute(c, 0, p.size());
  pc.publish(0, p);
  EXPECT_EQ(attach(pc, 1, p), B) << "2B tokens, the last one computed again: one block";
  EXPECT_EQ(pc.attach(2, p, 0, 2 * B), 2 * B);
  compute(c, 3, 40);
  const std::vector<int32_t> mine = cells(c, 3, 40);
  EXPECT_EQ(pc.attach(3, p, 40, 2 * B - 1), 0) << "seq 3 holds 40 > 32 already";
  EXPECT_EQ(cells(c, 3, 40), mine);
  EXPECT_EQ(pc.stats().lookups, 3);
  EXPECT_EQ(pc.stats().hit_tokens, 3 * B);
  EXPECT_EQ(pc.attach(4, std::vector<int32_t>(10, 1), 0, 9), 0) << "shorter than a block";
}

TEST(PrefixCache, PromptsDifferingInsideABlockNeverShareIt) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache pc(c);
  const std::vector<int32_t> p = tokens(100);
  compute(c, 0, p.size());
  pc.publish(0, p);
  std::vector<int32_t> q = p;
  q[40] += 1;  // inside the second block
  EXPECT_EQ(attach(pc, 1, q), B);
  q = p;
  q[B - 1] += 1;  // the first block's last token
  EXPECT_EQ(attach(pc, 2, q), 0);
  q = p;
  q[0] += 1;
  EXPECT_EQ(attach(pc, 3, q), 0);
  EXPECT_FALSE(c.has_sequence(3));
}

// Keys are hints: a block is used only when its tokens and its parent match, so colliding keys
// can cost a hit but never give one prompt another's K/V.
TEST(PrefixCache, CollidingHashesNeverServeAnotherPrompt) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache every_key_equal(c, 0, [](uint64_t, const int32_t*, int32_t) -> uint64_t { return 42; });
  const std::vector<int32_t> p = tokens(3 * B);
  compute(c, 0, p.size());
  every_key_equal.publish(0, p);
  EXPECT_EQ(every_key_equal.stats().blocks, 1) << "the second block's key is taken: publishing stops";
  EXPECT_EQ(attach(every_key_equal, 1, p), B);
  EXPECT_EQ(attach(every_key_equal, 2, tokens(3 * B, 1)), 0) << "same key, other tokens";
  every_key_equal.clear();
  c.free_sequence(1);
  // A key that ignores what came before: block W of [X, W] finds [X, Y, W]'s third block, whose
  // parent is Y, not X.
  PrefixCache block_only(c, 0, [](uint64_t, const int32_t* t, int32_t n) { return PrefixCache::default_hash(0, t, n); });
  const std::vector<int32_t> x = tokens(B, 1), y = tokens(B, 2), w = tokens(B, 3);
  const std::vector<int32_t> xyw = concat(concat(x, y), w);
  compute(c, 3, xyw.size());
  block_only.publish(3, xyw);
  EXPECT_EQ(block_only.stats().blocks, 3);
  EXPECT_EQ(attach(block_only, 4, concat(concat(x, w), {7})), B);
  EXPECT_EQ(attach(block_only, 5, concat(w, {7})), 0) << "W is not a first block";
  EXPECT_EQ(attach(block_only, 6, concat(xyw, {7})), 3 * B);
}

// Two sequences computed the same tokens: the second to publish takes the cached block's cells and
// its own are freed; a later block of its own is cached after them.
TEST(PrefixCache, PublishingAKnownBlockAdoptsItsCells) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache pc(c);
  const std::vector<int32_t> p = tokens(2 * B);
  compute(c, 0, p.size());
  compute(c, 1, p.size());
  pc.publish(0, p);
  const int64_t free_before = c.n_free();
  const std::vector<int32_t> longer = concat(p, tokens(B, 5));
  compute(c, 1, longer.size());
  pc.publish(1, longer);
  EXPECT_EQ(cells(c, 1, 2 * B), cells(c, 0, 2 * B));
  EXPECT_EQ(c.n_free(), free_before - B + 2 * B) << "seq 1 took a block of cells, and gave back two";
  EXPECT_EQ(pc.stats().blocks, 3);
  EXPECT_EQ(attach(pc, 2, concat(longer, {1})), 3 * B);
}

// A conversation: the first turn's prompt and reply are cached as they are computed, and the
// next turn, on another sequence, starts after them.
TEST(PrefixCache, GeneratedTokensAreSharedToo) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache pc(c);
  const std::vector<int32_t> turn1 = tokens(50);
  compute(c, 0, turn1.size());
  pc.publish(0, turn1);
  EXPECT_EQ(pc.stats().blocks, 1);
  const std::vector<int32_t> reply = concat(turn1, tokens(40, 4));
  compute(c, 0, reply.size());
  pc.publish(0, reply);
  EXPECT_EQ(pc.stats().blocks, 2);
  c.free_sequence(0);
  EXPECT_EQ(attach(pc, 1, concat(reply, tokens(20, 6))), 2 * B);
}

// Only what a sequence holds at positions 0, 1, ... is published.
TEST(PrefixCache, PublishesNothingPastAGap) {
  KvCache c(one_head_hparams(), 1024);
  PrefixCache pc(c);
  const std::vector<int32_t> p = tokens(2 * B);
  for (int32_t pos = 1; pos < 2 * B; ++pos) c.cell_for(0, pos);  // no position 0
  pc.publish(0, p);
  EXPECT_EQ(pc.stats().blocks, 0);
  pc.publish(1, p);  // no such sequence
  EXPECT_EQ(pc.stats().blocks, 0);
  compute(c, 2, B + 5);
  pc.publish(2, p);  // tokens beyond what seq 2 holds
  EXPECT_EQ(pc.stats().blocks, 1);
}

TEST(PrefixCache, EvictsLeastRecentlyUsedBlocksNoSequenceUses) {
  KvCache c(one_head_hparams(), 4 * B);
  PrefixCache pc(c);
  const std::vector<int32_t> a = tokens(2 * B, 1), b = tokens(B, 2);
  compute(c, 0, a.size());
  pc.publish(0, a);
  c.free_sequence(0);  // a's two blocks: held by the cache alone
  compute(c, 1, b.size());
  pc.publish(1, b);    // b's block: in use by seq 1
  EXPECT_EQ(c.n_free(), B);
  EXPECT_TRUE(pc.make_room(B)) << "enough already";
  EXPECT_EQ(pc.stats().evictions, 0);
  EXPECT_TRUE(pc.make_room(2 * B));
  EXPECT_EQ(pc.stats().evictions, 1) << "a's second block: a leaf, least recently used";
  EXPECT_EQ(attach(pc, 2, concat(a, {0})), B) << "a's first block is still there";
  c.free_sequence(2);
  EXPECT_FALSE(pc.make_room(4 * B)) << "seq 1 uses b's block";
  EXPECT_EQ(pc.stats().evictions, 2);
  EXPECT_EQ(pc.stats().blocks, 1);
  EXPECT_EQ(c.n_free(), 3 * B);
  EXPECT_EQ(attach(pc, 3, concat(b, {0})), B) << "the block in use was kept";
}

TEST(PrefixCache, EvictsTheChainUsedLongestAgo) {
  KvCache c(one_head_hparams(), 3 * B);
  PrefixCache pc(c);
  const std::vector<int32_t> a = tokens(B, 1), b = tokens(B, 2), d = tokens(B, 3);
  for (const auto& [seq, t] : {std::pair{0, a}, std::pair{1, b}}) {
    compute(c, seq, t.size());
    pc.publish(seq, t);
    c.free_sequence(seq);
  }
  ASSERT_EQ(attach(pc, 2, concat(a, {0})), B);  // a is used again: b is now the oldest
  c.free_sequence(2);
  ASSERT_TRUE(pc.make_room(2 * B));
  compute(c, 3, d.size());
  EXPECT_EQ(attach(pc, 4, concat(b, {0})), 0) << "b was evicted";
  EXPECT_EQ(attach(pc, 5, concat(a, {0})), B) << "a was kept";
}

// A sequence that attached two blocks and was cut inside the second: the first is still in use,
// the second is not; evicting it frees only the cells the sequence let go of.
TEST(PrefixCache, ReferenceCountsThroughAttachTruncateAndFree) {
  KvCache c(one_head_hparams(), 4 * B);
  PrefixCache pc(c);
  const std::vector<int32_t> p = tokens(2 * B + 1);
  compute(c, 0, p.size());
  pc.publish(0, p);
  c.free_sequence(0);
  EXPECT_EQ(c.n_free(), 2 * B) << "the blocks hold 2B cells";
  ASSERT_EQ(attach(pc, 1, p), 2 * B);
  EXPECT_EQ(c.truncate(1, B + 8), B + 8);
  EXPECT_EQ(c.n_free(), 2 * B);
  const std::vector<int32_t> kept = cells(c, 1, B + 8);
  EXPECT_TRUE(pc.make_room(4 * B - B - 8)) << "evicting the second block frees its last 24 cells";
  EXPECT_EQ(pc.stats().blocks, 1);
  EXPECT_EQ(c.n_free(), 4 * B - B - 8);
  for (size_t i = 0; i < kept.size(); ++i) EXPECT_EQ(c.refs(kept[i]), i < static_cast<size_t>(B) ? 2 : 1) << i;
  compute(c, 1, 2 * B);  // seq 1 goes on in cells of its own
  EXPECT_EQ(c.n_free(), 2 * B);
  EXPECT_FALSE(pc.make_room(2 * B + 1)) << "the first block is in use";
  c.free_sequence(1);
  EXPECT_EQ(c.n_free(), 3 * B);
  pc.clear();
  EXPECT_EQ(c.n_free(), 4 * B) << "nothing leaked";
  EXPECT_EQ(pc.stats().blocks, 0);
}

TEST(PrefixCache, RefusesACacheWithAWindowPool) {
  HParams hp = one_head_hparams();
  hp.n_swa = 4;
  hp.swa_layer = {1};
  KvCache ring(hp, 100, KvType::kF16, 50);
  EXPECT_THROW(PrefixCache{ring}, std::invalid_argument);
  KvCache flat(hp, 100);  // every layer in the full pool: fine
  EXPECT_NO_THROW(PrefixCache{flat});
}

TEST(PrefixCache, DestroyingItReleasesItsBlocks) {
  KvCache c(one_head_hparams(), 2 * B);
  {
    PrefixCache pc(c);
    compute(c, 0, B);
    pc.publish(0, tokens(B));
    c.free_sequence(0);
    EXPECT_EQ(c.n_free(), B);
  }
  EXPECT_EQ(c.n_free(), 2 * B);
}

}  // namespace
}  // namespace engine
