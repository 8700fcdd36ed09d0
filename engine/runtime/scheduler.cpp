// The step loop: admit -> build one batch -> forward -> sample -> emit. See scheduler.h.
#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/kernels/thread_pool.h"
#include "engine/model/batch.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/runtime/stop_strings.h"
#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

using Clock = std::chrono::steady_clock;

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Stop: return "stop";
    case FinishReason::Length: return "length";
    case FinishReason::Cancelled: return "cancelled";
    case FinishReason::Error: return "error";
  }
  return "error";
}

namespace {

// One sequence being served. Slot i always uses KV-cache sequence id i; an idle slot keeps its
// cached tokens so that the next request with the same prefix can skip them.
struct Slot {
  enum class State { Idle, Prefill, Generate };

  int index = 0;
  State state = State::Idle;
  std::vector<int32_t> cached;     // tokens whose K/V are in the cache, in position order
  GenerationRequest req;
  std::optional<Sampler> sampler;
  std::optional<StreamDecoder> decoder;
  std::optional<StopMatcher> stop;
  Usage usage;
  int32_t next_token = -1;         // sampled, to be fed at the next step
  uint64_t last_used = 0;          // for least-recently-used slot choice

  bool active() const { return state != State::Idle; }
  SeqId seq() const { return index; }
};

// A logits row of the batch: its slot and, for a scored prompt row (prompt_logprobs), the prompt
// position it was computed at, whose next prompt token it scores; -1 for a row to sample from.
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

// Throughput over a sliding window, for stats().
class Throughput {
 public:
  void add(Clock::time_point t, int64_t generated, int64_t prompt) {
    samples_.push_back({t, generated, prompt});
    while (!samples_.empty() && t - samples_.front().t > kWindow) samples_.pop_front();
  }
  std::pair<double, double> rates(Clock::time_point now) const {
    int64_t g = 0;
    int64_t p = 0;
    for (const Sample& s : samples_) {
      if (now - s.t <= kWindow) {
        g += s.generated;
        p += s.prompt;
      }
    }
    const double secs = std::chrono::duration<double>(kWindow).count();
    return {static_cast<double>(g) / secs, static_cast<double>(p) / secs};
  }

 private:
  static constexpr auto kWindow = std::chrono::seconds(5);
  struct Sample {
    Clock::time_point t;
    int64_t generated;
    int64_t prompt;
  };
  std::deque<Sample> samples_;
};

}  // namespace

struct Scheduler::Impl {
  Impl(const Model& m, const Tokenizer& t, SchedulerOptions o)
      : model(m), tokenizer(t), opt(o),
        pool(o.n_threads > 0 ? o.n_threads : physical_cores()),
        cache(m.hparams(), o.n_slots * o.n_ctx, o.kv_type),
        forward(m, o.prefill_chunk + o.n_slots),
        slots(static_cast<size_t>(o.n_slots)) {
    for (size_t i = 0; i < slots.size(); ++i) slots[i].index = static_cast<int>(i);
    thread = std::thread([this] { loop(); });
  }

  ~Impl() {
    {
      std::lock_guard lock(mu);
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
  void build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill, std::vector<Output>& outputs);
  void emit_output(const Output& out, const float* logits);
  void score_prompt_token(Slot& slot, int64_t pos, const float* logits);
  void emit_token(Slot& slot, const float* logits);
  void finish(Slot& slot, FinishReason reason, const std::string& error = {});
  void fail(Slot& slot, const std::string& error);
  void fail_all(const std::string& error);
  SubmitStatus admission(int64_t n_requests) const;  // with mu held
  bool any_active() const {
    return std::ranges::any_of(slots, [](const Slot& s) { return s.active(); });
  }

  const Model& model;
  const Tokenizer& tokenizer;
  const SchedulerOptions opt;
  ThreadPool pool;
  KvCache cache;
  Forward forward;
  Batch batch;
  std::vector<Slot> slots;  // loop thread only
  uint64_t tick = 0;

  // State below is protected by mu.
  mutable std::mutex mu;
  std::condition_variable cv;
  std::deque<GenerationRequest> queue;
  bool stopping = false;
  bool draining = false;
  bool cancel_requested = false;
  int64_t active_count = 0;
  int64_t kv_used = 0;
  Throughput throughput;

  std::thread thread;
};

void Scheduler::Impl::loop() {
  for (;;) {
    bool cancel_everything = false;
    {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return stopping || cancel_requested || !queue.empty() || active_count > 0; });
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

// Ends one request with an error, dropping its cache entries (their state is unknown).
void Scheduler::Impl::fail(Slot& slot, const std::string& error) {
  cache.truncate(slot.seq(), 0);
  slot.cached.clear();
  finish(slot, FinishReason::Error, error);
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
    if (cancel_everything || s.req.sink->cancelled()) {
      finish(s, FinishReason::Cancelled);
    } else if (now > s.req.deadline) {
      finish(s, FinishReason::Cancelled, "request deadline exceeded");
    }
  }
  std::deque<GenerationRequest> dropped;
  {
    std::lock_guard lock(mu);
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
    try {
      r.sink->on_finish(FinishReason::Cancelled, u, now > r.deadline ? "request deadline exceeded" : "");
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
      std::lock_guard lock(mu);
      if (queue.empty()) return;
      for (Slot& s : slots) {
        if (s.active()) continue;
        const size_t prefix = common_prefix(s.cached, queue.front().prompt);
        if (best == nullptr || prefix > best_prefix ||
            (prefix == best_prefix && s.last_used < best->last_used)) {
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
  const size_t keep = req.prompt_logprobs ? 0 : std::min(common_prefix(slot.cached, req.prompt), req.prompt.size() - 1);
  cache.truncate(slot.seq(), static_cast<int32_t>(keep));
  slot.cached.resize(keep);
  slot.req = std::move(req);
  slot.usage = Usage{};
  slot.usage.prompt_tokens = static_cast<int64_t>(slot.req.prompt.size());
  slot.usage.cached_tokens = static_cast<int64_t>(keep);
  slot.state = Slot::State::Prefill;
  try {
    slot.sampler.emplace(slot.req.sampling, tokenizer.n_vocab());
    const SamplingParams& sp = slot.req.sampling;
    const size_t window = sp.penalty_last_n < 0 ? slot.req.prompt.size()
                                                : std::min<size_t>(sp.penalty_last_n, slot.req.prompt.size());
    for (size_t i = slot.req.prompt.size() - window; i < slot.req.prompt.size(); ++i) {
      slot.sampler->accept(slot.req.prompt[i]);
    }
    slot.decoder.emplace(tokenizer, StreamDecoder::Options{false, false});
    slot.stop.emplace(slot.req.stop);
  } catch (const std::exception& e) {
    fail(slot, e.what());
    return;
  }
  // Nothing to generate and nothing to score: done before any work.
  if (slot.req.max_tokens == 0 && !slot.req.prompt_logprobs) finish(slot, FinishReason::Length);
}

// Decode tokens of generating slots first, then prompt chunks of prefilling slots within the
// prefill budget. `outputs` gets the slot of each logits row in order; `prefill` the slots that
// advanced their prompt, and by how many tokens.
void Scheduler::Impl::build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill,
                                  std::vector<Output>& outputs) {
  batch.clear();
  for (Slot& s : slots) {
    if (s.state != Slot::State::Generate) continue;
    batch.add(s.next_token, s.seq(), static_cast<int32_t>(s.cached.size()), true);
    s.cached.push_back(s.next_token);
    outputs.push_back({&s, -1});
  }
  int64_t budget = opt.prefill_chunk;
  for (Slot& s : slots) {
    if (s.state != Slot::State::Prefill || budget <= 0) continue;
    const auto& prompt = s.req.prompt;
    const int64_t done = static_cast<int64_t>(s.cached.size());
    const int64_t n = std::min<int64_t>(budget, static_cast<int64_t>(prompt.size()) - done);
    for (int64_t i = done; i < done + n; ++i) {
      const bool last = i + 1 == static_cast<int64_t>(prompt.size());
      batch.add(prompt[i], s.seq(), static_cast<int32_t>(i), last || s.req.prompt_logprobs);
      s.cached.push_back(prompt[i]);
      if (last || s.req.prompt_logprobs) outputs.push_back({&s, last ? -1 : i});
    }
    prefill.emplace_back(&s, n);
    budget -= n;
  }
}

void Scheduler::Impl::step() {
  std::vector<std::pair<Slot*, int64_t>> prefill;
  std::vector<Output> outputs;
  build_batch(prefill, outputs);
  if (batch.size() == 0) return;
  try {
    forward.eval(batch, cache, pool);
  } catch (const std::exception& e) {
    // Nothing a request did can cause this (prompts are validated at submit); fail the slots of
    // this batch and drop their cache entries rather than the whole server.
    fail_all(e.what());
    return;
  }
  int64_t n_prompt = 0;
  for (auto& [slot, n] : prefill) {
    n_prompt += n;
    if (slot->cached.size() == slot->req.prompt.size()) slot->state = Slot::State::Generate;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (!outputs[i].slot->active()) continue;  // ended by a failure on an earlier row
    try {
      emit_output(outputs[i], forward.logits(static_cast<int64_t>(i)));
    } catch (const std::exception& e) {
      fail(*outputs[i].slot, e.what());
    }
  }
  std::lock_guard lock(mu);
  throughput.add(Clock::now(), static_cast<int64_t>(outputs.size()), n_prompt);
  kv_used = cache.n_cells() - cache.n_free();
}

void Scheduler::Impl::emit_output(const Output& out, const float* logits) {
  Slot& slot = *out.slot;
  if (out.prompt_pos >= 0) {
    score_prompt_token(slot, out.prompt_pos, logits);
  } else if (slot.req.max_tokens == 0) {
    finish(slot, FinishReason::Length);  // the prompt was only scored
  } else {
    emit_token(slot, logits);
  }
}

// The logits at prompt position `pos` score prompt token pos + 1.
void Scheduler::Impl::score_prompt_token(Slot& slot, int64_t pos, const float* logits) {
  const int32_t next = slot.req.prompt[static_cast<size_t>(pos + 1)];
  const Sampled s = logprobs_of(logits, tokenizer.n_vocab(), next, slot.req.sampling.n_logprobs);
  TokenEvent ev;
  ev.token = next;
  ev.prompt = true;
  ev.logprob = s.logprob;
  ev.top = s.top;
  slot.req.sink->on_token(std::move(ev));
}

// Samples the slot's next token from its logits row and emits its text.
void Scheduler::Impl::emit_token(Slot& slot, const float* logits) {
  const Sampled s = slot.sampler->sample(logits);
  if (tokenizer.is_eog(s.id) && !slot.req.ignore_eos) {
    finish(slot, FinishReason::Stop);
    return;
  }
  ++slot.usage.completion_tokens;
  TokenEvent ev;
  ev.token = s.id;
  ev.logprob = s.logprob;
  ev.top = s.top;
  StopMatcher::Result r = slot.stop->push(slot.decoder->push(s.id));
  ev.text = std::move(r.text);
  slot.req.sink->on_token(std::move(ev));
  if (r.stopped) {
    slot.decoder.reset();  // the rest after a stop string is dropped, not flushed
    finish(slot, FinishReason::Stop);
  } else if (slot.req.max_tokens >= 0 && slot.usage.completion_tokens >= slot.req.max_tokens) {
    finish(slot, FinishReason::Length);
  } else if (static_cast<int64_t>(slot.cached.size()) + 1 >= opt.n_ctx) {
    finish(slot, FinishReason::Length);  // no position left for the next token
  } else {
    slot.next_token = s.id;
  }
}

// Emits what the decoder and stop matcher hold back (unless stopped), then ends the request.
// Never throws: whatever happens, the slot is free afterwards.
void Scheduler::Impl::finish(Slot& slot, FinishReason reason, const std::string& error) {
  std::string message = error;
  if (slot.decoder && slot.stop && reason != FinishReason::Cancelled && reason != FinishReason::Error) {
    try {
      StopMatcher::Result r = slot.stop->push(slot.decoder->flush());
      std::string rest = r.text + (r.stopped ? std::string() : slot.stop->flush());
      if (!rest.empty()) {
        TokenEvent ev;
        ev.text = std::move(rest);
        slot.req.sink->on_token(std::move(ev));
      }
    } catch (const std::exception& e) {
      reason = FinishReason::Error;
      message = e.what();
    }
  }
  try {
    slot.req.sink->on_finish(reason, slot.usage, message);
  } catch (...) {  // a sink that cannot take its end has nobody left to tell
  }
  slot.req.sink.reset();
  slot.sampler.reset();
  slot.decoder.reset();
  slot.stop.reset();
  slot.state = Slot::State::Idle;
  slot.last_used = ++tick;
  std::lock_guard lock(mu);
  --active_count;
}

Scheduler::Scheduler(const Model& model, const Tokenizer& tokenizer, SchedulerOptions options)
    : impl_(std::make_unique<Impl>(model, tokenizer, options)) {}

Scheduler::~Scheduler() = default;

// Whether n more requests may be queued now (mu held).
SubmitStatus Scheduler::Impl::admission(int64_t n_requests) const {
  if (draining || stopping) return SubmitStatus::Draining;
  if (n_requests > opt.n_slots + opt.max_queue) return SubmitStatus::TooLarge;
  const int64_t free_slots = opt.n_slots - active_count;
  if (static_cast<int64_t>(queue.size()) + n_requests > opt.max_queue + free_slots) return SubmitStatus::QueueFull;
  return SubmitStatus::Accepted;
}

SubmitStatus Scheduler::submit(GenerationRequest request) {
  std::vector<GenerationRequest> one;
  one.push_back(std::move(request));
  return submit_all(std::move(one));
}

SubmitStatus Scheduler::submit_all(std::vector<GenerationRequest> requests) {
  for (const GenerationRequest& r : requests) {
    if (r.prompt.empty()) return SubmitStatus::EmptyPrompt;
    if (static_cast<int64_t>(r.prompt.size()) >= impl_->opt.n_ctx) return SubmitStatus::PromptTooLong;
  }
  {
    std::lock_guard lock(impl_->mu);
    const SubmitStatus status = impl_->admission(static_cast<int64_t>(requests.size()));
    if (status != SubmitStatus::Accepted) return status;
    for (GenerationRequest& r : requests) impl_->queue.push_back(std::move(r));
  }
  impl_->cv.notify_all();
  return SubmitStatus::Accepted;
}

int64_t Scheduler::capacity() const { return impl_->opt.n_slots + impl_->opt.max_queue; }

void Scheduler::drain() {
  std::lock_guard lock(impl_->mu);
  impl_->draining = true;
}

void Scheduler::cancel_all() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->cancel_requested = true;
  }
  impl_->cv.notify_all();
}

bool Scheduler::idle() const {
  std::lock_guard lock(impl_->mu);
  return impl_->queue.empty() && impl_->active_count == 0;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard lock(impl_->mu);
  SchedulerStats s;
  s.queued = static_cast<int64_t>(impl_->queue.size());
  s.active_slots = impl_->active_count;
  s.total_slots = impl_->opt.n_slots;
  s.kv_cells_used = impl_->kv_used;
  s.kv_cells_total = impl_->cache.n_cells();
  s.kv_bytes = impl_->cache.bytes();
  std::tie(s.generation_tokens_per_second, s.prompt_tokens_per_second) =
      impl_->throughput.rates(Clock::now());
  return s;
}

const SchedulerOptions& Scheduler::options() const { return impl_->opt; }

}  // namespace engine
