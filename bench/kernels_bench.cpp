// engine::matmul throughput: out (n, rows) = X (n, cols) @ W^T for the common weight types, in
// the file layout and ("Q4_0x8") in the packed 8-row layout a loaded model uses.
//
// Reports weight bytes streamed per second (GB/s, the decode bound) and multiply-adds per second
// (GMAC/s, the prefill bound). Several copies of W are rotated so the weights come from DRAM,
// not from the 32 MiB L3, as they do in a real forward pass. With GGUFD_BENCH_CACHED=1 in the
// environment there is one copy, so the small shapes run from cache: the kernel's compute
// ceiling, which tells an instruction-bound kernel from a memory-bound one.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/kernels/fp16.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/packing.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/traits.h"
#include "engine/model/repack.h"
#include "gguf/blocks.h"

namespace {

using gguf::TensorType;

constexpr size_t kMinBytesInFlight = size_t{96} << 20;  // > 2x L3

bool cached_weights() {
  const char* v = std::getenv("GGUFD_BENCH_CACHED");
  return v && std::strcmp(v, "1") == 0;
}

// Random blocks of `type` with sane fp16 scales (every type here has its scale at offset 0 or
// at the end of the block, see fp16_offsets).
std::vector<uint8_t> random_weights(TensorType type, int64_t rows, int64_t cols, unsigned seed) {
  const engine::kernels::KernelTraits* t = engine::kernels::kernel_traits(type);
  const int64_t n_blocks = rows * cols / t->block_size();
  std::vector<uint8_t> w(static_cast<size_t>(n_blocks * t->block_bytes()));
  std::mt19937 rng(seed);
  for (auto& b : w) b = static_cast<uint8_t>(rng());
  std::vector<size_t> offsets{0};
  if (type == TensorType::Q4_K) offsets = {offsetof(gguf::BlockQ4_K, d), offsetof(gguf::BlockQ4_K, dmin)};
  if (type == TensorType::Q6_K) offsets = {offsetof(gguf::BlockQ6_K, d)};
  const uint16_t scale = engine::kernels::fp32_to_fp16(0.01f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    for (size_t off : offsets) std::memcpy(&w[static_cast<size_t>(b * t->block_bytes() + off)], &scale, 2);
  }
  return w;
}

// `packed`: the weights in the kernels' packed 8-row layout, as a loaded model has them.
void BM_matmul(benchmark::State& state, TensorType type, int64_t rows, int64_t cols, int64_t n,
               int threads, bool packed) {
  const engine::kernels::KernelTraits* t = engine::kernels::kernel_traits(type);
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size() * t->block_bytes());
  const size_t w_bytes = row_bytes * static_cast<size_t>(rows);
  const size_t copies = cached_weights() ? 1 : std::max<size_t>(1, kMinBytesInFlight / w_bytes);
  std::vector<std::vector<uint8_t>> weights;
  for (size_t c = 0; c < copies; ++c) weights.push_back(random_weights(type, rows, cols, static_cast<unsigned>(c)));
  std::vector<float> x(static_cast<size_t>(n * cols));
  std::mt19937 rng(1);
  std::normal_distribution<float> val(0.0f, 1.0f);
  for (float& v : x) v = val(rng);
  std::vector<float> out(static_cast<size_t>(n * rows));
  engine::ThreadPool pool(threads);

  std::vector<engine::Matrix> mats;
  for (const auto& w : weights) mats.push_back({type, rows, cols, row_bytes, w.data()});
  // all copies in one region, as a model's packed weights are (huge pages, when the kernel gives them)
  std::vector<engine::Matrix*> to_pack;
  for (engine::Matrix& m : mats) to_pack.push_back(&m);
  engine::PackedWeights packs;
  if (packed) packs = engine::PackedWeights::pack(to_pack, false);
  size_t i = 0;
  for (auto _ : state) {
    engine::matmul(mats[i++ % copies], x.data(), n, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(w_bytes) * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(static_cast<double>(rows * cols * n) * iters / 1e9,
                                                benchmark::Counter::kIsRate);
}

int register_all() {
  const TensorType types[] = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K};
  const int64_t shapes[][2] = {{2048, 2048}, {8192, 2048}, {768, 2048}, {2048, 768}};  // (rows, cols); the last two a MoE expert's
  for (TensorType type : types) {
    for (const auto& s : shapes) {
      for (int64_t n : {1, 4, 8, 16, 64}) {
        for (int threads : {1, 2}) {
          for (bool packed : {false, true}) {
            if (packed && !engine::kernels::packable(type)) continue;
            const std::string name = std::string(gguf::type_info(type).name) + (packed ? "x8" : "") + "/" +
                                     std::to_string(s[0]) + "x" + std::to_string(s[1]) + "/n:" +
                                     std::to_string(n) + "/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), BM_matmul, type, s[0], s[1], n, threads, packed)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
          }
        }
      }
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
