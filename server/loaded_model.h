// One model in memory with everything its requests need, and how it is loaded.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "engine/model/model.h"
#include "engine/runtime/compute_share.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/chat_template.h"
#include "engine/text/grammar/grammar_cache.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "server/api/app.h"
#include "server/service.h"

namespace server {

// What every model's App shares: the server's pools, stores and request settings.
struct SharedParts {
  WorkPool* work = nullptr;
  RemoteMedia* media = nullptr;  // null: remote images are not fetched
  ResponseStore* responses = nullptr;
  std::shared_ptr<engine::ComputeShare> compute;  // null: each model its own threads
  ServeSettings settings;                         // the server-wide fields (limits, timeouts, build)
};

// The weights, tokenizer, chat template, scheduler and grammar cache of one model, and the App
// its handlers read (app.ready is true once constructed).
// Ownership: owns all of it; the scheduler (and its thread) goes first on destruction.
// Thread-safety: immutable after load except what App documents (the scheduler, metrics).
struct LoadedModel {
  std::optional<engine::Model> model;
  std::optional<engine::Model> draft_model;  // speculative decoding by a draft model
  std::optional<engine::Tokenizer> tokenizer;
  std::optional<engine::ChatTemplate> chat_template;
  std::unique_ptr<engine::grammar::GrammarCache> grammars;
  std::unique_ptr<engine::Scheduler> scheduler;  // after what it borrows: destroyed first
  App app;
  uint64_t memory_bytes = 0;  // weights (both models) + KV cache + recurrent states: what --models-ram counts

  ~LoadedModel();
};

// Loads the model of `o` as `id`. `progress` (may be empty) sees the weights being paged in.
// Throws std::runtime_error (or what the loader throws) with the cause.
std::unique_ptr<LoadedModel> load_model(const ModelOptions& o, const std::string& id, const SharedParts& shared,
                                        const std::function<void(uint64_t done, uint64_t total)>& progress);

// On a terminal, how far paging in a large model's weights got (a progress callback of load_model).
void show_load_progress(uint64_t done, uint64_t total);

// The id a model file gets without an alias: its file name.
std::string default_model_id(const std::string& path);

}  // namespace server
