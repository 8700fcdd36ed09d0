// The step loop: admit -> build one batch -> evaluate -> sample -> emit. See scheduler.h.
#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <optional>
#include <stdexcept>
#include <thread>

#include "engine/model/arch.h"
#include "engine/model/batch.h"
#include "engine/model/pooling.h"
#include "engine/runtime/sequence.h"
#include "engine/runtime/thread_annotations.h"
#include "engine/runtime/throughput.h"
#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

using Clock = std::chrono::steady_clock;

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kTimeout: return "timeout";
    case FinishReason::kError: return "error";
  }
  return "error";
}

namespace {

// One of the n_slots sequences the evaluator caches. An idle slot keeps its cached tokens so
// that the next request with the same prefix can skip them.
struct Slot {
  int index = 0;
  std::vector<int32_t> cached;  // tokens whose K/V the evaluator holds, in position order
  size_t published = 0;         // complete blocks of `cached` handed to the evaluator to share
  uint64_t last_used = 0;       // for least-recently-used slot choice
  std::optional<Sequence> seq;  // the request being served; empty: idle

  bool active() const { return seq.has_value(); }
  SeqId id() const { return index; }
};

// A logits row of the batch: its slot and, for a scored prompt row (prompt_logprobs), the prompt
// position it was computed at, whose next prompt token it scores; -1 for a row to sample from.
// A hidden-state row (embeddings): its slot and prompt position.
struct Output {
  Slot* slot;
  int64_t prompt_pos;
};

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

struct Scheduler::Impl {
  Impl(std::unique_ptr<BatchEvaluator> owned_, BatchEvaluator& ev, const Tokenizer& t, SchedulerOptions o)
      : owned(std::move(owned_)), eval(ev), tokenizer(t), opt(o), slots(static_cast<size_t>(o.n_slots)) {
    for (size_t i = 0; i < slots.size(); ++i) slots[i].index = static_cast<int>(i);
    cache_use = eval.cache_use();
    prefix_block = eval.prefix_block();
    thread = std::thread([this] { loop(); });
  }

  ~Impl() {
    {
      MutexLock lock(mu);
      stopping = true;
    }
    cv.notify_all();
    thread.join();
  }

  void loop();
  void step();
  void admit();
  void start(Slot& slot, GenerationRequest&& req);
  void check_cancelled(bool cancel_everything);
  void build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill, std::vector<Output>& outputs,
                   std::vector<Output>& hidden);
  void emit_output(const Output& out, const float* logits);
  void score_prompt_token(Slot& slot, int64_t pos, const float* logits);
  void emit_token(Slot& slot, const float* logits);
  void finish_embedding(Slot& slot);
  void publish(Slot& slot);
  // How many prompt tokens of slot s go into this batch, given the budget left.
  int64_t prefill_count(const Slot& s, int64_t budget, bool batch_empty) const;
  void finish(Slot& slot, FinishReason reason, const std::string& error = {}, bool flush = true);
  void fail(Slot& slot, const std::string& error);
  void fail_all(const std::string& error);
  bool has_work() const GGUFD_REQUIRES(mu) {
    return stopping || cancel_requested || !queue.empty() || active_count > 0;
  }
  SubmitStatus admission(int64_t n_requests) const GGUFD_REQUIRES(mu);

  std::unique_ptr<BatchEvaluator> owned;  // with a Model: the ModelEvaluator
  BatchEvaluator& eval;
  const Tokenizer& tokenizer;
  const SchedulerOptions opt;

  // The loop thread's own.
  Batch batch;
  std::vector<Slot> slots;
  uint64_t tick = 0;
  int32_t prefix_block = 0;  // tokens per block the evaluator shares; 0: none

  // Shared with submitters and stats readers.
  mutable Mutex mu;
  std::condition_variable_any cv;  // wakes the loop: work queued, cancel_all(), stopping
  std::deque<GenerationRequest> queue GGUFD_GUARDED_BY(mu);
  bool stopping GGUFD_GUARDED_BY(mu) = false;
  bool draining GGUFD_GUARDED_BY(mu) = false;
  bool cancel_requested GGUFD_GUARDED_BY(mu) = false;
  int64_t active_count GGUFD_GUARDED_BY(mu) = 0;
  BatchEvaluator::CacheUse cache_use GGUFD_GUARDED_BY(mu);
  Throughput throughput GGUFD_GUARDED_BY(mu);

  std::thread thread;
};

void Scheduler::Impl::loop() {
  for (;;) {
    bool cancel_everything = false;
    {
      MutexLock lock(mu);
      while (!has_work()) cv.wait(mu);
      if (stopping) break;
      cancel_everything = cancel_requested;
      cancel_requested = false;
    }
    // Nothing may end this thread: an exception no request handler caught fails what is running.
    try {
      check_cancelled(cancel_everything);
      admit();
      step();
    } catch (const std::exception& e) {
      fail_all(e.what());
    } catch (...) {
      fail_all("unknown error in the scheduler");
    }
  }
  check_cancelled(true);
}

// Ends one request with an error, dropping its cached positions (their state is unknown).
void Scheduler::Impl::fail(Slot& slot, const std::string& error) {
  eval.truncate(slot.id(), 0);
  slot.cached.clear();
  finish(slot, FinishReason::kError, error);
}

void Scheduler::Impl::fail_all(const std::string& error) {
  for (Slot& s : slots) {
    if (s.active()) fail(s, error);
  }
}

// Finishes requests whose client went away, whose deadline passed, or all of them.
void Scheduler::Impl::check_cancelled(bool cancel_everything) {
  const auto now = Clock::now();
  for (Slot& s : slots) {
    if (!s.active()) continue;
    if (cancel_everything || s.seq->req.sink->cancelled()) {
      finish(s, FinishReason::kCancelled);
    } else if (now > s.seq->req.deadline) {
      finish(s, FinishReason::kTimeout, "request deadline exceeded");
    }
  }
  std::deque<GenerationRequest> dropped;
  {
    MutexLock lock(mu);
    for (auto it = queue.begin(); it != queue.end();) {
      if (cancel_everything || it->sink->cancelled() || now > it->deadline) {
        dropped.push_back(std::move(*it));
        it = queue.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (GenerationRequest& r : dropped) {
    Usage u;
    u.prompt_tokens = static_cast<int64_t>(r.prompt.size());
    const bool timed_out = !cancel_everything && !r.sink->cancelled() && now > r.deadline;
    try {
      r.sink->on_finish(timed_out ? FinishReason::kTimeout : FinishReason::kCancelled, u,
                        timed_out ? "request deadline exceeded" : "");
    } catch (...) {  // a sink that cannot take its end has nobody left to tell
    }
  }
}

// Moves queued requests into idle slots, preferring the slot whose cache shares the longest
// prefix with the prompt, then the least recently used one.
void Scheduler::Impl::admit() {
  for (;;) {
    Slot* best = nullptr;
    size_t best_prefix = 0;
    GenerationRequest req;
    {
      MutexLock lock(mu);
      if (queue.empty()) return;
      for (Slot& s : slots) {
        if (s.active()) continue;
        const size_t prefix = common_prefix(s.cached, queue.front().prompt);
        if (best == nullptr || prefix > best_prefix || (prefix == best_prefix && s.last_used < best->last_used)) {
          best = &s;
          best_prefix = prefix;
        }
      }
      if (best == nullptr) return;
      req = std::move(queue.front());
      queue.pop_front();
      ++active_count;
    }
    start(*best, std::move(req));
  }
}

void Scheduler::Impl::start(Slot& slot, GenerationRequest&& req) {
  // Keep the common prefix, but always evaluate the last prompt token again: its logits are
  // what the first generated token is sampled from. Scoring the prompt needs every position's
  // logits, so nothing is kept then.
  // The evaluator may keep less than asked (a sliding-window ring keeps only the last positions).
  // Shared blocks replace what the slot kept when they cover more of the prompt.
  const bool fresh = req.prompt_logprobs || req.pooling != PoolingType::kNone;  // every position's output needed
  const size_t want = fresh ? 0 : std::min(common_prefix(slot.cached, req.prompt), req.prompt.size() - 1);
  auto keep = static_cast<size_t>(eval.truncate(slot.id(), static_cast<int32_t>(want)));
  if (!fresh) {
    try {
      const int32_t shared = eval.share_prefix(slot.id(), req.prompt, static_cast<int32_t>(keep),
                                               static_cast<int32_t>(req.prompt.size() - 1));
      if (shared > 0) keep = static_cast<size_t>(shared);
    } catch (const std::exception&) {  // (a bug in the cache's bookkeeping) compute it all instead
      keep = static_cast<size_t>(eval.truncate(slot.id(), 0));
    }
  }
  slot.cached.assign(req.prompt.begin(), req.prompt.begin() + static_cast<std::ptrdiff_t>(keep));
  slot.published = 0;
  const std::shared_ptr<TokenSink> sink = req.sink;  // the request moves into the sequence
  Usage usage;
  usage.prompt_tokens = static_cast<int64_t>(req.prompt.size());
  try {
    if (eval.encoder() && req.pooling == PoolingType::kNone) {
      throw std::invalid_argument("an encoder model gives embeddings only; it cannot generate text");
    }
    if (req.pooling != PoolingType::kNone && eval.n_embd() == 0) {
      throw std::invalid_argument("this model gives no embeddings");
    }
    const auto n_prompt = static_cast<int64_t>(req.prompt.size());
    slot.seq.emplace(std::move(req), tokenizer, keep);
    if (slot.seq->embedding()) slot.seq->pooler.emplace(slot.seq->req.pooling, eval.rank_pools_last(), eval.n_embd(), n_prompt);
  } catch (const std::exception& e) {  // parameters the sampler refuses: this request only ends
    slot.seq.reset();
    try {
      sink->on_finish(FinishReason::kError, usage, e.what());
    } catch (...) {
    }
    slot.last_used = ++tick;
    MutexLock lock(mu);
    --active_count;
    return;
  }
  // Nothing to generate and nothing to score: done before any work.
  if (slot.seq->req.max_tokens == 0 && !slot.seq->req.prompt_logprobs && !slot.seq->embedding()) {
    finish(slot, FinishReason::kLength);
  }
}

// Decode tokens of generating slots first, then prompt chunks of prefilling slots within the
// prefill budget. `outputs` gets the slot of each logits row in order, `hidden` of each hidden-state
// row (embeddings); `prefill` the slots that advanced their prompt, and by how many tokens.
void Scheduler::Impl::build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill, std::vector<Output>& outputs,
                                  std::vector<Output>& hidden) {
  batch.clear();
  for (Slot& s : slots) {
    if (!s.active() || !s.seq->generating) continue;
    batch.add(s.seq->next_token, s.id(), static_cast<int32_t>(s.cached.size()), true);
    s.cached.push_back(s.seq->next_token);
    outputs.push_back({&s, -1});
  }
  int64_t budget = opt.prefill_chunk;
  for (Slot& s : slots) {
    if (!s.active() || s.seq->generating || budget <= 0) continue;
    const GenerationRequest& req = s.seq->req;
    const int64_t done = static_cast<int64_t>(s.cached.size());
    const int64_t n = prefill_count(s, budget, batch.size() == 0);
    if (n == 0) continue;
    for (int64_t i = done; i < done + n; ++i) {
      const bool last = i + 1 == static_cast<int64_t>(req.prompt.size());
      const bool pooled = s.seq->pooler && s.seq->pooler->wants(i);
      const bool logits = !s.seq->embedding() && (last || req.prompt_logprobs);
      batch.add(req.prompt[i], s.id(), static_cast<int32_t>(i), logits, pooled);
      s.cached.push_back(req.prompt[i]);
      if (logits) outputs.push_back({&s, last ? -1 : i});
      if (pooled) hidden.push_back({&s, i});
    }
    prefill.emplace_back(&s, n);
    budget -= n;
  }
}

// A chunk of the prompt within the budget; an encoder's prompt goes in whole or waits for the next
// batch (a batch of its own when it is longer than the budget).
int64_t Scheduler::Impl::prefill_count(const Slot& s, int64_t budget, bool batch_empty) const {
  const int64_t left = static_cast<int64_t>(s.seq->req.prompt.size() - s.cached.size());
  if (!eval.encoder()) return std::min(budget, left);
  return left <= budget || batch_empty ? left : 0;
}

void Scheduler::Impl::step() {
  std::vector<std::pair<Slot*, int64_t>> prefill;
  std::vector<Output> outputs, hidden;
  build_batch(prefill, outputs, hidden);
  if (batch.size() == 0) return;
  try {
    eval.eval(batch);
  } catch (const std::exception& e) {
    // Nothing a request did can cause this (prompts are validated at submit); fail the slots of
    // this batch and drop their cache entries rather than the whole server.
    fail_all(e.what());
    return;
  }
  if (prefix_block > 0) {  // before anything may end a slot: every slot of the batch is running
    for (Slot& s : slots) {
      if (s.active()) publish(s);
    }
  }
  for (size_t i = 0; i < hidden.size(); ++i) hidden[i].slot->seq->pooler->add(hidden[i].prompt_pos, eval.hidden(static_cast<int64_t>(i)));
  int64_t n_prompt = 0;
  for (auto& [slot, n] : prefill) {
    n_prompt += n;
    if (slot->cached.size() != slot->seq->req.prompt.size()) continue;
    if (slot->seq->embedding()) {
      finish_embedding(*slot);
    } else {
      slot->seq->generating = true;
    }
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].slot->active()) continue;  // ended by a failure on an earlier row
    try {
      emit_output(outputs[i], eval.logits(static_cast<int64_t>(i)));
    } catch (const std::exception& e) {
      fail(*outputs[i].slot, e.what());
    }
  }
  const BatchEvaluator::CacheUse use = eval.cache_use();
  MutexLock lock(mu);
  throughput.add(Clock::now(), static_cast<int64_t>(outputs.size()), n_prompt);
  cache_use = use;
}

// The slot's K/V of `cached` are all computed: a block of them completed since the last time is
// shared (with the blocks before it, which the evaluator checks again).
void Scheduler::Impl::publish(Slot& slot) {
  const size_t blocks = slot.cached.size() / static_cast<size_t>(prefix_block);
  if (blocks <= slot.published) return;
  eval.publish_prefix(slot.id(), slot.cached);
  slot.published = blocks;
}

void Scheduler::Impl::emit_output(const Output& out, const float* logits) {
  Slot& slot = *out.slot;
  if (out.prompt_pos >= 0) {
    score_prompt_token(slot, out.prompt_pos, logits);
  } else if (slot.seq->req.max_tokens == 0) {
    finish(slot, FinishReason::kLength);  // the prompt was only scored
  } else {
    emit_token(slot, logits);
  }
}

// The logits at prompt position `pos` score prompt token pos + 1.
void Scheduler::Impl::score_prompt_token(Slot& slot, int64_t pos, const float* logits) {
  const GenerationRequest& req = slot.seq->req;
  const int32_t next = req.prompt[static_cast<size_t>(pos + 1)];
  const Sampled s = logprobs_of(logits, eval.n_vocab(), next, req.sampling.n_logprobs);
  TokenEvent ev;
  ev.token = next;
  ev.prompt = true;
  ev.logprob = s.logprob;
  ev.top = s.top;
  req.sink->on_token(std::move(ev));
}

// The slot's whole prompt is evaluated: its pooled vector (through the classification head for
// rank pooling) goes to the sink, and the request ends.
void Scheduler::Impl::finish_embedding(Slot& slot) {
  Sequence& seq = *slot.seq;
  try {
    std::vector<float> pooled = seq.pooler->finish();
    if (seq.req.pooling == PoolingType::kRank) pooled = eval.classify(std::move(pooled));
    seq.req.sink->on_embedding(std::move(pooled));
  } catch (const std::exception& e) {
    finish(slot, FinishReason::kError, e.what());
    return;
  }
  if (eval.encoder()) slot.cached.clear();  // nothing is cached
  finish(slot, FinishReason::kStop);
}

// Samples the slot's next token from its logits row and emits its text.
void Scheduler::Impl::emit_token(Slot& slot, const float* logits) {
  Sequence& seq = *slot.seq;
  const Sampled s = seq.sampler.sample(seq.constrain(logits));
  if (seq.constraint && !seq.constraint->accept(s.id)) {
    throw std::runtime_error("sampled token " + std::to_string(s.id) + " that the grammar does not allow");
  }
  // With a grammar the end token is allowed only when the text is complete: it always ends.
  if (tokenizer.is_eog(s.id) && (!seq.req.ignore_eos || seq.constraint)) {
    finish(slot, FinishReason::kStop);
    return;
  }
  ++seq.usage.completion_tokens;
  seq.watch_triggers(s.id, tokenizer);
  TokenEvent ev;
  ev.token = s.id;
  ev.logprob = s.logprob;
  ev.top = s.top;
  StopMatcher::Result r = seq.stop.push(seq.decoder.push(s.id));
  ev.text = std::move(r.text);
  seq.req.sink->on_token(std::move(ev));
  if (r.stopped) {
    finish(slot, FinishReason::kStop, {}, false);  // the rest after a stop string is dropped
  } else if (seq.constraint && seq.constraint->complete()) {
    finish(slot, FinishReason::kStop);  // the grammar is satisfied and nothing may follow
  } else if (seq.req.max_tokens >= 0 && seq.usage.completion_tokens >= seq.req.max_tokens) {
    finish(slot, FinishReason::kLength);
  } else if (static_cast<int64_t>(slot.cached.size()) + 1 >= opt.n_ctx) {
    finish(slot, FinishReason::kLength);  // no position left for the next token
  } else {
    seq.next_token = s.id;
  }
}

// Emits what the decoder and stop matcher hold back (with `flush`, for a normal end), then ends
// the request. Never throws: whatever happens, the slot is idle afterwards.
void Scheduler::Impl::finish(Slot& slot, FinishReason reason, const std::string& error, bool flush) {
  Sequence& seq = *slot.seq;
  std::string message = error;
  if (flush && (reason == FinishReason::kStop || reason == FinishReason::kLength)) {
    try {
      StopMatcher::Result r = seq.stop.push(seq.decoder.flush());
      std::string rest = r.text + (r.stopped ? std::string() : seq.stop.flush());
      if (!rest.empty()) {
        TokenEvent ev;
        ev.text = std::move(rest);
        seq.req.sink->on_token(std::move(ev));
      }
    } catch (const std::exception& e) {
      reason = FinishReason::kError;
      message = e.what();
    }
  }
  try {
    seq.req.sink->on_finish(reason, seq.usage, message);
  } catch (...) {  // a sink that cannot take its end has nobody left to tell
  }
  slot.seq.reset();
  slot.last_used = ++tick;
  MutexLock lock(mu);
  --active_count;
}

// Whether n more requests may be queued now.
SubmitStatus Scheduler::Impl::admission(int64_t n_requests) const {
  if (draining || stopping) return SubmitStatus::kDraining;
  if (n_requests > opt.n_slots + opt.max_queue) return SubmitStatus::kTooLarge;
  const int64_t free_slots = opt.n_slots - active_count;
  if (static_cast<int64_t>(queue.size()) + n_requests > opt.max_queue + free_slots) return SubmitStatus::kQueueFull;
  return SubmitStatus::kAccepted;
}

Scheduler::Scheduler(const Model& model, const Tokenizer& tokenizer, SchedulerOptions options) {
  if (arch_traits(model.hparams().arch).encoder) {
    auto owned = std::make_unique<EncoderEvaluator>(model, options.n_threads);
    BatchEvaluator& ev = *owned;
    impl_ = std::make_unique<Impl>(std::move(owned), ev, tokenizer, options);
    return;
  }
  auto owned = std::make_unique<ModelEvaluator>(model, options.n_ctx, options.n_slots, options.kv_type,
                                                options.prefill_chunk + options.n_slots, options.n_threads,
                                                options.prefix_cache_bytes);
  BatchEvaluator& ev = *owned;
  impl_ = std::make_unique<Impl>(std::move(owned), ev, tokenizer, options);
}

Scheduler::Scheduler(BatchEvaluator& evaluator, const Tokenizer& tokenizer, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(nullptr, evaluator, tokenizer, options)) {}

Scheduler::~Scheduler() = default;

SubmitStatus Scheduler::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  return submit_all(std::move(one));
}

SubmitStatus Scheduler::submit_all(std::vector<GenerationRequest> requests) {
  for (const GenerationRequest& r : requests) {
    if (r.prompt.empty()) return SubmitStatus::kEmptyPrompt;
    // (a generation needs a position for its first token; an embedding may fill the context)
    const int64_t room = impl_->opt.n_ctx - (r.pooling == PoolingType::kNone ? 1 : 0);
    if (static_cast<int64_t>(r.prompt.size()) > room) return SubmitStatus::kPromptTooLong;
  }
  {
    MutexLock lock(impl_->mu);
    const SubmitStatus status = impl_->admission(static_cast<int64_t>(requests.size()));
    if (status != SubmitStatus::kAccepted) return status;
    for (GenerationRequest& r : requests) impl_->queue.push_back(std::move(r));
  }
  impl_->cv.notify_all();
  return SubmitStatus::kAccepted;
}

int64_t Scheduler::capacity() const { return impl_->opt.n_slots + impl_->opt.max_queue; }

void Scheduler::drain() {
  MutexLock lock(impl_->mu);
  impl_->draining = true;
}

void Scheduler::cancel_all() {
  {
    MutexLock lock(impl_->mu);
    impl_->cancel_requested = true;
  }
  impl_->cv.notify_all();
}

bool Scheduler::idle() const {
  MutexLock lock(impl_->mu);
  return impl_->queue.empty() && impl_->active_count == 0;
}

SchedulerStats Scheduler::stats() const {
  MutexLock lock(impl_->mu);
  SchedulerStats s;
  s.queued = static_cast<int64_t>(impl_->queue.size());
  s.active_slots = impl_->active_count;
  s.total_slots = impl_->opt.n_slots;
  s.kv_cells_used = impl_->cache_use.cells_used;
  s.kv_cells_total = impl_->cache_use.cells_total;
  s.kv_bytes = impl_->cache_use.bytes;
  s.kv_window_cells = impl_->cache_use.window_cells;
  s.kv_bytes_without_window = impl_->cache_use.bytes_without_window;
  s.prefix_cache = impl_->cache_use.prefix;
  std::tie(s.generation_tokens_per_second, s.prompt_tokens_per_second) = impl_->throughput.rates(Clock::now());
  return s;
}

const SchedulerOptions& Scheduler::options() const { return impl_->opt; }

}  // namespace engine
