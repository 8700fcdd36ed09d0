// `ggufd bench -m FILE [-p 512] [-n 128] [-d 0] [-r 5] [-t T] [--kv-type f16] [--json]`: prompt
// processing (ppP: P tokens in one batch) and generation (tgN: N single-token steps) in tokens/s,
// each on top of a context already holding D tokens (0: an empty cache), measured like
// `llama-bench -p P -n N -d D -t T` so the two compare one to one. The D context tokens are
// evaluated once (untimed, in batches of 512) and every run truncates the cache back to them, as
// llama-bench restores its saved state. Each test runs once untimed, then `reps` times; the
// median and spread are reported.
// A roofline line relates tg to the machine: measured read bandwidth / weight bytes per token.
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/kernels/cpu_features.h"
#include "engine/kernels/dispatch.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tools/ggufd/commands.h"
#include "tools/membw/membw.h"

namespace ggufd {

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct BenchOptions {
  std::string model;
  int n_prompt = 512;
  int n_gen = 128;
  int depth = 0;  // context tokens already in the cache when a test starts
  int reps = 5;
  int threads = 0;
  std::string kv_type = "f16";
  bool json = false;
  bool roofline = true;
  bool repack = true;    // weights in the kernels' packed layout (engine/model/repack.h)
  int probe_mib = 1024;  // bandwidth probe buffer: far above any last-level cache
};

struct Stats {
  std::vector<double> tok_s;  // one per repetition
  double median = 0, mean = 0, stddev = 0, min = 0, max = 0;
};

Stats summarize(std::vector<double> v) {
  Stats s;
  s.tok_s = v;
  std::sort(v.begin(), v.end());
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  s.min = v.front();
  s.max = v.back();
  for (double x : v) s.mean += x;
  s.mean /= static_cast<double>(v.size());
  for (double x : v) s.stddev += (x - s.mean) * (x - s.mean);
  s.stddev = v.size() > 1 ? std::sqrt(s.stddev / static_cast<double>(v.size() - 1)) : 0.0;
  return s;
}

// Runs prompt processing and generation on one model with one cache and one pool.
class Runner {
 public:
  // n_ctx: cells of the cache (depth + the longest test); depth: see BenchOptions.
  Runner(const engine::Model& model, int n_ctx, int depth, engine::KvType kv_type, int threads)
      : model_(model),
        pool_(engine::thread_count(threads)),
        cache_(model.hparams(), n_ctx, kv_type, engine::KvCache::window_cells(model.hparams(), n_ctx, 1, kBatch)),
        fwd_(model, kBatch),
        depth_(depth),
        rng_(42) {}

  engine::ThreadPool& pool() { return pool_; }
  const engine::KvCache& cache() const { return cache_; }

  // n tokens in one batch on top of the depth tokens (logits for the last): tokens/s.
  double prompt(int n) {
    reset_to_depth();
    engine::Batch batch;
    for (int i = 0; i < n; ++i) batch.add(random_token(), 0, depth_ + i, i + 1 == n);
    const auto t0 = Clock::now();
    fwd_.eval(batch, cache_, pool_);
    return n / seconds_since(t0);
  }

  // n single-token steps on top of the depth tokens: tokens/s.
  double generate(int n) {
    reset_to_depth();
    engine::Batch batch;
    const auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) {
      batch.clear();
      batch.add(random_token(), 0, depth_ + i, true);
      fwd_.eval(batch, cache_, pool_);
    }
    return n / seconds_since(t0);
  }

 private:
  static double seconds_since(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }
  // The cache holds exactly positions [0, depth) of sequence 0: the previous test's tokens are
  // truncated away; the depth tokens are evaluated when missing (the first time, or after a
  // sliding-window ring could not keep them: KvCache::truncate drops the sequence then).
  void reset_to_depth() {
    if (depth_ == 0 || cache_.truncate(0, depth_) < depth_) {
      cache_.clear();
      engine::Batch batch;
      for (int begin = 0; begin < depth_; begin += kBatch) {
        batch.clear();
        const int end = std::min(depth_, begin + kBatch);
        for (int i = begin; i < end; ++i) batch.add(random_token(), 0, i, i + 1 == end);
        fwd_.eval(batch, cache_, pool_);
      }
    }
  }
  int32_t random_token() {
    return static_cast<int32_t>(rng_() % static_cast<uint64_t>(model_.hparams().n_vocab));
  }

  static constexpr int kBatch = 512;  // tokens per forward chunk (llama-bench's default ubatch)
  const engine::Model& model_;
  engine::ThreadPool pool_;
  engine::KvCache cache_;
  engine::Forward fwd_;
  int depth_;
  std::mt19937_64 rng_;
};

// Weight bytes one decode step streams: every tensor except the token embedding, of which one
// row is read (unless it doubles as the output matrix: tied embeddings), and the expert tensors,
// of which a token reads n_expert_used of n_expert.
uint64_t weight_bytes_per_token(const gguf::FileSet& files, const engine::HParams& hp) {
  const bool tied = files.find_tensor("output.weight") == nullptr;
  uint64_t bytes = 0;
  for (const gguf::TensorInfo* p : files.tensors()) {
    const gguf::TensorInfo& t = *p;
    if (t.name == "token_embd.weight" && !tied) {
      bytes += t.row_bytes();
    } else if (hp.n_expert > 0 && t.name.find("_exps.") != std::string::npos) {
      bytes += t.n_bytes / static_cast<uint64_t>(hp.n_expert) * static_cast<uint64_t>(hp.n_expert_used);
    } else {
      bytes += t.n_bytes;
    }
  }
  return bytes;
}

json stats_json(const std::string& name, int n_prompt, int n_gen, int depth, const Stats& s) {
  return {{"test", name}, {"n_prompt", n_prompt}, {"n_gen", n_gen}, {"n_depth", depth}, {"tok_s", s.tok_s},
          {"median_tok_s", s.median}, {"mean_tok_s", s.mean}, {"stddev_tok_s", s.stddev},
          {"min_tok_s", s.min}, {"max_tok_s", s.max}};
}

int run_bench(const BenchOptions& o) {
  const engine::Model model = engine::Model::load(o.model, o.repack);
  const gguf::FileSet& file = model.files();  // (a split set: all parts)
  uint64_t params = 0;
  for (const gguf::TensorInfo* t : file.tensors()) params += t->n_elements;
  const engine::KvType kv_type = engine::kv_type_from_name(o.kv_type);
  Runner runner(model, o.depth + std::max(o.n_prompt, o.n_gen) + 1, o.depth, kv_type, o.threads);
  // Test names as llama-bench prints them: "pp512 @ d4096".
  const std::string at_depth = o.depth > 0 ? " @ d" + std::to_string(o.depth) : "";

  json tests = json::array();
  std::vector<std::pair<std::string, Stats>> rows;
  auto measure = [&](const std::string& name, int n_prompt, int n_gen, auto&& once) {
    once();  // warm-up: page in the weights, grow buffers
    std::vector<double> v;
    for (int r = 0; r < o.reps; ++r) v.push_back(once());
    const Stats s = summarize(std::move(v));
    tests.push_back(stats_json(name, n_prompt, n_gen, o.depth, s));
    rows.emplace_back(name, s);
  };
  if (o.n_prompt > 0) {
    measure("pp" + std::to_string(o.n_prompt) + at_depth, o.n_prompt, 0, [&] { return runner.prompt(o.n_prompt); });
  }
  // With the roofline: one pass over the model's weights right after each tg run, a bound
  // measured at the same moment as the run it bounds (the first entry is the warm-up's).
  const std::vector<std::span<const uint8_t>> ranges = model.matmul_ranges();
  std::vector<double> paired_gbs;
  if (o.n_gen > 0) {
    measure("tg" + std::to_string(o.n_gen) + at_depth, 0, o.n_gen, [&] {
      const double tok_s = runner.generate(o.n_gen);
      if (o.roofline) paired_gbs.push_back(engine::read_ranges_gbs(runner.pool(), ranges));
      return tok_s;
    });
  }

  json out = {{"model", o.model}, {"file_bytes", file.file_size()}, {"params", params},
              {"threads", runner.pool().size()}, {"kernels", engine::kernels::dispatch().name},
              {"n_depth", o.depth}, {"kv_type", o.kv_type}, {"kv_cache_bytes", runner.cache().bytes()},
              {"cpu_features", engine::cpu_features().to_string()}, {"tests", tests}};
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  // Before the bandwidth probe, whose buffer is not the model's memory.
  out["peak_rss_bytes"] = static_cast<uint64_t>(usage.ru_maxrss) * 1024;

  if (o.roofline) {
    const double gbs = engine::read_bandwidth_gbs(runner.pool(), size_t(o.probe_mib) << 20);
    const uint64_t per_token = weight_bytes_per_token(file, model.hparams());
    const double bound = gbs * 1e9 / static_cast<double>(per_token);
    json roof = {{"read_bandwidth_gbs", gbs}, {"weight_bytes_per_token", per_token}, {"tg_bound_tok_s", bound}};
    if (o.n_gen > 0) {
      roof["tg_fraction_of_bound"] = rows.back().second.median / bound;
      const std::vector<double>& tg = rows.back().second.tok_s;
      std::vector<double> pass_gbs(paired_gbs.begin() + 1, paired_gbs.end()), fraction;
      for (size_t r = 0; r < tg.size(); ++r) fraction.push_back(tg[r] * static_cast<double>(per_token) / (pass_gbs[r] * 1e9));
      roof["paired_read_gbs"] = summarize(pass_gbs).median;
      roof["tg_fraction_of_paired_bound"] = summarize(fraction).median;
    }
    out["roofline"] = roof;
  }
  if (o.json) {
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model %s: %.1f MiB, %.3f B params, %d threads, kernels %s, KV cache %s %.1f MiB\n", o.model.c_str(),
              static_cast<double>(file.file_size()) / (1 << 20), static_cast<double>(params) / 1e9,
              runner.pool().size(), engine::kernels::dispatch().name, o.kv_type.c_str(),
              static_cast<double>(runner.cache().bytes()) / (1 << 20));
  std::printf("| test           | median t/s | mean ± sd        | min .. max        |\n");
  for (const auto& [name, s] : rows) {
    std::printf("| %-14s | %10.2f | %7.2f ± %-6.2f | %7.2f .. %-7.2f |\n", name.c_str(), s.median, s.mean,
                s.stddev, s.min, s.max);
  }
  if (out.contains("roofline")) {
    const json& r = out["roofline"];
    std::printf("roofline: read bandwidth %.1f GB/s, %.1f MB of weights per token -> tg bound %.1f t/s",
                r["read_bandwidth_gbs"].get<double>(), r["weight_bytes_per_token"].get<double>() / 1e6,
                r["tg_bound_tok_s"].get<double>());
    if (r.contains("tg_fraction_of_bound")) {
      std::printf("; tg at %.0f%% of it", 100.0 * r["tg_fraction_of_bound"].get<double>());
    }
    std::printf("\n");
    if (r.contains("paired_read_gbs")) {
      std::printf("paired: a pass over the weights after each tg run read %.1f GB/s (median); tg at %.0f%% of "
                  "that bound (median of the per-run ratios)\n",
                  r["paired_read_gbs"].get<double>(), 100.0 * r["tg_fraction_of_paired_bound"].get<double>());
    }
  }
  std::printf("peak RSS %.1f MiB\n", out["peak_rss_bytes"].get<double>() / (1 << 20));
  return 0;
}

}  // namespace

Command add_bench(CLI::App& app) {
  auto o = std::make_shared<BenchOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->required()->check(CLI::ExistingFile);
  app.add_option("-p,--n-prompt", o->n_prompt, "prompt tokens per pp test; 0 = skip (default 512)")
      ->check(CLI::Range(0, 4096));
  app.add_option("-n,--n-gen", o->n_gen, "generated tokens per tg test; 0 = skip (default 128)")
      ->check(CLI::Range(0, 4096));
  app.add_option("-d,--depth", o->depth,
                 "context tokens in the cache before each test, like llama-bench -d (default 0)")
      ->check(CLI::Range(0, 262144));
  app.add_option("-r,--repetitions", o->reps, "timed repetitions (default 5)")->check(CLI::Range(1, 1000));
  app.add_option("-t,--threads", o->threads, "compute threads (default: physical cores)")->check(CLI::Range(0, 1024));
  app.add_option("--kv-type", o->kv_type, "KV cache element type (default f16)")
      ->check(CLI::IsMember(engine::kv_type_names()));
  app.add_flag("--json", o->json, "print one JSON object instead of the table");
  app.add_flag("!--no-roofline", o->roofline, "skip the memory-bandwidth probe");
  app.add_flag("!--no-repack", o->repack, "keep the weights in the file layout (to measure what repacking gives)");
  app.add_option("--probe-mib", o->probe_mib, "bandwidth probe buffer in MiB (default 1024)")
      ->check(CLI::Range(1, 65536));
  app.footer("Environment: GGUFD_ISA=scalar|avx2|avxvnni|avx512vnni runs that kernel table instead of the best\n"
             "this CPU has (e.g. the AVX2 path on an AVX-512 machine); the output names it (\"kernels\").");
  return [o] { return run_bench(*o); };
}

}  // namespace ggufd
