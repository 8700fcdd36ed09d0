// `ggufd logits -m FILE --tokens ID,ID,... [--top K] [-t THREADS] [--kv-type f16]`: evaluates the
// tokens as one sequence and prints JSON: for every position, the top-K (id, logit) pairs, best first.
// `--tokens-from GOLDEN.json --case I` takes a reference case's tokens + greedy continuation (the
// golden tests' teacher-forced sequence). `--dump-layers OUT.json --positions 0,5,-1 [--ops a,b]`
// also writes those positions' activations after every step of every layer (layer_dump.h), for
// scripts/drift/compare.
#include <algorithm>
#include <charconv>
#include <memory>
#include <set>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tools/ggufd/commands.h"
#include "tools/ggufd/files.h"
#include "tools/ggufd/layer_dump.h"

namespace ggufd {

namespace {

struct LogitsOptions {
  std::string model;
  std::string tokens;
  std::string tokens_from;  // a golden JSON file (../shared/golden/README.md's format)
  int64_t case_index = 0;
  int top = 20;
  int threads = 0;
  std::string kv_type = "f16";
  std::string dump_layers;  // output file of the layer dump; empty: no dump
  std::string positions = "-1";
  std::string ops;          // comma-separated step names; empty: all
};

// The teacher-forced sequence of case `index` of a golden file: its tokens, then the greedy tokens
// that have logits (gen_top); n_prompt receives the prompt's length.
std::vector<int32_t> golden_tokens(const std::string& path, int64_t index, int64_t& n_prompt) {
  try {
    const nlohmann::json g = nlohmann::json::parse(read_text_file(path));
    const nlohmann::json& cases = g.at("cases");
    if (index < 0 || index >= static_cast<int64_t>(cases.size())) {
      throw std::invalid_argument("--case " + std::to_string(index) + ": the file has " +
                                  std::to_string(cases.size()) + " cases");
    }
    const nlohmann::json& c = cases[static_cast<size_t>(index)];
    std::vector<int32_t> tokens = c.at("tokens").get<std::vector<int32_t>>();
    n_prompt = static_cast<int64_t>(tokens.size());
    const size_t n_gen = c.contains("gen_top") ? c["gen_top"].size() : 0;
    const nlohmann::json& greedy = c.contains("greedy") ? c["greedy"] : nlohmann::json::array();
    for (size_t i = 0; i < n_gen && i < greedy.size(); ++i) tokens.push_back(greedy[i].get<int32_t>());
    return tokens;
  } catch (const nlohmann::json::exception& e) {
    throw std::invalid_argument(path + ": not a golden file: " + e.what());
  }
}

std::set<std::string> parse_names(const std::string& s) {
  std::set<std::string> names;
  for (size_t b = 0; b < s.size();) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) names.insert(s.substr(b, e - b));
    b = e + 1;
  }
  return names;
}

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
  if (o.tokens.empty() == o.tokens_from.empty()) throw std::invalid_argument("give --tokens or --tokens-from");
  int64_t n_prompt = 0;
  const std::vector<int32_t> tokens =
      o.tokens.empty() ? golden_tokens(o.tokens_from, o.case_index, n_prompt) : parse_token_list(o.tokens);
  if (n_prompt == 0) n_prompt = static_cast<int64_t>(tokens.size());
  if (tokens.empty()) throw std::invalid_argument("no tokens to evaluate");
  std::unique_ptr<LayerDump> dump;
  if (!o.dump_layers.empty()) {
    dump = std::make_unique<LayerDump>(parse_positions(o.positions, static_cast<int64_t>(tokens.size())),
                                       parse_names(o.ops));
  }
  const engine::Model model = engine::Model::load(o.model);
  const int64_t n_vocab = model.hparams().n_vocab;
  const auto n = static_cast<int64_t>(tokens.size());
  engine::ThreadPool pool(engine::thread_count(o.threads));
  engine::KvCache cache(model.hparams(), n, engine::kv_type_from_name(o.kv_type));
  engine::Forward fwd(model, std::min<int64_t>(n, 512));
  fwd.set_observer(dump.get());
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
    if (dump && dump->wants("result_output")) dump->add("result_output", -1, i, row, n_vocab);
  }
  if (dump) {
    dump->write(o.dump_layers, {{"model", o.model}, {"tokens", tokens}, {"n_prompt", n_prompt},
                                {"n_layer", model.hparams().n_layer}, {"q_scale", model.hparams().q_scale}});
  }
  const nlohmann::json out = {{"model", o.model}, {"n_vocab", n_vocab}, {"positions", positions}};
  std::printf("%s\n", out.dump().c_str());
  return 0;
}

}  // namespace

Command add_logits(CLI::App& app) {
  auto o = std::make_shared<LogitsOptions>();
  app.add_option("-m,--model", o->model, "GGUF model file")->required();
  app.add_option("--tokens", o->tokens, "comma-separated token ids, evaluated as one sequence");
  app.add_option("--tokens-from", o->tokens_from,
                 "a golden JSON file: evaluate a case's tokens + greedy continuation (teacher-forced)");
  app.add_option("--case", o->case_index, "the case of --tokens-from (default 0)");
  app.add_option("--dump-layers", o->dump_layers,
                 "write the activations of --positions after every step of every layer to this JSON file");
  app.add_option("--positions", o->positions, "positions to dump: 0,5,-1 (negative: from the end) or all (default -1)");
  app.add_option("--ops", o->ops,
                 "steps to dump, comma-separated (default all): inp_embd attn_norm q k v kqv_out attn_out "
                 "ffn_inp ffn_norm ffn_act ffn_out l_out result_output");
  app.add_option("--top", o->top, "pairs shown per position (default 20)");
  app.add_option("-t,--threads", o->threads, "compute threads (default: physical cores)");
  app.add_option("--kv-type", o->kv_type, "KV cache element type (default f16)")
      ->check(CLI::IsMember(engine::kv_type_names()));
  return [o] { return run_logits(*o); };
}

}  // namespace ggufd
