// Tiled attention throughput (engine/kernels/flash_attn.h), one thread: a tile of query rows of
// one K/V head against `keys` cached positions, as decode (4 rows: 4 GQA heads, 1 token) and
// prefill (64 rows: 16 tokens x 4 heads) see them, for each cache type and accumulation.
// Reports query-row x key pairs per second ("scores/s") and multiply-adds per second over the
// QK and PV products (2 d per pair). Cells are consecutive; the cache fits in L2 for 1024 keys and
// not for 16384.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/flash_attn.h"

namespace {

using engine::kernels::KvElem;

void BM_flash(benchmark::State& state, KvElem elem, bool f16_accum, int rows, bool reference) {
  const int64_t d = 64, keys = state.range(0);
  engine::kernels::FlashParams p{};
  p.d_k = p.d_v = d;
  p.scale = 0.125f;
  p.f16_accum = f16_accum;
  std::mt19937 rng(1);
  std::normal_distribution<float> val(0.0f, 1.0f);
  const size_t row_bytes = engine::kernels::kv_bytes(elem, d);
  std::vector<uint8_t> k(row_bytes * static_cast<size_t>(keys)), v(k.size());
  std::vector<float> x(static_cast<size_t>(d));
  for (int64_t j = 0; j < keys; ++j) {
    for (float& e : x) e = val(rng);
    engine::kernels::kv_store(elem, x.data(), k.data() + static_cast<size_t>(j) * row_bytes, d);
    for (float& e : x) e = val(rng);
    engine::kernels::kv_store(elem, x.data(), v.data() + static_cast<size_t>(j) * row_bytes, d);
  }
  std::vector<int32_t> pos(static_cast<size_t>(keys));
  for (int64_t j = 0; j < keys; ++j) pos[static_cast<size_t>(j)] = static_cast<int32_t>(j);
  std::vector<float> q(static_cast<size_t>(rows * d));
  for (float& e : q) e = val(rng);
  std::vector<const float*> q_rows;
  std::vector<int32_t> q_pos;
  for (int r = 0; r < rows; ++r) {
    q_rows.push_back(q.data() + r * d);
    q_pos.push_back(static_cast<int32_t>(keys - 1 - (rows - 1 - r) / 4));  // the last tokens, 4 heads each
  }
  const engine::kernels::FlashKv kv{k.data(), v.data(), row_bytes, row_bytes, nullptr, pos.data(), keys, elem};
  const engine::kernels::FlashQuery fq{q_rows.data(), q_pos.data(), rows};
  std::vector<float> m(static_cast<size_t>(rows)), l(m.size()), o(static_cast<size_t>(rows * d));
  engine::kernels::FlashState st{m.data(), l.data(), o.data()};
  auto scratch = std::unique_ptr<void, decltype(&std::free)>(
      std::aligned_alloc(64, (engine::kernels::flash_scratch_bytes(p) + 63) / 64 * 64), &std::free);
  const engine::kernels::FlashFn fn = reference ? engine::kernels::ref::flash_block : engine::kernels::dispatch().flash;
  for (auto _ : state) {
    engine::kernels::flash_init(st, rows, d);
    fn(p, fq, kv, 0, keys, st, scratch.get());
    benchmark::DoNotOptimize(o.data());
  }
  const double pairs = static_cast<double>(rows) * static_cast<double>(keys) * static_cast<double>(state.iterations());
  state.counters["scores/s"] = benchmark::Counter(pairs, benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(pairs * 2.0 * static_cast<double>(d) / 1e9, benchmark::Counter::kIsRate);
}

void args(benchmark::internal::Benchmark* b) { b->Arg(1024)->Arg(16384)->Unit(benchmark::kMicrosecond); }

BENCHMARK_CAPTURE(BM_flash, decode_f16_f16acc, KvElem::kF16, true, 4, false)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, decode_f16_f32acc, KvElem::kF16, false, 4, false)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, decode_q8_0, KvElem::kQ8_0, false, 4, false)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, decode_f16_f16acc_ref, KvElem::kF16, true, 4, true)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, prefill_f16_f32acc, KvElem::kF16, false, 64, false)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, prefill_f16_f16acc, KvElem::kF16, true, 64, false)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, prefill_q8_0, KvElem::kQ8_0, false, 64, false)->Apply(args);
BENCHMARK_CAPTURE(BM_flash, prefill_f32, KvElem::kF32, false, 64, false)->Apply(args);

}  // namespace

BENCHMARK_MAIN();
