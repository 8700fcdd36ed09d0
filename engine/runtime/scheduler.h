// Continuous batching: many generation requests share one model, one forward pass per step.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/model/kv_cache.h"
#include "engine/model/model.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/speculation.h"

namespace engine::grammar {
class CompiledGrammar;
}

namespace engine {

struct EncoderInput;
class Model;
class Tokenizer;
class VisionModel;

// Why a request ended: an end-of-generation token or a stop string; max_tokens or the context;
// its client went away (or everything was cancelled); its deadline passed; a failure.
enum class FinishReason { kStop, kLength, kCancelled, kTimeout, kError };
const char* finish_reason_name(FinishReason r);  // "stop", "length", "cancelled", "timeout", "error"

struct Usage {
  int64_t prompt_tokens = 0;
  int64_t completion_tokens = 0;
  int64_t cached_tokens = 0;  // prompt tokens reused from the slot's cache or shared blocks (not recomputed)
  std::string stop_string;    // kStop by a stop string: the one that matched (else empty)
};

// One generated token, with the text it completes; or, with `prompt` set, one scored prompt token
// (GenerationRequest::prompt_logprobs: the token, its logprob given the tokens before it and the
// alternatives; no text). Scored prompt tokens come first, for prompt positions 1, 2, ... in order.
struct TokenEvent {
  int32_t token = -1;
  bool prompt = false;
  std::string text;                // final text to append: whole UTF-8 characters, stop strings
                                   // held back until they can't match (may be empty)
  float logprob = 0;
  std::vector<TokenLogprob> top;   // SamplingParams::n_logprobs alternatives
};

// Where a request's output goes: the one interface between the scheduler and the HTTP side.
// on_token/on_finish run on the scheduler's thread and must return quickly without blocking
// (queue and notify). cancelled() is polled once per step, from the same thread.
// Exactly one on_finish() ends every accepted request; `error` says what failed (kError).
class TokenSink {
 public:
  virtual ~TokenSink() = default;
  virtual void on_token(TokenEvent&& event) = 0;
  virtual void on_finish(FinishReason reason, const Usage& usage, const std::string& error) = 0;
  virtual bool cancelled() const = 0;
  // Embedding requests (GenerationRequest::pooling): the pooled result, once, just before
  // on_finish(kStop). Sinks of generation requests never get it.
  virtual void on_embedding(std::vector<float>&& pooled) { (void)pooled; }
};

// An image in a prompt (engine/vision): its n_tokens rows stand at prompt[at, at + n_tokens), where
// the prompt holds image_token_id(hash) for each (ids past the vocabulary: two prompts share those
// positions' cache only when they hold the same image). The scheduler encodes `input` (the
// encoder's input, engine::fit_image's; n_tokens = hparams.n_tokens(its width, height)) when the
// prefill reaches the image, and puts the whole image into one batch.
struct PromptImage {
  int64_t at = 0;
  int64_t n_tokens = 0;
  std::shared_ptr<const EncoderInput> input;
};
// The id of an image's positions in a prompt: n_vocab + (hash mod the ids left up to INT32_MAX).
int32_t image_token_id(uint64_t hash, int64_t n_vocab);

struct GenerationRequest {
  std::vector<int32_t> prompt;       // token ids, BOS included when the model wants it
  // Images in the prompt, in order, not overlapping (needs SchedulerOptions::vision). A request
  // with images is never drafted for and cannot score its prompt (prompt_logprobs).
  std::vector<PromptImage> images;
  SamplingParams sampling;
  int64_t max_tokens = -1;           // -1: until the context is full; 0: no token is generated
  bool prompt_logprobs = false;      // score every prompt token after the first (sampling.n_logprobs
                                     // alternatives each): the whole prompt is evaluated again
  bool reuse_prefix = true;          // start from the slot's cached prefix or shared blocks; false
                                     // (llama-server's cache_prompt): the whole prompt is evaluated
  std::vector<std::string> stop;     // stop strings; the matched text is not returned
  bool ignore_eos = false;
  // Constrained decoding: only tokens the grammar allows are sampled (logprobs then describe the
  // constrained distribution), the end only when the text is complete, and the request stops as
  // soon as nothing else can follow. Null: unconstrained (and no cost).
  std::shared_ptr<const grammar::CompiledGrammar> grammar;
  // A lazy grammar (tool calls under tool_choice "auto"): with triggers, the output is free until
  // it contains one of them; from there on (the trigger's text is the grammar's first text) the
  // grammar applies. Output that does not fit it after the trigger leaves the rest free.
  std::vector<std::string> grammar_triggers;
  // Control tokens whose text goes into the output (sorted ids): tool-call markers such as
  // [TOOL_CALLS] or <|python_tag|>, which the response parser must see. Others render empty.
  std::vector<int32_t> shown_tokens;
  // Embeddings: with a pooling type, the prompt is only evaluated (no token is generated; the
  // sampling fields are ignored) and its final hidden states pooled; the sink's on_embedding()
  // gets the pooled vector, not normalized -- for rank pooling, the classification head's
  // outputs. A prompt may then fill the whole context.
  PoolingType pooling = PoolingType::kNone;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  std::shared_ptr<TokenSink> sink;
};

struct SchedulerOptions {
  int n_slots = 4;                   // sequences generated concurrently
  int64_t n_ctx = 4096;              // context length of each slot (prompt + generated)
  int64_t max_queue = 64;            // requests waiting for a slot; beyond: kQueueFull
  int64_t prefill_chunk = 512;       // prompt tokens per step, so running streams never stall
  int n_threads = 0;                 // compute threads; 0 = physical cores
  // Threads shared with other models' schedulers, used in turns (one per step); null: its own
  // pool of n_threads.
  std::shared_ptr<ComputeShare> compute;
  KvType kv_type = KvType::kF16;
  // Prompt prefixes shared by all slots (PrefixCache): the KV cache gets this many bytes more for
  // cached blocks. 0: no sharing (each slot reuses its own prefix only). Models whose
  // sliding-window layers keep a ring never share (ModelEvaluator).
  int64_t prefix_cache_bytes = int64_t{256} << 20;
  // The prefix cache on disk as well (dir empty: memory only); see PrefixStore.
  PrefixStoreOptions prefix_store;
  // Speculative decoding (speculation.h): each generating slot's next token is verified together
  // with up to draft_max drafts (1..KvCache::kWindowSlack, so that a sliding-window ring can
  // always drop the rejected ones); a proposal shorter than draft_min is not verified. kDraft
  // needs a draft model (or, for tests, a DraftSource); kMtp a model with NextN layers.
  SpecMode spec = SpecMode::kNone;
  int draft_max = 16;
  int draft_min = 0;
  // --spec auto (the server sets it when auto picks mtp): each slot drafts only while its drafts
  // pay for themselves, by draft_gate's rule (DraftGate, speculation.h), and decodes plainly
  // otherwise. False: every slot drafts whatever its acceptance (an explicit --spec).
  bool spec_auto = false;
  DraftGateParams draft_gate;
  // The vision projector of the model (an mmproj file): requests may then hold images. Its
  // encoder runs on the same threads, in the step whose batch first reaches an image.
  std::shared_ptr<const VisionModel> vision;
};

// kTooLarge: more requests in one submit_all() than the scheduler can ever hold (capacity()).
enum class SubmitStatus { kAccepted, kQueueFull, kDraining, kPromptTooLong, kEmptyPrompt, kTooLarge };

struct SchedulerStats {
  int64_t queued = 0;
  int64_t active_slots = 0;
  int64_t total_slots = 0;
  int64_t kv_cells_used = 0;
  int64_t kv_cells_total = 0;
  int64_t kv_positions_running = 0;  // positions the running requests hold (a shared prefix once per request)
  size_t kv_bytes = 0;  // memory of the whole KV cache
  int64_t kv_window_cells = 0;  // cells of the sliding-window layers' ring (0: none)
  size_t kv_bytes_without_window = 0;  // the cache's memory if every layer kept every position
  size_t recurrent_bytes = 0;      // hybrid stacks: the slots' Gated DeltaNet states (0: none)
  size_t recurrent_slot_bytes = 0; //   one slot's
  double generation_tokens_per_second = 0;  // over the last few seconds
  double prompt_tokens_per_second = 0;
  PrefixCacheStats prefix_cache;  // block_tokens 0: prefixes are not shared
  SpecStats spec;                 // mode kNone: nothing is drafted
};

// Runs the step loop on its own thread: admit queued requests into free slots (reusing the longest
// cached prompt prefix: the slot's own, or blocks any slot computed when the evaluator shares
// prefixes; what a slot computes is shared as soon as a block of it is complete), build one batch of every running slot's next token plus prompt chunks of
// new slots, have the evaluator run it, sample, detokenize, match stop strings, and emit through
// each request's sink. Slot i is the evaluator's sequence i.
//
// A request's tokens depend only on its prompt, sampling params and seed: never on what else runs.
// No exception leaves the step loop: a failure while serving one request (its sampler, its sink)
// ends that request with FinishReason::kError and the others go on.
// Embedding requests share the slots, the queue and the passes with generation; with an encoder
// model (bert) they are all there is, each prompt goes into one pass whole, and slots cost no
// cache (serve them with many).
// With speculative decoding (SchedulerOptions::spec) a generating slot's step may emit several
// tokens: its drafts are verified in the same batch as everything else, and the output is what
// plain decoding gives (speculation.h). Embeddings and prompt scoring never draft.
// Ownership: borrows the Tokenizer, the Model (and draft model) or evaluator (and draft source);
// they must outlive it. With a Model it owns a ModelEvaluator (the KV cache and compute threads)
// and the drafter (a draft model's cache runs on the same threads). Owns its thread, which the
// destructor stops after finishing every request with FinishReason::kCancelled.
// Thread-safety: submit(), drain(), stats() and idle() may be called from any thread.
class Scheduler {
 public:
  // draft_model: with spec kDraft, a small model of the same vocabulary (DraftModel), else null.
  // Throws std::invalid_argument for speculation settings out of range, a missing or unused draft
  // model, one whose vocabulary differs from the target's, or kMtp for a model without NextN
  // layers.
  Scheduler(const Model& model, const Tokenizer& tokenizer, SchedulerOptions options,
            const Model* draft_model = nullptr);
  // On any evaluator (tests: a deterministic fake, no model); `drafter` plays the draft model of
  // spec kDraft (null otherwise).
  Scheduler(BatchEvaluator& evaluator, const Tokenizer& tokenizer, SchedulerOptions options,
            DraftSource* drafter = nullptr);
  ~Scheduler();
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // Queues a request; when this returns kAccepted the sink will get exactly one on_finish().
  SubmitStatus submit(GenerationRequest request);
  // Queues all the requests or none (the choices of one HTTP request). TooLarge when there are
  // more than capacity(); kQueueFull when they do not fit now.
  SubmitStatus submit_all(std::vector<GenerationRequest> requests);
  // Requests running and waiting at most: n_slots + max_queue.
  int64_t capacity() const;
  // Stops admitting (submit returns kDraining); running and queued requests continue.
  void drain();
  // Finishes every running and queued request with kCancelled at the next step.
  void cancel_all();
  // No request running or queued.
  bool idle() const;
  SchedulerStats stats() const;
  const SchedulerOptions& options() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace engine
