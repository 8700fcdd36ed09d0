// The scheduler's private state, shared by scheduler.cpp (the step loop: admission, batches,
// passes) and scheduler_output.cpp (what each logits row becomes). Not an API.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "engine/model/batch.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/sequence.h"
#include "engine/runtime/speculation.h"
#include "engine/runtime/thread_annotations.h"
#include "engine/runtime/throughput.h"
#include "engine/vision/vit.h"

namespace engine {

class DraftModel;

namespace sched {

// One of the n_slots sequences the evaluator caches. An idle slot keeps its cached tokens so
// that the next request with the same prefix can skip them.
struct Slot {
  int index = 0;
  std::vector<int32_t> cached;  // tokens whose K/V the evaluator holds, in position order (not
                                // counting this step's drafts until they are accepted)
  size_t published = 0;         // complete blocks of `cached` handed to the evaluator to share
  uint64_t last_used = 0;       // for least-recently-used slot choice
  std::optional<Sequence> seq;  // the request being served; empty: idle
  std::vector<int32_t> draft;   // this step's drafts, in the batch right after the next token
  size_t accepted = 0;          // this step: drafts the request sampled too
  bool rejected = false;        // this step: a draft was not sampled, the rows after it are void
  int32_t draft_cap = 0;        // drafts to ask for at most: adapts to the request's acceptance
  DraftGate gate;               // SchedulerOptions::spec_auto: whether the request drafts at all

  bool active() const { return seq.has_value(); }
  SeqId id() const { return index; }
};

// A logits row of the batch: its slot and, for a scored prompt row (prompt_logprobs), the prompt
// position it was computed at, whose next prompt token it scores; -1 for a row to sample from.
// A row to sample from is link `link` of the slot's chain: 0 the next token's row, j the row of
// draft j - 1. A hidden-state row (embeddings): its slot and prompt position.
struct Output {
  Slot* slot;
  int64_t prompt_pos;
  size_t link = 0;
};

}  // namespace sched

struct Scheduler::Impl {
  using Slot = sched::Slot;
  using Output = sched::Output;

  Impl(std::unique_ptr<BatchEvaluator> owned_, BatchEvaluator& ev, const Tokenizer& t, SchedulerOptions o,
       std::unique_ptr<DraftSource> owned_drafter_, DraftSource* drafter_);
  ~Impl();

  void loop();
  void step();
  void admit();
  void start(Slot& slot, GenerationRequest&& req);
  void check_cancelled(bool cancel_everything);
  void build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill, std::vector<Output>& outputs,
                   std::vector<Output>& hidden);
  // Drafts for the generating slots (whose next token is in `cached` already), into Slot::draft.
  void propose_drafts(const std::vector<Slot*>& generating);
  // Drafts a generating slot could use at most: max_tokens and the context leave room for them.
  int32_t draft_room(const Slot& s) const;
  void emit_outputs(const std::vector<Output>& outputs);
  void emit_output(const Output& out, const float* logits);
  void score_prompt_token(Slot& slot, int64_t pos, const float* logits);
  void emit_token(Slot& slot, const float* logits);
  // After row `link` of a slot with drafts: whether the request sampled that draft too.
  void check_draft(Slot& slot, size_t link);
  // After the step's rows: the accepted drafts stay cached, the rest are dropped from the cache.
  void settle_drafts();
  void finish_embedding(Slot& slot);
  void publish(Slot& slot);
  // How many prompt tokens of slot s go into this batch, given the budget left.
  int64_t prefill_count(const Slot& s, int64_t budget, bool batch_empty) const;
  // Images (scheduler_images.cpp): throws std::invalid_argument for a request's bad images.
  void check_images(const GenerationRequest& r) const;
  int64_t image_cut(const Slot& s, int64_t done, int64_t n, int64_t budget) const;
  void advance_images();
  void add_prompt_entry(Slot& s, int64_t i, bool logits, bool pooled);
  // The batch's last entry, position i of slot s, gets its M-RoPE positions when the projector
  // places images so (qwen-vl) and s's prompt has one at or before i.
  void place_mrope(const Slot& s, int64_t i);
  void finish(Slot& slot, FinishReason reason, const std::string& error = {}, bool flush = true);
  // The slot's request has ended (its sequence already reset): the slot is free for the next
  // request and holds nothing the running requests use.
  void vacate(Slot& slot);
  void fail(Slot& slot, const std::string& error);
  void fail_all(const std::string& error);
  bool has_work() const GGUFD_REQUIRES(mu) {
    return stopping || cancel_requested || !queue.empty() || active_count > 0;
  }
  SubmitStatus admission(int64_t n_requests) const GGUFD_REQUIRES(mu);
  // Adds the step's draft counts so far to `spec`: at the end of a step, and before a request's
  // end reaches its sink (whoever reads stats() after its last request ended sees all of them).
  void publish_spec_counts() GGUFD_REQUIRES(mu);

  std::unique_ptr<BatchEvaluator> owned;  // with a Model: the ModelEvaluator
  BatchEvaluator& eval;
  const Tokenizer& tokenizer;
  const SchedulerOptions opt;
  std::unique_ptr<DraftSource> owned_drafter;  // the n-gram drafter or the draft model
  DraftSource* drafter;                        // null: no speculation

  // The loop thread's own.
  Batch batch;
  std::vector<Slot> slots;
  uint64_t tick = 0;
  int32_t prefix_block = 0;  // tokens per block the evaluator shares; 0: none
  std::vector<DraftSlot> draft_slots;  // propose_drafts()'s
  std::unique_ptr<VisionEncoder> vision_encoder;  // made at the first image (SchedulerOptions::vision)
  struct Encoding {
    int slot = -1;     // the slot whose image the encoder holds; -1: none
    size_t image = 0;  // which of its request's images
  } encoding;
  int64_t step_generated = 0;          // tokens sampled in this step
  int64_t step_drafts = 0, step_accepted = 0, step_paused = 0;

  // Shared with submitters and stats readers.
  mutable Mutex mu;
  std::condition_variable_any cv;  // wakes the loop: work queued, cancel_all(), stopping
  std::deque<GenerationRequest> queue GGUFD_GUARDED_BY(mu);
  bool stopping GGUFD_GUARDED_BY(mu) = false;
  bool draining GGUFD_GUARDED_BY(mu) = false;
  bool cancel_requested GGUFD_GUARDED_BY(mu) = false;
  int64_t active_count GGUFD_GUARDED_BY(mu) = 0;
  BatchEvaluator::CacheUse cache_use GGUFD_GUARDED_BY(mu);
  // Per slot, the positions its request holds (0 when idle), as of the last step's end: the KV
  // cache the running requests use, whatever idle slots and cached prefix blocks keep beside it.
  std::vector<int64_t> held_positions GGUFD_GUARDED_BY(mu);
  Throughput throughput GGUFD_GUARDED_BY(mu);
  SpecStats spec GGUFD_GUARDED_BY(mu);

  std::thread thread;
};

}  // namespace engine
