// Tokenizer throughput (Google Benchmark): encode ~1 MB of mixed English, code and CJK text with
// the shared Llama 3 / Qwen 3 / Llama 2 / Gemma 3 vocabularies; bytes/s is the headline number.
// The vocabularies come from $GGUFD_SHARED_DIR (default: the build-time ../shared).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"

namespace {

std::string shared_dir() {
  const char* env = std::getenv("GGUFD_SHARED_DIR");
  return env != nullptr ? env : GGUFD_SHARED_DIR;
}

// Deterministic mix: ~60% English prose, ~25% C++/Python code, ~15% Chinese/Japanese/Korean.
std::string mixed_text(size_t target_bytes) {
  static const char* const kWords[] = {
      "the", "model", "token", "server", "request", "quickly", "language", "of", "and", "to",
      "a", "in", "is", "that", "it", "was", "for", "on", "are", "with", "they", "be", "at",
      "one", "have", "this", "from", "by", "hot", "word", "but", "what", "some", "we", "can",
      "out", "other", "were", "all", "there", "when", "up", "use", "your", "how", "said",
      "Lily", "Paris", "GPU", "2024", "3.14", "don't", "we'll", "O(n)", "e-mail", "U.S."};
  static const char* const kCode[] = {
      "for (size_t i = 0; i < n; ++i) {\n    sum += x[i] * w[i];\n}\n",
      "def tokenize(text: str) -> list[int]:\n    return [vocab[w] for w in text.split()]\n",
      "    if (!ok) return std::nullopt;  // 失败\n",
      "const auto& [key, value] = *it;\nmap.emplace(key, value * 2);\n",
      "\tprintf(\"%d tokens/s\\n\", rate);\n"};
  static const char* const kCjk[] = {
      "我们今天去公园散步，天气非常好。", "東京の天気は晴れです。", "안녕하세요, 만나서 반갑습니다.",
      "机器学习模型需要大量的数据。", "トークナイザーの速度を測ります。"};
  std::mt19937 rng(1234);
  std::string text;
  text.reserve(target_bytes + 256);
  while (text.size() < target_bytes) {
    const unsigned kind = rng() % 20;
    if (kind < 12) {
      const int n = 5 + static_cast<int>(rng() % 15);
      for (int i = 0; i < n; ++i) {
        text += kWords[rng() % std::size(kWords)];
        text += i + 1 == n ? ". " : " ";
      }
      if (rng() % 4 == 0) text += "\n\n";
    } else if (kind < 17) {
      text += kCode[rng() % std::size(kCode)];
    } else {
      text += kCjk[rng() % std::size(kCjk)];
    }
  }
  return text;
}

const std::string& corpus() {
  static const std::string text = mixed_text(1 << 20);
  return text;
}

const engine::Tokenizer* tokenizer(const std::string& name) {
  static std::map<std::string, std::unique_ptr<engine::Tokenizer>> cache;
  auto& slot = cache[name];
  if (!slot) {
    const std::string path = shared_dir() + "/tokenizer/ggml-vocab-" + name + ".gguf";
    try {
      slot = std::make_unique<engine::Tokenizer>(
          engine::Tokenizer::from_gguf(gguf::File::open(path)));
    } catch (const std::exception&) {
      return nullptr;
    }
  }
  return slot.get();
}

void encode(benchmark::State& state, const std::string& name) {
  const engine::Tokenizer* tok = tokenizer(name);
  if (tok == nullptr) {
    state.SkipWithError(("vocabulary not found: " + name).c_str());
    return;
  }
  size_t n_tokens = 0;
  for (auto _ : state) {
    const std::vector<int32_t> ids = tok->encode(corpus(), false, false);
    n_tokens = ids.size();
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
  state.counters["tokens"] = static_cast<double>(n_tokens);
  state.counters["MB/s"] = benchmark::Counter(
      static_cast<double>(corpus().size()) / 1e6, benchmark::Counter::kIsIterationInvariantRate);
}

void decode(benchmark::State& state, const std::string& name) {
  const engine::Tokenizer* tok = tokenizer(name);
  if (tok == nullptr) {
    state.SkipWithError(("vocabulary not found: " + name).c_str());
    return;
  }
  const std::vector<int32_t> ids = tok->encode(corpus(), false, false);
  for (auto _ : state) {
    engine::StreamDecoder decoder(*tok);
    size_t bytes = 0;
    for (int32_t id : ids) bytes += decoder.push(id).size();
    benchmark::DoNotOptimize(bytes);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * corpus().size()));
}

BENCHMARK_CAPTURE(encode, llama3, std::string("llama3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, qwen3, std::string("qwen3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, llama_spm, std::string("llama-spm"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, gemma3, std::string("gemma3"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, llama3_stream, std::string("llama3"))->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
