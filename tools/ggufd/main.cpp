// ggufd: serve GGUF models over an OpenAI-compatible HTTP API. This file only dispatches.
#include <cstdio>
#include <cstring>
#include <exception>

#include "tools/ggufd/commands.h"

int main(int argc, char** argv) {
  // llama-server's -md (--model-draft): CLI11 takes single-letter short options only.
  static char model_draft[] = "--model-draft";
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "-md") == 0) argv[i] = model_draft;
  }
  CLI::App app{"ggufd: serve LLMs stored as GGUF files, on CPUs"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "ggufd " GGUFD_VERSION);
  struct Entry {
    CLI::App* sub;
    ggufd::Command run;
  };
  std::vector<Entry> commands;
  auto add = [&](const char* name, const char* help, auto adder) {
    CLI::App* sub = app.add_subcommand(name, help);
    commands.push_back({sub, adder(*sub)});
  };
  add("serve", "Serve the model over an OpenAI-compatible HTTP API", ggufd::add_serve);
  add("health", "Exit 0 when a running server's /health answers 200 (container health checks)",
      ggufd::add_health);
  add("template", "Render a chat (JSON on stdin) with a model's chat template", ggufd::add_template);
  add("inspect", "Show a GGUF file's header, metadata, tensors and totals", ggufd::add_inspect);
  add("run", "Generate a continuation of a prompt (streamed to stdout)", ggufd::add_run);
  add("logits", "Top-K logits at every position of a token sequence, as JSON", ggufd::add_logits);
  add("tokenize", "Text on stdin -> token ids (the model's tokenizer)", ggufd::add_tokenize);
  add("detokenize", "Token ids on stdin -> text", ggufd::add_detokenize);
  add("bench", "Prompt (ppN) and generation (tgN) tokens/s, comparable with llama-bench",
      ggufd::add_bench);
  add("pull", "Download a model from the Hugging Face Hub (or a mirror, or an https URL) into the cache",
      ggufd::add_pull);
  add("list", "List the models in the download cache", ggufd::add_list);
  add("rm", "Remove a model from the download cache", ggufd::add_rm);
  add("synth", "Write a random-weight model in a real model's shape (benchmarks, demo)",
      ggufd::add_synth);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (const Entry& c : commands) {
    if (c.sub->parsed()) {
      try {
        return c.run();
      } catch (const std::exception& e) {
        std::fprintf(stderr, "ggufd %s: %s\n", c.sub->get_name().c_str(), e.what());
        return 1;
      }
    }
  }
  return 2;
}
