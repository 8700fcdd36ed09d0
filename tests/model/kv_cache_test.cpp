// KvCache bookkeeping: sequences created, extended, truncated and freed; cells reused.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

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
  EXPECT_EQ(c.elem_bytes(), 2u);
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

TEST(KvCache, RejectsEmptyCapacity) { EXPECT_THROW(KvCache(tiny(), 0), std::invalid_argument); }

}  // namespace
}  // namespace engine
