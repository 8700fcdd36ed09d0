// `ggufd logits -m FILE --tokens ID,ID,... [--top K] [-t THREADS] [--kv-type f16]`: evaluates the
// tokens as one sequence and prints JSON: for every position, the top-K (id, logit) pairs, best first.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tools/ggufd/commands.h"

namespace ggufd {

namespace {

struct LogitsOptions {
  std::string model;
  std::string tokens;
  int top = 20;
  int threads = 0;
  std::string kv_type = "f16";
};

std::vector<int32_t> parse_token_list(const std::string& s) {
  std::vector<int32_t> ids;
  const char* p = s.data();
  const char* end = p + s.size();
  while (p < end) {
    if (*p == ',' || *p == ' ') {
      ++p;
      continue;
    }
    int32_t id = 0;
    const auto [next, ec] = std::from_chars(p, end, id);
    if (ec != std::errc()) throw std::invalid_argument("--tokens: not a token id at '" + std::string(p, end) + "'");
    ids.push_back(id);
    p = next;
  }
  if (ids.empty()) throw std::invalid_argument("--tokens: no token ids");
  return ids;
}

int run_logits(const LogitsOptions& o) {
  const std::vector<int32_t> tokens = parse_token_list(o.tokens);
  const engine::Model model = engine::Model::load(o.model);
  const int64_t n_vocab = model.hparams().n_vocab;
  const auto n = static_cast<int64_t>(tokens.size());
  engine::ThreadPool pool(engine::thread_count(o.threads));
  engine::KvCache cache(model.hparams(), n, engine::kv_type_from_name(o.kv_type));
  engine::Forward fwd(model, std::min<int64_t>(n, 512));
  engine::Batch batch;
  for (int64_t i = 0; i < n; ++i) batch.add(tokens[static_cast<size_t>(i)], 0, static_cast<int32_t>(i), true);
  fwd.eval(batch, cache, pool);

  const int64_t k = std::clamp<int64_t>(o.top, 1, n_vocab);
  nlohmann::json positions = nlohmann::json::array();
  std::vector<int32_t> ids(static_cast<size_t>(n_vocab));
  for (int64_t i = 0; i < n; ++i) {
    const float* row = fwd.logits(i);
    for (int32_t v = 0; v < n_vocab; ++v) ids[static_cast<size_t>(v)] = v;
    std::partial_sort(ids.begin(), ids.begin() + k, ids.end(), [&](int32_t a, int32_t b) {
      return row[a] > row[b] || (row[a] == row[b] && a < b);
    });
    nlohmann::json top = nlohmann::json::array();
    for (int64_t j = 0; j < k; ++j) top.push_back({ids[static_cast<size_t>(j)], row[ids[static_cast<size_t>(j)]]});
    positions.push_back({{"position", i}, {"token", tokens[static_cast<size_t>(i)]}, {"top", top}});
  }
  const nlohmann::json out = {{"model", o.model}, {"n_vocab", n_vocab}, {"positions", positions}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

Command add_logits(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->required();
  app.add_option("--tokens", o->tokens, "comma-separated token ids, evaluated as one sequence")->required();
  app.add_option("--top", o->top, "pairs shown per position (default 20)");
  app.add_option("-t,--threads", o->threads, "compute threads (default: physical cores)");
  app.add_option("--kv-type", o->kv_type, "KV cache element type (default f16)")
      ->check(CLI::IsMember(engine::kv_type_names()));
  return [o] { return run_logits(*o); };
}

}  // namespace ggufd
