// `ggufd run -m FILE -p PROMPT [-n N] [sampling options] [-t THREADS]`: generates a continuation
// of PROMPT, streamed to stdout as it is sampled; prompt and generation speed go to stderr.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/runtime/sampler.h"
#include "engine/text/tokenizer/decoder.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "tools/ggufd/commands.h"

namespace ggufd {

namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int n_predict = 128;
  int threads = 0;
  int ctx = 0;
  int64_t seed = -1;
  engine::SamplingParams sampling{.temperature = 0.8f, .top_k = 40, .top_p = 0.95f, .min_p = 0.05f};
};

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

int run_generate(RunOptions o) {
  const engine::Model model = engine::Model::load(o.model);
  const engine::Tokenizer tokenizer = engine::Tokenizer::from_gguf(model.file());
  const std::vector<int32_t> prompt = tokenizer.encode(o.prompt, true, true);
  if (prompt.empty()) throw std::invalid_argument("the prompt encodes to no tokens");

  const int64_t n_ctx_max = o.ctx > 0 ? o.ctx : model.hparams().n_ctx_train;
  const int64_t n_ctx = std::min<int64_t>(n_ctx_max, static_cast<int64_t>(prompt.size()) + o.n_predict);
  if (static_cast<int64_t>(prompt.size()) >= n_ctx) {
    throw std::invalid_argument("the prompt (" + std::to_string(prompt.size()) +
                                " tokens) does not fit the context (" + std::to_string(n_ctx) + ")");
  }
  o.sampling.seed = o.seed >= 0 ? static_cast<uint64_t>(o.seed) : std::random_device{}();
  engine::ThreadPool pool(engine::thread_count(o.threads));
  engine::KvCache cache(model.hparams(), n_ctx, engine::KvType::kF16,
                        engine::KvCache::window_cells(model.hparams(), n_ctx, 1, 512));
  engine::Forward fwd(model, 512);
  engine::Sampler sampler(o.sampling, model.hparams().n_vocab);
  engine::StreamDecoder decoder(tokenizer);
  for (int32_t t : prompt) sampler.accept(t);

  // Prefill: the whole prompt in one batch, logits for its last token only.
  const auto t_prompt = Clock::now();
  engine::Batch batch;
  for (size_t i = 0; i < prompt.size(); ++i) {
    batch.add(prompt[i], 0, static_cast<int32_t>(i), i + 1 == prompt.size());
  }
  fwd.eval(batch, cache, pool);
  const double prompt_s = seconds_since(t_prompt);

  // Decode: sample, print, feed back one token at a time.
  const auto t_gen = Clock::now();
  int n_generated = 0;
  auto pos = static_cast<int32_t>(prompt.size());
  while (n_generated < o.n_predict) {
    const int32_t next = sampler.sample(fwd.logits(0)).id;
    ++n_generated;
    if (tokenizer.is_eog(next)) break;
    const std::string text = decoder.push(next);
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    if (pos >= n_ctx || n_generated == o.n_predict) break;
    batch.clear();
    batch.add(next, 0, pos++, true);
    fwd.eval(batch, cache, pool);
  }
  const std::string rest = decoder.flush();
  std::fwrite(rest.data(), 1, rest.size(), stdout);
  std::printf("\n");
  std::fflush(stdout);
  const double gen_s = seconds_since(t_gen);
  std::fprintf(stderr, "prompt: %zu tokens in %.3f s (%.1f tokens/s)\n", prompt.size(), prompt_s,
               static_cast<double>(prompt.size()) / prompt_s);
  std::fprintf(stderr, "generation: %d tokens in %.3f s (%.1f tokens/s)\n", n_generated, gen_s,
               n_generated / gen_s);
  return 0;
}

}  // namespace

Command add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  engine::SamplingParams& s = o->sampling;
  app.add_option("-m,--model", o->model, "GGUF model file")->required();
  app.add_option("-p,--prompt", o->prompt, "text to continue")->required();
  app.add_option("-n,--n-predict", o->n_predict, "tokens to generate (default 128)");
  app.add_option("-t,--threads", o->threads, "compute threads (default: physical cores)");
  app.add_option("-c,--ctx-size", o->ctx, "context size (default: the model's)");
  app.add_option("--temp", s.temperature, "temperature; 0 = greedy (default 0.8)");
  app.add_option("--top-k", s.top_k, "top-k; 0 = off (default 40)");
  app.add_option("--top-p", s.top_p, "top-p; 1 = off (default 0.95)");
  app.add_option("--min-p", s.min_p, "min-p; 0 = off (default 0.05)");
  app.add_option("--repeat-penalty", s.repeat_penalty, "repetition penalty; 1 = off (default)");
  app.add_option("--presence-penalty", s.presence_penalty, "presence penalty (default 0)");
  app.add_option("--frequency-penalty", s.frequency_penalty, "frequency penalty (default 0)");
  app.add_option("--repeat-last-n", s.penalty_last_n, "penalty window; -1 = all (default 64)");
  app.add_option("--seed", o->seed, "sampling seed (default: random)");
  return [o] { return run_generate(*o); };
}

}  // namespace ggufd
