// `ggufd synth -o OUT.gguf [--shape NAME] [--type TYPE] [--seed S] [--vocab-from FILE] ...`:
// writes a random-weight model in a real model's shape (tools/synth/synth.h).
#include <chrono>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include "tools/ggufd/commands.h"
#include "tools/synth/synth.h"

namespace ggufd {

namespace {

struct SynthArgs {
  std::string output;
  std::string shape = "demo";
  std::string type = "Q8_0";
  uint64_t seed = 1;
  std::string vocab_from;
  int64_t layers = 0;
  int64_t nextn = -1;
  int64_t n_vocab = 0;
  int threads = 0;
  bool demo = false;
  bool list = false;
};

std::string names_of_shapes() {
  std::string s;
  for (const engine::synth::Shape& sh : engine::synth::shapes()) s += (s.empty() ? "" : ", ") + sh.name;
  return s;
}

std::string names_of_types() {
  std::string s;
  for (const engine::synth::FileType& t : engine::synth::file_types()) {
    s += (s.empty() ? "" : ", ") + std::string(t.name);
  }
  return s;
}

// "tied qk-norm swa-1024/6 moe-128x8/768", "encoder pool-rank cls-head-1" for the list.
std::string notes_of(const engine::synth::Shape& s) {
  std::string n = s.tied ? "tied" : "";
  auto add = [&n](const std::string& w) { n += (n.empty() ? "" : " ") + w; };
  if (s.qkv_bias) add("qkv-bias");
  if (s.qk_norm) add("qk-norm");
  if (s.post_norms) add("post-norms");
  if (s.n_swa > 0) add("swa-" + std::to_string(s.n_swa) + "/" + std::to_string(s.swa_pattern));
  if (s.n_expert > 0) {
    add("moe-" + std::to_string(s.n_expert) + "x" + std::to_string(s.n_expert_used) + "/" + std::to_string(s.n_ff_exp));
  }
  if (s.n_ff_shexp > 0) add("shexp-" + std::to_string(s.n_ff_shexp));
  if (s.full_attn_interval > 0) add("delta-net-" + std::to_string(s.ssm_k_heads) + "x" + std::to_string(s.ssm_v_heads) + "/" + std::to_string(s.ssm_state));
  if (s.n_nextn > 0) add("mtp-" + std::to_string(s.n_nextn));
  if (s.head_dim_swa > 0) add("swa-head-" + std::to_string(s.head_dim_swa));
  if (s.n_embd_per_layer > 0) add("per-layer-" + std::to_string(s.n_embd_per_layer));
  if (s.n_kv_shared > 0) add("kv-shared-" + std::to_string(s.n_kv_shared));
  if (s.final_softcap > 0.0f) add("softcap-" + std::to_string(static_cast<int>(s.final_softcap)));
  if (s.is_encoder()) add("encoder");
  static const char* const kPooling[] = {"none", "mean", "cls", "last", "rank"};
  if (s.pooling_type > 0 && s.pooling_type < 5) add(std::string("pool-") + kPooling[s.pooling_type]);
  if (s.n_cls_out > 0) add("cls-head-" + std::to_string(s.n_cls_out));
  return n;
}

void print_list() {
  std::printf("%-16s %-10s %8s %6s %6s %5s %5s %6s %7s %s\n", "shape", "arch", "vocab", "embd",
              "layers", "heads", "kv", "hdim", "ff", "notes");
  for (const engine::synth::Shape& s : engine::synth::shapes()) {
    std::printf("%-16s %-10s %8lld %6lld %6lld %5lld %5lld %6lld %7lld %s\n", s.name.c_str(),
                s.arch.c_str(), static_cast<long long>(s.n_vocab), static_cast<long long>(s.n_embd),
                static_cast<long long>(s.n_layer), static_cast<long long>(s.n_head),
                static_cast<long long>(s.n_head_kv), static_cast<long long>(s.head_size()),
                static_cast<long long>(s.n_ff), notes_of(s).c_str());
  }
  std::printf("types: %s\n", names_of_types().c_str());
}

int run(const SynthArgs& a) {
  if (a.list) {
    print_list();
    return 0;
  }
  if (a.output.empty()) throw std::runtime_error("--output is required");
  engine::synth::Options o = a.demo ? engine::synth::demo_options() : engine::synth::Options{};
  if (!a.demo) {
    const auto shape = engine::synth::find_shape(a.shape);
    if (!shape) throw std::runtime_error("unknown shape '" + a.shape + "' (known: " + names_of_shapes() + ")");
    const auto type = engine::synth::find_file_type(a.type);
    if (!type) throw std::runtime_error("unknown type '" + a.type + "' (known: " + names_of_types() + ")");
    o.shape = *shape;
    o.type = *type;
    o.seed = a.seed;
    o.vocab_from = a.vocab_from;
    if (a.layers > 0) o.shape = engine::synth::with_layers(o.shape, a.layers);
    if (a.nextn >= 0) o.shape.n_nextn = a.nextn;
    if (a.n_vocab > 0) o.shape.n_vocab = a.n_vocab;
  }
  o.threads = a.threads;
  const auto t0 = std::chrono::steady_clock::now();
  const engine::synth::Result r = engine::synth::write_model(o, a.output);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("wrote %s: %s %s, %lld layers, vocab %lld, %zu tensors, %.3gM parameters, %.1f MiB in %.2f s\n",
              a.output.c_str(), o.shape.name.c_str(), std::string(o.type.name).c_str(),
              static_cast<long long>(o.shape.n_layer), static_cast<long long>(r.n_vocab), r.n_tensors,
              static_cast<double>(r.n_params) / 1e6, static_cast<double>(r.bytes) / (1 << 20), secs);
  return 0;
}

}  // namespace

Command add_synth(CLI::App& app) {
  auto a = std::make_shared<SynthArgs>();
  app.add_option("-o,--output", a->output, "Where to write the GGUF file");
  app.add_option("--shape", a->shape, "Model shape: " + names_of_shapes())->capture_default_str();
  app.add_option("--type", a->type, "Quantization: " + names_of_types())->capture_default_str();
  app.add_option("--seed", a->seed, "Seed of the random weights")->capture_default_str();
  app.add_option("--vocab-from", a->vocab_from,
                 "Copy the tokenizer (all tokenizer.* keys) from this GGUF file instead of the "
                 "built-in vocabulary (byte-level BPE; WordPiece for encoders)")
      ->check(CLI::ExistingFile);
  app.add_option("--layers", a->layers,
                 "Override the shape's layer count (gemma4: its shared-KV layers shrink in proportion)")
      ->check(CLI::PositiveNumber);
  app.add_option("--nextn", a->nextn,
                 "NextN / MTP blocks after the stack (qwen3.5 shapes: 1, as their converted GGUFs; 0 = none)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--n-vocab", a->n_vocab, "Override the shape's vocabulary size (filler tokens pad it)")
      ->check(CLI::PositiveNumber);
  app.add_option("--threads", a->threads, "Threads (default: all cores)")->check(CLI::NonNegativeNumber);
  app.add_flag("--demo", a->demo, "The bundled demo model (shape demo, Q8_0, fixed seed)");
  app.add_flag("--list", a->list, "List the shapes and types, then exit");
  return [a] { return run(*a); };
}

}  // namespace ggufd
