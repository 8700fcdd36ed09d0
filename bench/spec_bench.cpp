// Speculative decoding's gain, engine-level (no HTTP): the scheduler on a model with --spec none,
// ngram (and draft, given a draft model; mtp and mtp-auto -- --spec auto's gate -- for a model with
// NextN / MTP layers), the modes interleaved repetition by repetition so that
// a shared machine's drift hits them alike. For each number of slots S, S requests of one prompt
// run at once; decode is timed from the moment every request has its first token (prefill
// excluded) to the end, in wall time and in this process's CPU time (steadier than wall time when
// other processes compete for the cores). One JSON object per run, then one per (mode, slots) with
// the medians and the ratio to --spec none.
// At temperature 0 a fourth mode, replay, drafts what the first run without drafts generated (every
// slot's answer, greedy): every draft is right, so it measures the ceiling of what verifying drafts
// in the batch gives on this model and machine, whatever proposes them (an answer that quotes its
// prompt, with prompt lookup, comes close to it).
//
//   spec_bench -m model.gguf --prompt-file bench/prompts/code-edit.txt --slots 1,4 --max-tokens 128
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <ctime>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Counts tokens; notes when the first one came and when the request ended.
class TimingSink : public engine::TokenSink {
 public:
  void on_token(engine::TokenEvent&& e) override {
    if (e.token < 0) return;
    std::lock_guard lock(mu_);
    if (tokens_++ == 0) first_ = Clock::now();
    ids_.push_back(e.token);
  }
  void on_finish(engine::FinishReason, const engine::Usage& u, const std::string& error) override {
    std::lock_guard lock(mu_);
    done_ = true;
    completion_ = u.completion_tokens;
    error_ = error;
    cv_.notify_all();
  }
  bool cancelled() const override { return false; }

  void wait() {
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return done_; });
  }
  // Blocks until the first token (or the end) came.
  Clock::time_point first() {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(1), [&] { return tokens_ > 0 || done_; });
    return tokens_ > 0 ? first_ : Clock::time_point{};
  }
  int64_t completion() const { return completion_; }
  const std::vector<int32_t>& ids() const { return ids_; }  // after wait()
  const std::string& error() const { return error_; }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t tokens_ = 0, completion_ = 0;
  Clock::time_point first_;
  bool done_ = false;
  std::string error_;
  std::vector<int32_t> ids_;
};

// Drafts the answer an earlier run generated for the prompt, from where each slot is: always
// right at temperature 0 (until the answer runs out).
class ReplayDrafter final : public engine::DraftSource {
 public:
  ReplayDrafter(size_t prompt_len, const std::vector<int32_t>& answer) : prompt_len_(prompt_len), answer_(answer) {}
  void propose(std::span<engine::DraftSlot> slots) override {
    for (engine::DraftSlot& s : slots) {
      // tokens: the prompt, then answer[0..m-1] (the last going in now): the next is answer[m]
      for (size_t i = s.tokens.size() - prompt_len_; i < answer_.size() && s.draft.size() < static_cast<size_t>(s.max);
           ++i) {
        s.draft.push_back(answer_[i]);
      }
    }
  }

 private:
  size_t prompt_len_;
  const std::vector<int32_t>& answer_;
};

struct Options {
  std::string model, draft, prompt_file;
  std::vector<int> slots{1, 4};
  std::vector<std::string> modes{"none", "ngram"};
  int max_tokens = 128;
  double temperature = 0;
  int repetitions = 3;
  int threads = 0;
  int draft_max = 16;
  int mtp_draft_max = 3;  // as the server's default for mtp
};

engine::SpecMode mode_of(const std::string& m) {
  if (m == "mtp" || m == "mtp-auto") return engine::SpecMode::kMtp;
  return m == "ngram" ? engine::SpecMode::kNgram : m == "draft" ? engine::SpecMode::kDraft : engine::SpecMode::kNone;
}

// One run: S requests at once; decode timed after the last first token.
// answer: the tokens of the first run without drafts (recorded by it, replayed by mode replay).
json run(const Options& o, const engine::Model& model, const engine::Model* draft, const engine::Tokenizer& tok,
         const std::vector<int32_t>& prompt, const std::string& mode, int slots, std::vector<int32_t>& answer) {
  engine::SchedulerOptions so;
  so.n_slots = slots;
  so.n_ctx = static_cast<int64_t>(prompt.size()) + o.max_tokens + 1;
  so.n_threads = o.threads;
  so.prefix_cache_bytes = 0;  // each request prefills its prompt; only decode is timed anyway
  so.spec = mode_of(mode);
  so.draft_max = so.spec == engine::SpecMode::kMtp ? o.mtp_draft_max : o.draft_max;
  so.spec_auto = mode == "mtp-auto";  // the server's --spec auto: slots pause drafts that do not pay
  std::optional<engine::ModelEvaluator> evaluator;
  std::optional<ReplayDrafter> replay;
  std::optional<engine::Scheduler> scheduler;
  if (mode == "replay") {
    so.spec = engine::SpecMode::kDraft;
    evaluator.emplace(model, so.n_ctx, so.n_slots, so.kv_type, so.prefill_chunk + so.n_slots * (1 + so.draft_max),
                      engine::ComputeShare::make(so.n_threads));
    replay.emplace(prompt.size(), answer);
    scheduler.emplace(*evaluator, tok, so, &*replay);
  } else {
    scheduler.emplace(model, tok, so, so.spec == engine::SpecMode::kDraft ? draft : nullptr);
  }
  std::vector<std::shared_ptr<TimingSink>> sinks;
  for (int i = 0; i < slots; ++i) {
    engine::GenerationRequest r;
    r.prompt = prompt;
    r.max_tokens = o.max_tokens;
    r.ignore_eos = true;
    r.sampling.temperature = static_cast<float>(o.temperature);
    r.sampling.seed = static_cast<uint64_t>(i + 1);
    sinks.push_back(std::make_shared<TimingSink>());
    r.sink = sinks.back();
    if (scheduler->submit(std::move(r)) != engine::SubmitStatus::kAccepted) throw std::runtime_error("not accepted");
  }
  Clock::time_point start{};
  double cpu0 = 0;
  for (bool all = false; !all;) {  // the last first token: decode starts
    all = true;
    for (auto& s : sinks) {
      const Clock::time_point t = s->first();
      all = all && t != Clock::time_point{};
      start = std::max(start, t);
    }
  }
  cpu0 = cpu_seconds();
  for (auto& s : sinks) s->wait();
  const double wall = std::chrono::duration<double>(Clock::now() - start).count();
  const double cpu = cpu_seconds() - cpu0;
  int64_t tokens = 0;
  for (auto& s : sinks) {
    if (!s->error().empty()) throw std::runtime_error(s->error());
    tokens += s->completion() - 1;  // the first came before the timing
  }
  if (mode == "none" && answer.empty()) answer = sinks[0]->ids();
  const engine::SpecStats st = scheduler->stats().spec;
  return {{"mode", mode}, {"slots", slots}, {"tokens", tokens}, {"decode_s", wall}, {"cpu_s", cpu},
          {"tok_s", static_cast<double>(tokens) / wall}, {"tok_per_cpu_s", static_cast<double>(tokens) / cpu},
          {"draft_tokens", st.draft_tokens}, {"accepted_tokens", st.accepted_tokens},
          {"paused_steps", st.paused_steps}};
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app{"Speculative decoding: decode tokens/s through the scheduler with --spec none, ngram, draft, mtp"};
  app.add_option("-m,--model", o.model, "GGUF model")->required()->check(CLI::ExistingFile);
  app.add_option("--draft", o.draft, "draft model (adds mode draft)")->check(CLI::ExistingFile);
  app.add_option("--prompt-file", o.prompt_file, "prompt text")->required()->check(CLI::ExistingFile);
  app.add_option("--slots", o.slots, "concurrent requests, one level each (default 1,4)")->delimiter(',');
  app.add_option("--max-tokens", o.max_tokens, "tokens per request (default 128)")->check(CLI::PositiveNumber);
  app.add_option("--temperature", o.temperature, "sampling temperature (default 0: greedy)")->check(CLI::Range(0.0, 2.0));
  app.add_option("-r,--repetitions", o.repetitions, "runs per mode and level (default 3)")->check(CLI::PositiveNumber);
  app.add_option("-t,--threads", o.threads, "compute threads (default: physical cores)");
  app.add_option("--draft-max", o.draft_max, "drafts per slot and step at most (default 16)")->check(CLI::Range(1, 64));
  app.add_option("--mtp-draft-max", o.mtp_draft_max, "the same for mode mtp (default 3)")->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  try {
    const engine::Model model = engine::Model::load(o.model);
    std::optional<engine::Model> draft;
    if (!o.draft.empty()) {
      draft.emplace(engine::Model::load(o.draft));
      o.modes.push_back("draft");
    }
    if (model.hparams().n_layer_nextn > 0) {  // its own NextN / MTP block, always and as --spec auto uses it
      o.modes.push_back("mtp");
      o.modes.push_back("mtp-auto");
    }
    const engine::Tokenizer tok = engine::Tokenizer::from_gguf(model.file());
    std::ifstream in(o.prompt_file, std::ios::binary);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::vector<int32_t> prompt = tok.encode(text, true, false);
    if (o.temperature == 0) o.modes.push_back("replay");
    std::vector<int32_t> answer;  // the first run without drafts: modes start with none
    std::map<std::pair<std::string, int>, std::vector<json>> runs;
    for (int slots : o.slots) {
      for (int r = 0; r < o.repetitions; ++r) {
        for (const std::string& mode : o.modes) {
          json j = run(o, model, draft ? &*draft : nullptr, tok, prompt, mode, slots, answer);
          j["rep"] = r;
          std::cout << j.dump() << std::endl;
          runs[{mode, slots}].push_back(std::move(j));
        }
      }
    }
    for (int slots : o.slots) {
      std::vector<double> base_wall, base_cpu;
      for (const json& j : runs[{"none", slots}]) {
        base_wall.push_back(j["tok_s"]);
        base_cpu.push_back(j["tok_per_cpu_s"]);
      }
      for (const std::string& mode : o.modes) {
        std::vector<double> wall, cpu, acc;
        for (const json& j : runs[{mode, slots}]) {
          wall.push_back(j["tok_s"]);
          cpu.push_back(j["tok_per_cpu_s"]);
          const double d = j["draft_tokens"].get<double>();
          acc.push_back(d > 0 ? j["accepted_tokens"].get<double>() / d : 0);
        }
        const json summary = {{"summary", true}, {"model", o.model}, {"mode", mode}, {"slots", slots},
                              {"prompt_tokens", prompt.size()}, {"max_tokens", o.max_tokens},
                              {"temperature", o.temperature}, {"tok_s", median(wall)},
                              {"tok_per_cpu_s", median(cpu)}, {"acceptance", median(acc)},
                              {"vs_none_wall", median(wall) / median(base_wall)},
                              {"vs_none_cpu", median(cpu) / median(base_cpu)}};
        std::cout << summary.dump() << std::endl;
      }
    }
  } catch (const std::exception& e) {
    std::cerr << "spec_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
