// Whole-model correctness against llama.cpp's reference logits (../shared/golden, see its README):
// teacher-forced over prompt + greedy continuation, every position, every reference pair.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/model/attention.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "tests/support/isa.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

// Every golden file; a test below checks that the directory holds no others.
const std::vector<std::string> kGoldenModels = {
    "stories260K",        "llama-2-tiny-random", "synth-llama-F32",     "synth-llama-F16",
    "synth-llama-BF16",   "synth-llama-Q8_0",    "synth-llama-Q4_0",    "synth-llama-Q4_1",
    "synth-llama-Q5_0",   "synth-llama-Q5_1",    "synth-llama-Q2_K",    "synth-llama-Q3_K_M",
    "synth-llama-Q4_K_M", "synth-llama-Q5_K_M",  "synth-llama-Q6_K",    "synth-llama-IQ4_NL",
    "synth-llama-IQ4_XS", "synth-qwen2-Q8_0",    "synth-qwen2-Q4_K_M",  "synth-qwen3-F32",
    "synth-qwen3-Q8_0",   "synth-qwen3-Q6_K",
    // architectures/: beyond llama
    "architectures/synth-gemma3-F32",    "architectures/synth-gemma3-Q8_0",
    "architectures/synth-gemma2-Q8_0",   "architectures/synth-qwen3moe-F32",
    "architectures/synth-qwen3moe-Q8_0", "architectures/synth-qwen3moe-Q4_K_M",
    "architectures/synth-phi3-Q8_0",     "architectures/synth-granite-Q8_0",
    "architectures/synth-smollm3-Q8_0",
    // models-2026/: hybrid stacks (Gated DeltaNet + gated attention), the 328-token prompt among them
    "models-2026/synth-qwen35-F32",      "models-2026/synth-qwen35moe-F32",
    // Pass since Q8_0 activations keep d in binary16 as ggml's do (ref::quantize_q8a) and attention
    // accumulates as the reference's batches did (eval_all); before, 1.1-3x the tolerance.
    "models-2026/synth-qwen35-Q8_0",     "models-2026/synth-qwen35moe-Q8_0",
    // With the 328-token prompt since attention accumulates as the reference's batches did
    // (before: its short prompts only, the long one over the tolerance with the scalar and avx2 tables).
    "models-2026/synth-gemma4-F32",      "models-2026/synth-gemma4moe-F32",
    // In the repository (tests/data/reference, see its README): references ggufd made with
    // llama.cpp for what ../shared does not cover. Never skipped.
    "repo/tiny-gpt-oss-F32",  "repo/tiny-gpt-oss-MXFP4_MOE-nofa", "repo/tiny-mistral3-F32", "repo/tiny-mistral3-Q8_0",
    "repo/tiny-llama-yarn-F32", "repo/tiny-llama3rope-F32", "repo/tiny-qwen2moe-F32", "repo/tiny-qwen2moe-Q8_0",
    "repo/synth-llama-IQ3_XXS", "repo/synth-llama-TQ2_0",
    "repo/synth-qwen3next-F32", "repo/synth-qwen3next-ssmin-F32", "repo/synth-qwen3next-Q8_0",
    "repo/synth-lfm2-F32", "repo/synth-lfm2-Q8_0", "repo/synth-lfm2moe-F32", "repo/synth-lfm2moe-Q8_0",
};

bool in_repo(const std::string& stem) { return stem.rfind("repo/", 0) == 0; }
std::string repo_reference(const std::string& relative) {
  return std::string(GGUFD_TEST_DATA_DIR) + "/reference/" + relative;
}

// golden/architectures/synth-x.json belongs to models/synth/synth-x.gguf (under ../shared).
std::string model_path(const std::string& stem) {
  const std::string name = stem.substr(stem.find('/') + 1);  // (npos + 1 == 0)
  return "models/" + std::string(name.rfind("synth-", 0) == 0 ? "synth/" : "") + name + ".gguf";
}

nlohmann::json load_json(const std::string& relative) {
  std::ifstream in(shared_path(relative));
  return nlohmann::json::parse(in);
}

// True when every 2-D weight is F32, F16 or BF16 (the tight tolerance applies).
bool float_weights(const Model& m) {
  for (const gguf::TensorInfo& t : m.file().tensors()) {
    if (t.n_dims >= 2 && t.type != gguf::TensorType::F32 && t.type != gguf::TensorType::F16 &&
        t.type != gguf::TensorType::BF16) {
      return false;
    }
  }
  return true;
}

// A mixture-of-experts router whose last chosen expert leads the next by less than this
// probability is a near-tie: the quantized activations of two correct implementations differ by
// more than that, and choosing the other expert moves that token's logits by O(1) (seen: flips at
// gaps up to 0.0017 with Q8_0 weights and 0.0047 with Q4_K_M). Such a position is not compared. A flip also changes that
// position's K/V in the later layers, which every later position attends to, so positions after
// a near-tie are compared with kAfterTie times the tolerance (seen: up to 1.34). The F32 models
// are compared everywhere at the normal tolerance.
// A near-tie on either side can flip, so the rule takes the smaller of our margin and llama.cpp's
// where its margins were recorded (tests/data/reference/golden-route-margins.json: the quantized
// MoE references of ../shared; elsewhere ours alone). Seen: synth-qwen35moe-Q4_K_M, case 2,
// position 29: ours 0.0167, llama.cpp's 0.0051, and an error of 6x the tolerance there.
constexpr float kRouteTie = 0.006f;
constexpr double kAfterTie = 1.5;

// llama.cpp's route margins of `stem` per case and position, or an empty list.
std::vector<std::vector<float>> reference_route_margins(const std::string& stem) {
  static const nlohmann::json all = [] {
    std::ifstream in(std::string(GGUFD_TEST_DATA_DIR) + "/reference/golden-route-margins.json");
    return nlohmann::json::parse(in)["models"];
  }();
  if (!all.contains(stem)) return {};
  return all[stem].get<std::vector<std::vector<float>>>();
}

// llama.cpp's CPU flash attention with an F16 cache accumulates O in f16 on its one-row path (decode,
// and batches of fewer than 64 query tokens) and in f32 on its tiled path (batches of 64 or more),
// so the references, made with one batch for the prompt (ubatch 512, ../shared/tools/golden) and
// one token at a time after it, took f32 for the prompt positions of prompts of 64 tokens or more
// and f16 everywhere else; ours choose by position (Attention::kF16AccumPositions, for the prefix
// cache). The two differ by 1e-3 of layer 0's kqv_out, which Q8_0 / Q8_K activation quants in the
// next projections turn into logit errors of the tolerance's size on these random models
// (scripts/drift/README.md, Findings), so the comparison runs the reference's accumulation. Both
// accumulations stay compared: f32 at long prompts' positions, f16 at short prompts' and decode's.
constexpr size_t kReferenceUbatch = 512;
constexpr size_t kTiledMinRows = 64;

// Logits (n_tokens, n_vocab) of one sequence, every position wanted; `route_margins` (n_tokens,)
// receives each position's Forward::route_margin() when given. `n_prompt` (> 0): the sequence's
// first n_prompt tokens were the reference's prompt, and attention accumulates as llama.cpp's did
// for it (above); 0: ours (Attention::kF16AccumPositions).
std::vector<float> eval_all(const Model& m, const std::vector<int32_t>& tokens, ThreadPool& pool,
                            int64_t max_batch = 32, std::vector<float>* route_margins = nullptr,
                            KvType kv_type = KvType::kF16, size_t n_prompt = 0) {
  KvCache cache(m.hparams(), static_cast<int64_t>(tokens.size()), kv_type);
  Forward fwd(m, max_batch);
  if (n_prompt > 0) {
    EXPECT_LE(n_prompt, kReferenceUbatch) << "a longer prompt ran as several llama.cpp batches";
    fwd.set_f32_accum_range(0, n_prompt >= kTiledMinRows ? static_cast<int32_t>(n_prompt) : 0);
  }
  Batch b;
  for (size_t i = 0; i < tokens.size(); ++i) b.add(tokens[i], 0, static_cast<int32_t>(i), true);
  fwd.eval(b, cache, pool);
  if (route_margins) {
    for (int64_t i = 0; i < b.size(); ++i) route_margins->push_back(fwd.route_margin(i));
  }
  return {fwd.logits(0), fwd.logits(0) + b.size() * m.hparams().n_vocab};
}

// Teacher-forced logits of the model `stem` against its reference, with a `kv_type` cache: the
// float tolerance for float weights with an f16 / f32 cache, the quantized one otherwise.
void compare_with_golden(const std::string& stem, KvType kv_type) {
  GGUFD_REQUIRE_ISA();
  std::string golden_file, model_file;
  if (in_repo(stem)) {
    golden_file = repo_reference("golden/" + stem.substr(5) + ".json");
    // "-nofa": the same model's logits from llama.cpp with flash attention off
    std::string name = stem.substr(5);
    if (name.ends_with("-nofa")) name.resize(name.size() - 5);
    model_file = repo_reference("models/" + name + ".gguf");
  } else {
    GGUFD_REQUIRE_SHARED("golden/" + stem + ".json");
    GGUFD_REQUIRE_SHARED(model_path(stem));
    golden_file = shared_path("golden/" + stem + ".json");
    model_file = shared_path(model_path(stem));
  }
  std::ifstream golden_in(golden_file);
  ASSERT_TRUE(golden_in) << "cannot read " << golden_file;
  const nlohmann::json golden = nlohmann::json::parse(golden_in);
  const Model model = Model::load(model_file);
  const int64_t n_vocab = model.hparams().n_vocab;
  ASSERT_EQ(n_vocab, golden["n_vocab"].get<int64_t>());
  const bool exact_type = float_weights(model) && kv_type != KvType::kQ8_0;
  const double abs_tol = exact_type ? 0.01 : 0.06, rel_tol = exact_type ? 0.004 : 0.02;
  ThreadPool pool(1);  // tiny models: one thread is fastest (ctest runs tests in parallel)

  double max_err = 0.0, max_ratio = 0.0;  // worst |o - r|, and worst |o - r| / tolerance
  int route_ties = 0;                     // positions skipped as router near-ties
  const std::vector<std::vector<float>> ref_margins = reference_route_margins(stem);
  if (!ref_margins.empty()) {
    ASSERT_EQ(ref_margins.size(), golden["cases"].size()) << stem;
  }
  for (size_t ci = 0; ci < golden["cases"].size(); ++ci) {
    const auto& c = golden["cases"][ci];
    std::vector<int32_t> tokens = c["tokens"].get<std::vector<int32_t>>();
    const size_t n_prompt = tokens.size();
    // gen_top[g] follows greedy[g]; a run that stopped early has fewer gen_top than greedy.
    for (size_t g = 0; g < c["gen_top"].size(); ++g) tokens.push_back(c["greedy"][g].get<int32_t>());
    std::vector<float> margins;
    const std::vector<float> logits = eval_all(model, tokens, pool, 32, &margins, kv_type, n_prompt);
    if (!ref_margins.empty()) {
      ASSERT_EQ(ref_margins[ci].size(), tokens.size()) << stem << " case " << ci;
      for (size_t p = 0; p < tokens.size(); ++p) margins[p] = std::min(margins[p], ref_margins[ci][p]);
    }
    double slack_after_tie = 1.0;  // kAfterTie once a near-tie has been passed
    for (size_t p = 0; p < tokens.size(); ++p) {
      if (!exact_type && margins[p] < kRouteTie) {
        ++route_ties;
        slack_after_tie = kAfterTie;
        continue;
      }
      const double slack = slack_after_tie;  // 1, or kAfterTie
      const auto& ref = p < n_prompt ? c["top"][p] : c["gen_top"][p - n_prompt];
      const float* row = logits.data() + p * static_cast<size_t>(n_vocab);
      for (const auto& pair : ref) {
        const int32_t id = pair[0].get<int32_t>();
        const double r = pair[1].get<double>(), o = row[id];
        max_err = std::max(max_err, std::abs(o - r));
        max_ratio = std::max(max_ratio, std::abs(o - r) / (abs_tol + rel_tol * std::abs(r)));
        ASSERT_LE(std::abs(o - r), slack * (abs_tol + rel_tol * std::abs(r)))
            << stem << " prompt '" << c["prompt"].get<std::string>() << "' position " << p
            << " token " << id << ": ours " << o << ", reference " << r;
      }
      const double top1 = ref[0][1].get<double>(), top2 = ref[1][1].get<double>();
      if (top1 - top2 > 2 * slack * (abs_tol + rel_tol * std::abs(top1))) {
        const int64_t ours = std::max_element(row, row + n_vocab) - row;
        ASSERT_EQ(ours, ref[0][0].get<int64_t>()) << stem << " argmax at position " << p;
      }
    }
  }
  std::printf("[ golden   ] %-20s %s%s max |ours - reference| = %.5f (%.2f of the tolerance)%s\n",
              stem.c_str(), exact_type ? "float" : "quant", kv_type == KvType::kF16 ? "" : (" kv " + kv_type_name(kv_type)).c_str(),
              max_err, max_ratio,
              route_ties ? (", " + std::to_string(route_ties) + " router near-tie position(s) skipped").c_str() : "");
}


class Golden : public ::testing::TestWithParam<std::string> {};

TEST_P(Golden, TeacherForcedLogitsMatchReference) { compare_with_golden(GetParam(), KvType::kF16); }

// The same references with a Q8_0 cache (keys and values quantized like weights), judged with the
// quantized weights' tolerance, for float-weight models: llama, qwen3's q/k norms, gemma3's sliding
// window (and its ring), mistral3's 128-wide heads. Quantized weights are not run: their own error
// and the cache's add up past that tolerance for llama.cpp too -- its Q8_0-cache logits differ from
// its F16-cache references by 1.15 (synth-llama-Q8_0), 1.45 (Q4_K_M) and 1.08 (gemma2-Q8_0) of it,
// ours by 1.07, 1.50 and 0.92; nor MoE models, where the cache's noise flips expert choices.
class GoldenQ8Cache : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenQ8Cache, TeacherForcedLogitsMatchReference) { compare_with_golden(GetParam(), KvType::kQ8_0); }

INSTANTIATE_TEST_SUITE_P(Models, GoldenQ8Cache,
                         ::testing::Values("synth-llama-F32", "synth-qwen3-F32", "architectures/synth-gemma3-F32",
                                           "repo/tiny-mistral3-F32", "repo/tiny-llama-yarn-F32"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param.substr(p.param.find('/') + 1);
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

std::string test_name(const ::testing::TestParamInfo<std::string>& p) {
  std::string s = p.param.substr(p.param.find('/') + 1);
  std::replace(s.begin(), s.end(), '-', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(AllModels, Golden, ::testing::ValuesIn(kGoldenModels), test_name);

// models-2026 references that do not pass yet, so no test runs them (issue 30; worst position as a
// fraction of the tolerance, scalar / avx2 / avxvnni / avx512vnni tables; scripts/drift/README.md,
// Findings, has the layer-by-layer account): synth-qwen35-Q4_K_M 1.15 / 1.06 / 1.06 / 1.10 and
// synth-qwen35mtp-Q8_0 3.33 / 2.71 / 2.71 / 2.70 (both: the Gated DeltaNet layers 1-2 depart from
// llama.cpp's by 2e-3 - 0.1 of their output on the 328-token prompt, while layer 0 agrees to 4e-7);
// synth-qwen35moe-Q4_K_M 0.85 / 0.84 / 0.84 / 1.74 (avx512vnni only: position 29 of the 19-token
// prompt, where our router's gap is 0.017 and llama.cpp's 0.0051, is skipped as a near-tie since
// the rule takes llama.cpp's margins too; the flip there stays in the recurrent state, and position
// 32 is 1.74x the tolerance, past kAfterTie, which was set for attention-only models); synth-gemma4-Q8_0 1.62 and -Q4_K_M 2.00 (avx512vnni);
// synth-gemma4moe-Q4_K_M's router is a near-tie (< kRouteTie) at every position.
const std::set<std::string> kNotYetPassing = {
    "models-2026/synth-qwen35-Q4_K_M", "models-2026/synth-qwen35moe-Q4_K_M", "models-2026/synth-qwen35mtp-Q8_0",
    "models-2026/synth-gemma4-Q8_0",   "models-2026/synth-gemma4-Q4_K_M",    "models-2026/synth-gemma4moe-Q4_K_M",
};

TEST(GoldenFiles, EveryReferenceFileIsTested) {
  GGUFD_REQUIRE_SHARED("golden");
  std::set<std::string> known(kGoldenModels.begin(), kGoldenModels.end());
  known.insert(kNotYetPassing.begin(), kNotYetPassing.end());
  for (const std::string dir : {"", "architectures/", "models-2026/"}) {
    for (const auto& e : std::filesystem::directory_iterator(shared_path("golden/" + dir))) {
      if (e.path().extension() == ".json") {
        EXPECT_TRUE(known.count(dir + e.path().stem().string())) << e.path() << " has no test";
      }
    }
  }
}

TEST(GoldenFiles, EveryRepositoryReferenceIsTested) {
  std::set<std::string> known(kGoldenModels.begin(), kGoldenModels.end());
  known.insert(kNotYetPassing.begin(), kNotYetPassing.end());
  for (const auto& e : std::filesystem::directory_iterator(repo_reference("golden"))) {
    if (e.path().filename() == "vision") continue;  // (image references: tests/vision/vision_golden_test.cpp)
    EXPECT_TRUE(known.count("repo/" + e.path().stem().string())) << e.path() << " has no test";
  }
}

// A trained model with clear margins: free-running greedy decoding reproduces the reference token
// for token. Where the reference itself is a near-tie (top-1 leads top-2 by no more than twice the
// tolerance, as the README's argmax rule says) either choice is correct; there the test follows
// the reference token and carries on.
TEST(GoldenStories, GreedyGenerationMatchesTokenForToken) {
  GGUFD_REQUIRE_ISA();
  GGUFD_REQUIRE_SHARED("golden/stories260K.json");
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const nlohmann::json golden = load_json("golden/stories260K.json");
  const Model model = Model::load(shared_path("models/stories260K.gguf"));
  ThreadPool pool(1);  // tiny models: one thread is fastest (ctest runs tests in parallel)
  int near_ties_flipped = 0;
  for (const auto& c : golden["cases"]) {
    const auto prompt = c["tokens"].get<std::vector<int32_t>>();
    const auto expected = c["greedy"].get<std::vector<int32_t>>();
    KvCache cache(model.hparams(), 256);
    Forward fwd(model, 64);
    Batch b;
    for (size_t i = 0; i < prompt.size(); ++i) {
      b.add(prompt[i], 7, static_cast<int32_t>(i), i + 1 == prompt.size());
    }
    for (size_t g = 0; g < expected.size(); ++g) {
      fwd.eval(b, cache, pool);
      const float* logits = fwd.logits(0);
      int32_t next = static_cast<int32_t>(std::max_element(logits, logits + model.hparams().n_vocab) - logits);
      if (next != expected[g]) {
        // The reference's scores for this step: the last prompt row, then gen_top[g - 1].
        const auto& ref = g == 0 ? c["top"].back() : c["gen_top"][g - 1];
        const double top1 = ref[0][1].get<double>(), top2 = ref[1][1].get<double>();
        ASSERT_LE(top1 - top2, 2 * (0.01 + 0.004 * std::abs(top1)))
            << c["prompt"].get<std::string>() << ": token " << g << " is " << next << ", not "
            << expected[g] << ", where the reference leads by " << top1 - top2;
        ++near_ties_flipped;
        next = expected[g];
      }
      b.clear();
      b.add(next, 7, static_cast<int32_t>(prompt.size() + g), true);
    }
  }
  std::printf("[ golden   ] stories260K greedy: %d near-tie(s) resolved the other way\n",
              near_ties_flipped);
}

// The same tokens give the same logits whether a sequence runs alone or batched with others.
// Run for a dense model, a mixture of experts (tokens of both sequences share expert groups),
// sliding-window layers (window 8 < the 10 positions) and hybrid stacks (recurrent state per sequence).
class Batching : public ::testing::TestWithParam<std::string> {};

TEST_P(Batching, DoesNotChangeLogits) {
  GGUFD_REQUIRE_ISA();
  GGUFD_REQUIRE_SHARED("models/synth/" + GetParam() + ".gguf");
  const Model model = Model::load(shared_path("models/synth/" + GetParam() + ".gguf"));
  const int64_t n_vocab = model.hparams().n_vocab;
  ThreadPool pool(2);  // threads split heads and rows: must not matter either
  const std::vector<int32_t> a = {1, 400, 31, 77, 250, 9, 311, 18, 402, 55};
  const std::vector<int32_t> b = {1, 12, 99, 300, 7, 41};

  // A alone: prefill of 6 tokens, then 4 one-token decode steps.
  std::vector<std::vector<float>> alone;
  {
    KvCache cache(model.hparams(), 64);
    Forward fwd(model, 16);
    Batch batch;
    for (int32_t p = 0; p < 6; ++p) batch.add(a[p], 0, p, true);
    fwd.eval(batch, cache, pool);
    for (int64_t i = 0; i < 6; ++i) alone.emplace_back(fwd.logits(i), fwd.logits(i) + n_vocab);
    for (int32_t p = 6; p < 10; ++p) {
      batch.clear();
      batch.add(a[p], 0, p, true);
      fwd.eval(batch, cache, pool);
      alone.emplace_back(fwd.logits(0), fwd.logits(0) + n_vocab);
    }
  }
  // A interleaved with B (another sequence id, its own positions) in shared batches.
  KvCache cache(model.hparams(), 64);
  Forward fwd(model, 16);
  Batch batch;
  for (int32_t p = 0; p < 6; ++p) {
    batch.add(b[p], 3, p, p % 2 == 0);
    batch.add(a[p], 0, p, true);
  }
  fwd.eval(batch, cache, pool);
  std::vector<std::vector<float>> mixed;
  // Outputs come in batch order: B0 A0 A1 B2 A2 A3 B4 A4 A5.
  for (int64_t i : {1, 2, 4, 5, 7, 8}) mixed.emplace_back(fwd.logits(i), fwd.logits(i) + n_vocab);
  for (int32_t p = 6; p < 10; ++p) {
    batch.clear();
    batch.add(a[p], 0, p, true);
    batch.add(b[p % 6], 3, p, true);  // B keeps decoding too (its next positions: a recurrent state must continue)
    fwd.eval(batch, cache, pool);
    mixed.emplace_back(fwd.logits(0), fwd.logits(0) + n_vocab);
  }
  ASSERT_EQ(alone.size(), mixed.size());
  for (size_t p = 0; p < alone.size(); ++p) {
    for (int64_t v = 0; v < n_vocab; ++v) {
      ASSERT_NEAR(alone[p][static_cast<size_t>(v)], mixed[p][static_cast<size_t>(v)], 1e-5)
          << "position " << p << " token " << v;
    }
  }
  // Truncating A and evaluating its tail again reproduces the same logits.
  cache.truncate(0, 8);
  batch.clear();
  batch.add(a[8], 0, 8, true);
  batch.add(a[9], 0, 9, true);
  fwd.eval(batch, cache, pool);
  for (int64_t v = 0; v < n_vocab; ++v) ASSERT_NEAR(fwd.logits(1)[v], alone[9][static_cast<size_t>(v)], 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Forward, Batching,
                         ::testing::Values("synth-qwen2-Q8_0", "synth-qwen3moe-Q8_0", "synth-gemma3-Q8_0",
                                           "synth-qwen35-Q8_0", "synth-qwen35moe-Q8_0", "synth-gemma4-Q8_0",
                                           "synth-gemma4moe-Q4_K_M"),
                         [](const auto& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// Sliding-window layers kept in a ring (KvCache window cells) give the logits of a full cache bit
// for bit: two sequences of 200 tokens, interleaved in chunks of 7, far past the window (8) and
// the ring's slack, so cells are freed and reused; then a truncation within the slack and one
// beyond it.
class WindowRing : public ::testing::TestWithParam<std::string> {};

TEST_P(WindowRing, GivesTheLogitsOfAFullCache) {
  GGUFD_REQUIRE_ISA();
  GGUFD_REQUIRE_SHARED("models/synth/" + GetParam() + ".gguf");
  const Model model = Model::load(shared_path("models/synth/" + GetParam() + ".gguf"));
  const HParams& hp = model.hparams();
  ThreadPool pool(2);
  constexpr int32_t kLen = 200, kChunk = 7;
  std::vector<int32_t> tokens(2 * kLen);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(hp.n_vocab));
  // Logits (2 * kLen, n_vocab): sequence s's position p at row s * kLen + p.
  auto run = [&](KvCache& cache) {
    Forward fwd(model, 2 * kChunk);
    std::vector<float> out(static_cast<size_t>(2 * kLen * hp.n_vocab));
    for (int32_t begin = 0; begin < kLen; begin += kChunk) {
      Batch b;
      for (int32_t p = begin; p < std::min(kLen, begin + kChunk); ++p) {
        for (SeqId s : {0, 1}) b.add(tokens[static_cast<size_t>(s * kLen + p)], s, p, true);
      }
      fwd.eval(b, cache, pool);
      for (int64_t i = 0; i < b.size(); ++i) {
        const float* l = fwd.logits(i);
        std::copy(l, l + hp.n_vocab, out.begin() + (b.seq[static_cast<size_t>(i)] * kLen + b.pos[static_cast<size_t>(i)]) * hp.n_vocab);
      }
    }
    return out;
  };
  KvCache full(hp, 2 * kLen);
  const int64_t window = KvCache::window_cells(hp, 2 * kLen, 2, 2 * kChunk);
  ASSERT_GT(window, 0);
  KvCache ring(hp, 2 * kLen, KvType::kF16, window);
  EXPECT_LT(ring.bytes(), full.bytes());
  EXPECT_EQ(run(ring), run(full));
  EXPECT_LE(static_cast<int64_t>(ring.entries(0, KvCache::Pool::kWindow).size()), hp.n_swa - 1 + KvCache::kWindowSlack);

  // Re-evaluating the last 10 positions after a truncation inside the slack: the same logits.
  ASSERT_EQ(ring.truncate(1, kLen - 10), kLen - 10);
  Forward fwd(model, 16);
  Batch b;
  for (int32_t p = kLen - 10; p < kLen; ++p) b.add(tokens[static_cast<size_t>(kLen + p)], 1, p, true);
  fwd.eval(b, ring, pool);
  std::vector<float> again(fwd.logits(0), fwd.logits(0) + 10 * hp.n_vocab);
  full.truncate(1, kLen - 10);
  fwd.eval(b, full, pool);
  EXPECT_EQ(again, std::vector<float>(fwd.logits(0), fwd.logits(0) + 10 * hp.n_vocab));
  // Beyond the slack the ring cannot continue the sequence: it is dropped, the other one stays.
  EXPECT_EQ(ring.truncate(1, 20), 0);
  EXPECT_FALSE(ring.has_sequence(1));
  EXPECT_EQ(ring.seq_length(0), kLen);
}

INSTANTIATE_TEST_SUITE_P(Forward, WindowRing,
                         ::testing::Values("synth-gemma3-Q8_0", "synth-gemma2-Q8_0",
                                           // sliding layers' own head size; layer 4 reads layer 2's ring
                                           "synth-gemma4-Q8_0"),
                         [](const auto& p) {
                           std::string s = p.param;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// The GGUF v1 file holds the same weights: same logits, bit for bit.
TEST(GoldenStories, Version1FileGivesTheSameLogits) {
  GGUFD_REQUIRE_ISA();
  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  GGUFD_REQUIRE_SHARED("models/stories260K-v1.gguf");
  const Model v3 = Model::load(shared_path("models/stories260K.gguf"));
  const Model v1 = Model::load(shared_path("models/stories260K-v1.gguf"));
  EXPECT_EQ(v1.hparams().n_ctx_train, 512);
  ThreadPool pool(1);  // tiny models: one thread is fastest (ctest runs tests in parallel)
  const std::vector<int32_t> tokens = {1, 403, 407, 261, 378, 10, 300, 283, 90, 43, 290};
  EXPECT_EQ(eval_all(v1, tokens, pool), eval_all(v3, tokens, pool));
}

TEST(GoldenStories, LegacyQ8_0FileIsRefused) {
  GGUFD_REQUIRE_ISA();
  GGUFD_REQUIRE_SHARED("models/stories260K-legacy-q8_0.gguf");
  try {
    Model::load(shared_path("models/stories260K-legacy-q8_0.gguf"));
    FAIL() << "the legacy Q8_0 file was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("row length 172 is not a multiple of Q8_0's block size 32"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace engine
