// engine::matmul throughput: out (n, rows) = X (n, cols) @ W^T for the common weight types, in
// the file layout and ("Q4_0x16", "Q4_0x8") in the packed layout of the dispatch table this CPU
// runs (groups of its pack_rows rows, as a loaded model has them); and each SIMD table's packed
// tile alone ("tile/avx2/Q4_0x8/..."), one thread, so every table this CPU can run is measured,
// not only the one dispatch() picks. "pp/Q4_0x16/8192x2048/n:512/..." is engine::matmul on the
// packed layout with a 512-row activation block: the FFN shapes of a Llama-3.2-1B-sized model in
// `ggufd bench`'s pp512.
//
// Reports weight bytes streamed per second (GB/s, the decode bound) and multiply-adds per second
// (GMAC/s, the prefill bound), and both as a percentage of the machine's peak measured at start
// (bw_%peak, mac_%peak): the read bandwidth of tools/membw's probe on as many threads, and the
// int8 dot-product peak of the table's instruction (bench/dot_peak.h: vpdpbusd zmm for
// avx512vnni, ymm for avxvnni, vpmaddubsw for avx2) on as many threads. The peaks are printed to
// stderr and are in the JSON output's context (--benchmark_format=json): peak_read_gbs_Nt,
// peak_int8_gmacs_<instruction>_Nt, dispatch, dispatch_insn. The file-layout tiles of every SIMD
// table are AVX2 code; their mac_%peak is still against the table's instruction.
//
// Several copies of W are rotated so the weights come from DRAM, not from the 32 MiB L3, as they
// do in a real forward pass. With GGUFD_BENCH_CACHED=1 in the environment there is one copy, so
// the small shapes run from cache: the kernel's compute ceiling, which tells an instruction-bound
// kernel from a memory-bound one (bw_%peak then exceeds 100: the peak is DRAM's).
#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/dot_peak.h"
#include "engine/kernels/fp16.h"
#include "engine/kernels/matmul.h"
#include "engine/kernels/packing.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/traits.h"
#include "engine/model/repack.h"
#include "gguf/blocks.h"
#include "tools/membw/membw.h"

namespace {

using gguf::TensorType;
using engine::kernels::Dispatch;

constexpr size_t kMinBytesInFlight = size_t{96} << 20;  // > 2x a 32 MiB L3 (not a 260 MiB one: Xeon VMs)
constexpr int kMaxThreads = 2;                          // the thread counts benchmarked: 1..kMaxThreads

// The machine's peaks, measured once before the benchmarks run (index: threads).
struct Peaks {
  double read_gbs[kMaxThreads + 1] = {};
  double dot_gmacs[4][kMaxThreads + 1] = {};  // [DotInsn][threads]
} peaks;

double dot_peak(bench::DotInsn insn, int threads) { return peaks.dot_gmacs[static_cast<int>(insn)][threads]; }

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

std::vector<float> random_activations(int64_t n, int64_t cols) {
  std::vector<float> x(static_cast<size_t>(n * cols));
  std::mt19937 rng(1);
  std::normal_distribution<float> val(0.0f, 1.0f);
  for (float& v : x) v = val(rng);
  return x;
}

// GB/s, GMAC/s and both against the peaks of `insn` on `threads` threads. `seconds`: the timed
// loop's wall time (the benchmark's own real time, within the loop's overhead).
void set_counters(benchmark::State& state, double w_bytes, double macs, double seconds, bench::DotInsn insn,
                  int threads) {
  const double iters = static_cast<double>(state.iterations());
  state.counters["GB/s"] = benchmark::Counter(w_bytes * iters / 1e9, benchmark::Counter::kIsRate);
  state.counters["GMAC/s"] = benchmark::Counter(macs * iters / 1e9, benchmark::Counter::kIsRate);
  if (seconds <= 0) return;
  if (peaks.read_gbs[threads] > 0) {
    state.counters["bw_%peak"] = 100.0 * w_bytes * iters / 1e9 / seconds / peaks.read_gbs[threads];
  }
  if (dot_peak(insn, threads) > 0) {
    state.counters["mac_%peak"] = 100.0 * macs * iters / 1e9 / seconds / dot_peak(insn, threads);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// engine::matmul through the dispatch table; `packed`: the weights in its packed layout.
void BM_matmul(benchmark::State& state, TensorType type, int64_t rows, int64_t cols, int64_t n, int threads,
               bool packed) {
  const engine::kernels::KernelTraits* t = engine::kernels::kernel_traits(type);
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size() * t->block_bytes());
  const size_t w_bytes = row_bytes * static_cast<size_t>(rows);
  const size_t copies = cached_weights() ? 1 : std::max<size_t>(1, kMinBytesInFlight / w_bytes);
  std::vector<std::vector<uint8_t>> weights;
  for (size_t c = 0; c < copies; ++c) weights.push_back(random_weights(type, rows, cols, static_cast<unsigned>(c)));
  const std::vector<float> x = random_activations(n, cols);
  std::vector<float> out(static_cast<size_t>(n * rows));
  engine::ThreadPool pool(threads);

  std::vector<engine::Matrix> mats;
  for (const auto& w : weights) mats.push_back({type, rows, cols, row_bytes, w.data()});
  // all copies in one region, as a model's packed weights are (huge pages, when the kernel gives them)
  std::vector<engine::Matrix*> to_pack;
  for (engine::Matrix& m : mats) to_pack.push_back(&m);
  engine::PackedWeights packs;
  if (packed) packs = engine::PackedWeights::pack(to_pack, nullptr);
  size_t i = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    engine::matmul(mats[i++ % copies], x.data(), n, out.data(), pool);
    benchmark::DoNotOptimize(out.data());
  }
  set_counters(state, static_cast<double>(w_bytes), static_cast<double>(rows * cols * n), seconds_since(t0),
               bench::dot_insn_of(engine::kernels::dispatch().isa), threads);
}

// One table's packed tile over a whole matrix (rows / pack_rows groups), one thread, activations
// quantized beforehand (matmul converts them once per call; not timed here).
void BM_tile(benchmark::State& state, const Dispatch* d, TensorType type, int64_t rows, int64_t cols, int64_t n) {
  const engine::kernels::KernelTraits* t = engine::kernels::kernel_traits(type);
  const engine::kernels::TileFn tile = d->packed_tile_for(type);
  const int R = d->pack_rows;
  const size_t row_bytes = static_cast<size_t>(cols / t->block_size() * t->block_bytes());
  const size_t w_bytes = row_bytes * static_cast<size_t>(rows);
  const size_t copies = cached_weights() ? 1 : std::max<size_t>(1, kMinBytesInFlight / w_bytes);
  const size_t stride = (w_bytes + 4095) / 4096 * 4096;
  auto free_aligned = [](uint8_t* p) { ::operator delete[](p, std::align_val_t{4096}); };
  std::unique_ptr<uint8_t[], decltype(free_aligned)> packed(
      static_cast<uint8_t*>(::operator new[](stride * copies, std::align_val_t{4096})), free_aligned);
  for (size_t c = 0; c < copies; ++c) {
    const std::vector<uint8_t> w = random_weights(type, rows, cols, static_cast<unsigned>(c));
    for (int64_t g = 0; g < rows / R; ++g) {
      const size_t at = static_cast<size_t>(g * R) * row_bytes;
      engine::kernels::pack_group(type, R, w.data() + at, row_bytes, cols, packed.get() + c * stride + at);
    }
  }
  const std::vector<float> x = random_activations(n, cols);
  const int64_t xr = engine::kernels::act_row_bytes(t->act, cols);
  std::vector<uint8_t> xq(static_cast<size_t>(xr * n));
  for (int64_t j = 0; j < n; ++j) engine::kernels::quantize_act_ref(t->act, x.data() + j * cols, xq.data() + j * xr, cols);
  std::vector<float> out(static_cast<size_t>(n * rows));
  size_t i = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) {
    tile({packed.get() + (i++ % copies) * stride, static_cast<size_t>(R) * row_bytes, rows, cols, xq.data(),
          static_cast<size_t>(xr), n, out.data(), rows, t});
    benchmark::DoNotOptimize(out.data());
  }
  set_counters(state, static_cast<double>(w_bytes), static_cast<double>(rows * cols * n), seconds_since(t0),
               bench::dot_insn_of(d->isa), 1);
}

// pack_group over a whole matrix into groups of the dispatch table's pack_rows, one thread: the
// copy a model's load makes of its packable weights (PackedWeights::pack). The copies rotate
// through more memory than the caches hold, as a load's do; they are written once before timing
// (the page faults of a real load are not in it). GB/s of weights packed.
void BM_pack(benchmark::State& state, TensorType type, int64_t rows, int64_t cols) {
  const int R = engine::kernels::dispatch().pack_rows;
  const std::vector<uint8_t> w = random_weights(type, rows, cols, 1);
  const size_t row_bytes = w.size() / static_cast<size_t>(rows);
  const size_t copies = std::max<size_t>(1, kMinBytesInFlight / w.size());
  std::vector<uint8_t> packed(w.size() * copies, 1);
  size_t i = 0;
  for (auto _ : state) {
    uint8_t* dst = packed.data() + (i++ % copies) * w.size();
    for (int64_t g = 0; g < rows / R; ++g) {
      const size_t at = static_cast<size_t>(g * R) * row_bytes;
      engine::kernels::pack_group(type, R, w.data() + at, row_bytes, cols, dst + at);
    }
    benchmark::DoNotOptimize(dst);
  }
  state.counters["GB/s"] =
      benchmark::Counter(static_cast<double>(w.size()) * static_cast<double>(state.iterations()) / 1e9,
                         benchmark::Counter::kIsRate);
}

constexpr TensorType kTypes[] = {TensorType::Q4_0, TensorType::Q8_0, TensorType::Q4_K, TensorType::Q6_K,
                                 TensorType::IQ4_XS};

// "Q4_0" (the file layout), or "Q4_0x16" (packed in groups of 16 rows).
std::string layout_name(TensorType type, int pack_rows) {
  std::string name(gguf::type_info(type).name);
  if (pack_rows > 0) name += 'x' + std::to_string(pack_rows);
  return name;
}

int register_all() {
  const Dispatch& d = engine::kernels::dispatch();
  const int64_t shapes[][2] = {{2048, 2048}, {8192, 2048}, {768, 2048}, {2048, 768}};  // (rows, cols); the last two a MoE expert's
  for (TensorType type : kTypes) {
    for (const auto& s : shapes) {
      for (int64_t n : {1, 4, 8, 16, 64}) {
        for (int threads = 1; threads <= kMaxThreads; ++threads) {
          for (bool packed : {false, true}) {
            // packed only where the table has a tile for that layout (else the weights stay as they are)
            if (packed && (!engine::kernels::packable(type) || !d.packed_tile_for(type))) continue;
            const std::string name = layout_name(type, packed ? d.pack_rows : 0) + "/" + std::to_string(s[0]) +
                                     "x" + std::to_string(s[1]) + "/n:" + std::to_string(n) +
                                     "/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), BM_matmul, type, s[0], s[1], n, threads, packed)
                ->Unit(benchmark::kMicrosecond)
                ->UseRealTime();
          }
        }
      }
    }
  }
  // prefill: a 512-token prompt through a Llama-3.2-1B-shaped projection (the pp512 of `ggufd bench`)
  for (TensorType type : kTypes) {
    if (!engine::kernels::packable(type) || !d.packed_tile_for(type)) continue;
    for (const auto& s : {std::pair<int64_t, int64_t>{8192, 2048}, {2048, 8192}}) {  // FFN gate/up, down
      for (int threads = 1; threads <= kMaxThreads; ++threads) {
        const std::string name = "pp/" + layout_name(type, d.pack_rows) + "/" + std::to_string(s.first) + "x" +
                                 std::to_string(s.second) + "/n:512/threads:" + std::to_string(threads);
        benchmark::RegisterBenchmark(name.c_str(), BM_matmul, type, s.first, s.second, int64_t{512}, threads, true)
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
      }
    }
  }
  // the load's copy into packed groups (8192 x 2048: an FFN matrix of a Llama-3.2-1B-sized model)
  for (TensorType type : kTypes) {
    if (!engine::kernels::packable(type) || d.pack_rows == 0) continue;
    const std::string name = "pack/" + layout_name(type, d.pack_rows) + "/8192x2048";
    benchmark::RegisterBenchmark(name.c_str(), BM_pack, type, int64_t{8192}, int64_t{2048})
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime();
  }
  for (const Dispatch* table :
       {engine::kernels::avx2_dispatch(), engine::kernels::avxvnni_dispatch(), engine::kernels::avx512_dispatch()}) {
    if (table == nullptr) continue;
    for (TensorType type : kTypes) {
      if (!table->packed_tile_for(type)) continue;
      for (int64_t n : {1, 16, 64}) {
        // 8192 rows: streamed from DRAM (from L3 with GGUFD_BENCH_CACHED=1); 1024 rows (<= 1.7 MB)
        // fit in L2 with GGUFD_BENCH_CACHED=1: the tile's instruction ceiling at decode (n = 1)
        for (int64_t rows : {int64_t{8192}, int64_t{1024}}) {
          if (rows == 1024 && n != 1) continue;
          const std::string name = std::string("tile/") + table->name + "/" + layout_name(type, table->pack_rows) +
                                   "/" + std::to_string(rows) + "x2048/n:" + std::to_string(n);
          benchmark::RegisterBenchmark(name.c_str(), BM_tile, table, type, rows, int64_t{2048}, n)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
    }
  }
  return 0;
}

const int registered = register_all();

// Measures the peaks, prints them to stderr and puts them in the output's context.
void measure_peaks() {
  auto context = [](const std::string& key, double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    benchmark::AddCustomContext("peak_" + key, buf);
    std::fprintf(stderr, "  %-36s %8.1f\n", key.c_str(), v);
  };
  const Dispatch& d = engine::kernels::dispatch();
  benchmark::AddCustomContext("dispatch", d.name);
  benchmark::AddCustomContext("dispatch_insn", bench::dot_insn_name(bench::dot_insn_of(d.isa)));
  std::fprintf(stderr, "kernels %s (packed tiles on %s), peaks on 1..%d threads:\n", d.name,
               bench::dot_insn_name(bench::dot_insn_of(d.isa)), kMaxThreads);
  for (int threads = 1; threads <= kMaxThreads; ++threads) {
    engine::ThreadPool pool(threads);
    peaks.read_gbs[threads] = engine::read_bandwidth_gbs(pool);
    context("read_gbs_" + std::to_string(threads) + "t", peaks.read_gbs[threads]);
  }
  for (bench::DotInsn insn :
       {bench::DotInsn::kMaddubsYmm, bench::DotInsn::kVpdpbusdYmm, bench::DotInsn::kVpdpbusdZmm}) {
    if (!bench::cpu_has(insn)) continue;
    std::string name = bench::dot_insn_name(insn);
    for (char& c : name) c = c == ' ' ? '_' : c;
    for (int threads = 1; threads <= kMaxThreads; ++threads) {
      peaks.dot_gmacs[static_cast<int>(insn)][threads] = bench::int8_dot_peak_gmacs(insn, threads);
      context("int8_gmacs_" + name + "_" + std::to_string(threads) + "t", peaks.dot_gmacs[static_cast<int>(insn)][threads]);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  bool listing = false;  // (Initialize takes the benchmark flags out of argv)
  for (int i = 1; i < argc; ++i) listing = listing || std::strncmp(argv[i], "--benchmark_list_tests", 22) == 0;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  if (!listing) measure_peaks();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
