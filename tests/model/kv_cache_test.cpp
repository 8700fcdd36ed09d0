// KvCache bookkeeping: sequences created, extended, truncated and freed; cells reused; cells
// shared between sequences and other holders, counted, and freed only when nothing holds them.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/kv_cache.h"

namespace engine {
namespace {

HParams tiny() {
  HParams hp;
  hp.n_layer = 2;
  hp.n_embd = 8;
  hp.n_head = 2;
  hp.n_head_kv = 1;
  hp.head_dim_k = 4;
  hp.head_dim_v = 4;
  return hp;
}

TEST(KvCache, SequencesGetDistinctCellsInPositionOrder) {
  KvCache c(tiny(), 8);
  EXPECT_EQ(c.type(), KvType::kF16);
  EXPECT_EQ(c.k_row_bytes(0), 2u * 4);
  EXPECT_EQ(c.k_head_offset(0, 1), 2u * 4);
  std::set<int32_t> cells;
  for (int32_t p = 0; p < 3; ++p) cells.insert(c.cell_for(0, p));
  for (int32_t p = 0; p < 2; ++p) cells.insert(c.cell_for(5, p));
  EXPECT_EQ(cells.size(), 5u);
  EXPECT_EQ(c.n_free(), 3);
  EXPECT_EQ(c.seq_length(0), 3);
  EXPECT_EQ(c.seq_length(5), 2);
  EXPECT_EQ(c.seq_length(9), 0);
  EXPECT_FALSE(c.has_sequence(9));
  // Asking again for a cached position returns its cell.
  EXPECT_EQ(c.cell_for(0, 1), c.entries(0)[1].cell);
  EXPECT_EQ(c.n_free(), 3);
  // Out-of-order insertion keeps slots sorted.
  c.cell_for(5, 7);
  c.cell_for(5, 4);
  ASSERT_EQ(c.entries(5).size(), 4u);
  EXPECT_EQ(c.entries(5)[2].pos, 4);
  EXPECT_EQ(c.entries(5)[3].pos, 7);
}

TEST(KvCache, TruncateAndFreeReuseCells) {
  KvCache c(tiny(), 4, KvType::kF32);
  for (int32_t p = 0; p < 4; ++p) c.cell_for(1, p);
  EXPECT_EQ(c.n_free(), 0);
  EXPECT_THROW(c.cell_for(2, 0), std::runtime_error);
  EXPECT_FALSE(c.has_sequence(2)) << "a failed slot() must not leave an empty sequence behind";
  c.truncate(1, 2);  // drop positions >= 2
  EXPECT_EQ(c.seq_length(1), 2);
  EXPECT_EQ(c.n_free(), 2);
  c.cell_for(2, 0);
  c.cell_for(2, 1);
  EXPECT_EQ(c.n_free(), 0);
  c.free_sequence(1);
  EXPECT_FALSE(c.has_sequence(1));
  EXPECT_EQ(c.n_free(), 2);
  EXPECT_TRUE(c.entries(1).empty());
  c.clear();
  EXPECT_EQ(c.n_free(), 4);
}

TEST(KvCache, RowsOfDistinctCellsAndLayersDoNotOverlap) {
  KvCache c(tiny(), 3, KvType::kF32);
  for (int64_t l = 0; l < 2; ++l) {
    for (int32_t cell = 0; cell < 3; ++cell) {
      float* k = static_cast<float*>(c.k_row(l, cell));
      float* v = static_cast<float*>(c.v_row(l, cell));
      for (int i = 0; i < 4; ++i) k[i] = v[i] = static_cast<float>(l * 100 + cell * 10 + i);
    }
  }
  for (int64_t l = 0; l < 2; ++l) {
    for (int32_t cell = 0; cell < 3; ++cell) {
      const float* k = static_cast<const float*>(c.k_row(l, cell));
      EXPECT_EQ(k[3], static_cast<float>(l * 100 + cell * 10 + 3));
    }
  }
}

// Layer 0 slides over 4 positions, layer 1 attends to everything.
HParams sliding() {
  HParams hp = tiny();
  hp.n_swa = 4;
  hp.swa_layer = {1, 0};
  return hp;
}

TEST(KvCache, WindowPoolHoldsTheSlidingLayers) {
  const HParams hp = sliding();
  EXPECT_EQ(KvCache::window_cells(tiny(), 1000, 2, 16), 0) << "no sliding layer, no ring";
  EXPECT_EQ(KvCache::window_cells(hp, 1000, 2, 16), 2 * (3 + KvCache::kWindowSlack) + 16);
  EXPECT_EQ(KvCache::window_cells(hp, 100, 2, 16), 0) << "a ring no smaller than the cache is pointless";
  KvCache c(hp, 1000, KvType::kF32, 150);
  EXPECT_EQ(c.n_window_cells(), 150);
  EXPECT_EQ(c.pool(0), KvCache::Pool::kWindow);
  EXPECT_EQ(c.pool(1), KvCache::Pool::kFull);
  EXPECT_EQ(c.bytes(), (150u + 1000u) * (4 + 4) * 4);
  EXPECT_EQ(c.bytes_without_window(), 2000u * (4 + 4) * 4);
  // The window layer's rows and the full layer's rows do not overlap.
  static_cast<float*>(c.k_row(0, 149))[3] = 1.0f;
  static_cast<float*>(c.k_row(1, 0))[0] = 2.0f;
  EXPECT_EQ(static_cast<float*>(c.k_row(0, 149))[3], 1.0f);
  EXPECT_LT(static_cast<char*>(c.v_row(0, 149)) + 16, static_cast<char*>(c.v_row(1, 0)) + 1);
  // Without window cells every layer is in the full pool.
  KvCache flat(hp, 1000);
  EXPECT_EQ(flat.n_window_cells(), 0);
  EXPECT_EQ(flat.pool(0), KvCache::Pool::kFull);
}

TEST(KvCache, SlidingFreesWhatNoLaterTokenSees) {
  KvCache c(sliding(), 1000, KvType::kF32, 150);
  for (int32_t p = 0; p < 100; ++p) {
    c.cell_for(3, p);
    c.cell_for(3, p, KvCache::Pool::kWindow);
  }
  c.slide_window(3, 100);
  // A token at 100 sees 97..100; kWindowSlack more are kept.
  const auto& w = c.entries(3, KvCache::Pool::kWindow);
  ASSERT_EQ(static_cast<int32_t>(w.size()), 3 + KvCache::kWindowSlack);
  EXPECT_EQ(w.front().pos, 97 - KvCache::kWindowSlack);
  EXPECT_EQ(w.back().pos, 99);
  EXPECT_EQ(c.seq_length(3), 100);
  EXPECT_EQ(c.entries(3).size(), 100u) << "the full pool keeps everything";
  // Truncating within the slack keeps the sequence; the window still covers the next token.
  EXPECT_EQ(c.truncate(3, 97 - KvCache::kWindowSlack + 3), 97 - KvCache::kWindowSlack + 3);
  EXPECT_EQ(c.entries(3, KvCache::Pool::kWindow).back().pos, 96 - KvCache::kWindowSlack + 3);
  // Further back the ring no longer holds what position p sees: the whole sequence goes.
  EXPECT_EQ(c.truncate(3, 20), 0);
  EXPECT_FALSE(c.has_sequence(3));
  EXPECT_TRUE(c.entries(3, KvCache::Pool::kWindow).empty());
  EXPECT_EQ(c.n_free(), 1000);
  // A full window pool says which pool is full.
  KvCache small(sliding(), 100, KvType::kF32, 2);
  small.cell_for(0, 0, KvCache::Pool::kWindow);
  small.cell_for(0, 1, KvCache::Pool::kWindow);
  try {
    small.cell_for(0, 2, KvCache::Pool::kWindow);
    FAIL() << "a third cell fit in a window pool of 2";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "KV cache window is full (2 cells)");
  }
}

std::vector<int32_t> cells_of(const KvCache& c, SeqId seq) {
  std::vector<int32_t> out;
  for (const KvCache::Entry& e : c.entries(seq)) out.push_back(e.cell);
  return out;
}

TEST(KvCache, SharedCellsAreFreedWhenTheLastHolderLetsGo) {
  KvCache c(tiny(), 8, KvType::kF32);
  for (int32_t p = 0; p < 4; ++p) c.cell_for(0, p);
  const std::vector<int32_t> a = cells_of(c, 0);
  for (int32_t cell : a) c.retain(cell);  // as a cached block holds them
  for (int32_t cell : a) EXPECT_EQ(c.refs(cell), 2);
  c.attach(1, a);
  EXPECT_EQ(c.seq_length(1), 4);
  EXPECT_EQ(cells_of(c, 1), a);
  for (int32_t cell : a) EXPECT_EQ(c.refs(cell), 3);
  EXPECT_EQ(c.n_free(), 4) << "attaching takes no cell";
  // A shared cell is never written; a new position gets a cell of its own.
  EXPECT_THROW(c.cell_for(1, 2), std::logic_error);
  const int32_t own = c.cell_for(1, 4);
  EXPECT_EQ(c.refs(own), 1);
  EXPECT_EQ(c.n_free(), 3);
  // Truncating and freeing let go of the shared cells without freeing them.
  EXPECT_EQ(c.truncate(1, 2), 2);
  EXPECT_EQ(c.refs(a[1]), 3);
  EXPECT_EQ(c.refs(a[2]), 2);
  EXPECT_EQ(c.n_free(), 4) << "only seq 1's own cell was freed";
  c.free_sequence(0);
  EXPECT_EQ(c.refs(a[0]), 2);
  EXPECT_EQ(c.refs(a[3]), 1);
  EXPECT_EQ(c.n_free(), 4);
  c.release(a[2]);
  c.release(a[3]);
  EXPECT_EQ(c.n_free(), 6) << "a[2], a[3]: nothing holds them now";
  // The whole seq 1 goes; a[0] and a[1] are still retained.
  c.free_sequence(1);
  EXPECT_EQ(c.n_free(), 6);
  c.release(a[0]);
  c.release(a[1]);
  EXPECT_EQ(c.n_free(), 8);
  for (int32_t cell = 0; cell < 8; ++cell) EXPECT_EQ(c.refs(cell), 0);
  // Free cells cannot be held, let go of or attached.
  EXPECT_THROW(c.retain(a[0]), std::logic_error);
  EXPECT_THROW(c.release(a[0]), std::logic_error);
  EXPECT_THROW(c.attach(2, a), std::logic_error);
  EXPECT_FALSE(c.has_sequence(2));
}

TEST(KvCache, AttachAppendsAfterTheSequencesOwnPositions) {
  KvCache c(tiny(), 8);
  const int32_t shared = c.cell_for(0, 0);
  c.cell_for(1, 0);
  c.attach(1, std::vector<int32_t>{shared});
  ASSERT_EQ(c.entries(1).size(), 2u);
  EXPECT_EQ(c.entries(1)[1].pos, 1);
  EXPECT_EQ(c.entries(1)[1].cell, shared);
}

// adopt(): a sequence that computed the same tokens as a cached block takes the block's cells and
// its own are freed.
TEST(KvCache, AdoptSwapsOwnCellsForSharedOnes) {
  KvCache c(tiny(), 16, KvType::kF32);
  for (int32_t p = 0; p < 4; ++p) c.cell_for(0, p);
  const std::vector<int32_t> a = cells_of(c, 0);
  for (int32_t p = 0; p < 6; ++p) c.cell_for(1, p);
  EXPECT_EQ(c.n_free(), 6);
  c.adopt(1, 0, a);
  std::vector<int32_t> expected = a;
  const std::vector<int32_t> now = cells_of(c, 1);
  expected.insert(expected.end(), now.begin() + 4, now.end());
  EXPECT_EQ(now, expected);
  EXPECT_EQ(c.n_free(), 10) << "seq 1's first four cells are free";
  for (int32_t cell : a) EXPECT_EQ(c.refs(cell), 2);
  c.adopt(1, 0, a);  // adopting what it has already changes nothing
  for (int32_t cell : a) EXPECT_EQ(c.refs(cell), 2);
  EXPECT_EQ(c.n_free(), 10);
  EXPECT_THROW(c.adopt(1, 4, a), std::logic_error) << "positions 4..7: seq 1 has 4 and 5 only";
  EXPECT_THROW(c.adopt(7, 0, a), std::logic_error) << "no such sequence";
  c.free_sequence(0);
  c.free_sequence(1);
  EXPECT_EQ(c.n_free(), 16);
}

TEST(KvCache, AWindowPoolSharesNothing) {
  KvCache c(sliding(), 100, KvType::kF32, 50);
  const int32_t cell = c.cell_for(0, 0);
  EXPECT_THROW(c.attach(1, std::vector<int32_t>{cell}), std::logic_error);
  EXPECT_THROW(c.adopt(0, 0, std::vector<int32_t>{cell}), std::logic_error);
  EXPECT_FALSE(c.has_sequence(1));
}

TEST(KvCache, CellBytesCoverEveryLayer) {
  EXPECT_EQ(KvCache(tiny(), 4, KvType::kF32).cell_bytes(), 2u * (4 + 4) * 4);
  EXPECT_EQ(KvCache(tiny(), 4, KvType::kF16).cell_bytes(), 2u * (4 + 4) * 2);
}

TEST(KvCache, RejectsEmptyCapacity) { EXPECT_THROW(KvCache(tiny(), 0), std::invalid_argument); }

// Q8_0 rows: per head, whole blocks of 32 (34 bytes: an f16 scale and 32 int8); 2 heads of 64.
TEST(KvCache, Q8_0RowsAreBlocksPerHead) {
  HParams hp = tiny();
  hp.n_head_kv = 2;
  hp.head_dim_k = hp.head_dim_v = 64;
  KvCache c(hp, 10, KvType::kQ8_0);
  EXPECT_EQ(c.elem(), kernels::KvElem::kQ8_0);
  EXPECT_EQ(c.k_row_bytes(0), 2u * 2 * 34);
  EXPECT_EQ(c.v_head_offset(0, 1), 2u * 34);
  EXPECT_EQ(c.bytes(), 2u * 10 * (2 * 2 * 34 + 2 * 2 * 34));  // layers x cells x (K + V rows)
  EXPECT_EQ(static_cast<const char*>(c.k_row(1, 0)) - static_cast<const char*>(c.k_row(0, 9)), 2 * 2 * 34);
  const KvCache f16(hp, 10, KvType::kF16);
  EXPECT_LT(c.bytes() * 100, f16.bytes() * 54) << "q8_0 is about half of f16 (34 / 64 bytes)";
}

TEST(KvCache, Q8_0RefusesHeadsThatAreNotWholeBlocks) {
  try {
    KvCache c(tiny(), 10, KvType::kQ8_0);  // head size 4
    FAIL() << "a q8_0 cache of 4-element heads was built";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q8_0 needs head sizes that are multiples of 32"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("4 (K) and 4 (V)"), std::string::npos) << e.what();
  }
}

TEST(KvCache, TypeNames) {
  EXPECT_EQ(kv_type_names(), (std::vector<std::string>{"f16", "f32", "q8_0"}));
  EXPECT_EQ(kv_type_from_name("q8_0"), KvType::kQ8_0);
  EXPECT_EQ(kv_type_name(KvType::kF32), "f32");
  try {
    kv_type_from_name("q4_0");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "KV cache type 'q4_0' is not one of f16, f32, q8_0");
  }
}

}  // namespace
}  // namespace engine
