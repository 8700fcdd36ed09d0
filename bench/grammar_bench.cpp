// Constrained-decoding cost on real vocabularies (JSON output): for each schema in bench/schemas
// (and llama.cpp's json.gbnf)
// and each vocabulary (Qwen3 = the Qwen2.5 shape, 151,936 tokens; Llama 3 = Llama-3.2's,
// 128,256), the time to compile the grammar for the vocabulary, and the time of one step's token
// mask (TokenConstraint::allowed) over simulated generations: p50 / p99 / max per step.
//
// The generations pick uniformly among the allowed tokens, half of the time among the short
// (<= 2 bytes) ones, so strings end and objects fill. Usage: grammar_bench [--walks N] [--out F]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/text/grammar/gbnf.h"
#include "engine/text/grammar/json_schema.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"

namespace {

using Clock = std::chrono::steady_clock;
using engine::grammar::CompiledGrammar;
using engine::grammar::TokenConstraint;
using engine::grammar::TokenVocab;

double ms_since(Clock::time_point t0) { return std::chrono::duration<double, std::milli>(Clock::now() - t0).count(); }

std::string env_or(const char* name, const char* fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? v : fallback;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  if (!in) throw std::runtime_error("cannot read " + path);
  return ss.str();
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// One simulated generation; appends each step's mask time (ms). Returns the tokens generated.
int walk(const std::shared_ptr<const CompiledGrammar>& cg, std::mt19937& rng, int max_steps, std::vector<double>& step_ms) {
  TokenConstraint c(cg);
  const auto& eog = cg->vocab().eog_ids();
  std::vector<int32_t> all, short_ones;
  for (int step = 0; step < max_steps; ++step) {
    const auto t0 = Clock::now();
    const auto& bits = c.allowed();
    step_ms.push_back(ms_since(t0));
    if (std::getenv("GRAMMAR_BENCH_DEBUG") && step_ms.back() > 10) {
      const auto& st = c.matcher().stacks();
      std::fprintf(stderr, "slow step %.1f ms: %zu stacks:", step_ms.back(), st.size());
      for (size_t k = 0; k < st.size(); ++k) {
        const auto* pm = st.positions(k).empty() ? nullptr : cg->at(st.positions(k).back());
        std::fprintf(stderr, " [depth %zu partial %x uncertain %zu]", st.positions(k).size(), st.partial(k),
                     pm ? pm->uncertain.size() : 0);
      }
      std::fprintf(stderr, "\n");
    }
    all.clear();
    short_ones.clear();
    bool can_end = false;
    for (size_t w = 0; w < bits.size(); ++w) {
      for (uint64_t x = bits[w]; x; x &= x - 1) {
        const auto id = static_cast<int32_t>(w * 64 + static_cast<size_t>(__builtin_ctzll(x)));
        if (std::find(eog.begin(), eog.end(), id) != eog.end()) {
          can_end = true;
        } else {
          all.push_back(id);
          if (cg->vocab().bytes(id).size() <= 2) short_ones.push_back(id);
        }
      }
    }
    if (all.empty() || (can_end && rng() % 2 == 0)) return step;
    const auto& from = !short_ones.empty() && rng() % 2 ? short_ones : all;
    c.accept(from[rng() % from.size()]);
    if (c.complete()) return step + 1;
  }
  return max_steps;
}

}  // namespace

int main(int argc, char** argv) {
  int walks = 20;
  std::string out_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--walks") == 0) walks = std::atoi(argv[i + 1]);
    if (std::strcmp(argv[i], "--out") == 0) out_path = argv[i + 1];
  }
  const std::string shared = env_or("GGUFD_SHARED_DIR", GGUFD_SHARED_DIR);
  const std::string schemas_dir = env_or("GGUFD_BENCH_SCHEMAS", GGUFD_BENCH_SCHEMAS);
  const std::pair<const char*, const char*> vocabs[] = {{"qwen2.5 shape (qwen3 vocab)", "ggml-vocab-qwen3.gguf"},
                                                        {"llama-3.2 shape (llama3 vocab)", "ggml-vocab-llama3.gguf"}};
  nlohmann::json report = nlohmann::json::array();
  for (const auto& [label, file] : vocabs) {
    const gguf::File f = gguf::File::open(shared + "/tokenizer/" + file);
    const auto tok = engine::Tokenizer::from_gguf(f);
    auto t0 = Clock::now();
    const auto vocab = TokenVocab::from_tokenizer(tok);
    const double vocab_ms = ms_since(t0);
    for (const std::string name : {"tool_call", "catalogue", "form", "json.gbnf"}) {
      const bool gbnf = name.ends_with(".gbnf");
      const std::string source = read_file(schemas_dir + "/" + name + (gbnf ? "" : ".json"));
      std::vector<double> compile_ms;
      std::shared_ptr<const CompiledGrammar> cg;
      for (int rep = 0; rep < 3; ++rep) {
        t0 = Clock::now();
        auto g = gbnf ? engine::grammar::parse_gbnf(source)
                      : engine::grammar::json_schema_grammar(nlohmann::ordered_json::parse(source));
        cg = std::make_shared<CompiledGrammar>(g, vocab);
        compile_ms.push_back(ms_since(t0));
      }
      std::vector<double> step_ms;
      std::mt19937 rng(42);
      int64_t tokens = 0;
      for (int w = 0; w < walks; ++w) tokens += walk(cg, rng, 400, step_ms);
      report.push_back({{"vocab", label},
                        {"n_vocab", vocab->n_vocab()},
                        {"vocab_index_ms", vocab_ms},
                        {"schema", name},
                        {"grammar_positions", cg->n_positions()},
                        {"compile_ms_median", percentile(compile_ms, 0.5)},
                        {"mask_steps", step_ms.size()},
                        {"tokens_generated", tokens},
                        {"mask_ms_p50", percentile(step_ms, 0.5)},
                        {"mask_ms_p99", percentile(step_ms, 0.99)},
                        {"mask_ms_max", percentile(step_ms, 1.0)}});
      std::fprintf(stderr, "%-32s %-10s compile %7.1f ms  mask p50 %.3f ms  p99 %.3f ms\n", label, name.c_str(),
                   percentile(compile_ms, 0.5), percentile(step_ms, 0.5), percentile(step_ms, 0.99));
    }
  }
  const std::string text = report.dump(2);
  if (!out_path.empty()) std::ofstream(out_path) << text << "\n";
  std::printf("%s\n", text.c_str());
  return 0;
}
