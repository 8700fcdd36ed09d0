// The step loop: admit -> build one batch -> forward -> sample -> emit. See scheduler.h.
#include "engine/scheduler.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "engine/batch.h"
#include "engine/forward.h"
#include "engine/model.h"
#include "engine/stop_strings.h"
#include "engine/thread_pool.h"
#include "engine/tokenizer/tokenizer.h"

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
  void build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill, std::vector<Slot*>& outputs);
  void emit_token(Slot& slot, const float* logits);
  void finish(Slot& slot, FinishReason reason, const std::string& error = {});
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
    check_cancelled(cancel_everything);
    admit();
    step();
  }
  check_cancelled(true);
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
    r.sink->on_finish(FinishReason::Cancelled, u, now > r.deadline ? "request deadline exceeded" : "");
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
  // what the first generated token is sampled from.
  const size_t keep = std::min(common_prefix(slot.cached, req.prompt), req.prompt.size() - 1);
  cache.truncate(slot.seq(), static_cast<int32_t>(keep));
  slot.cached.resize(keep);
  slot.req = std::move(req);
  slot.usage = Usage{};
  slot.usage.prompt_tokens = static_cast<int64_t>(slot.req.prompt.size());
  slot.usage.cached_tokens = static_cast<int64_t>(keep);
  slot.sampler.emplace(slot.req.sampling, tokenizer.n_vocab());
  const SamplingParams& sp = slot.req.sampling;
  const size_t window = sp.penalty_last_n < 0 ? slot.req.prompt.size()
                                              : std::min<size_t>(sp.penalty_last_n, slot.req.prompt.size());
  for (size_t i = slot.req.prompt.size() - window; i < slot.req.prompt.size(); ++i) {
    slot.sampler->accept(slot.req.prompt[i]);
  }
  slot.decoder.emplace(tokenizer, StreamDecoder::Options{false, false});
  slot.stop.emplace(slot.req.stop);
  slot.state = Slot::State::Prefill;
}

// Decode tokens of generating slots first, then prompt chunks of prefilling slots within the
// prefill budget. `outputs` gets the slot of each logits row in order; `prefill` the slots that
// advanced their prompt, and by how many tokens.
void Scheduler::Impl::build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill,
                                  std::vector<Slot*>& outputs) {
  batch.clear();
  for (Slot& s : slots) {
    if (s.state != Slot::State::Generate) continue;
    batch.add(s.next_token, s.seq(), static_cast<int32_t>(s.cached.size()), true);
    s.cached.push_back(s.next_token);
    outputs.push_back(&s);
  }
  int64_t budget = opt.prefill_chunk;
  for (Slot& s : slots) {
    if (s.state != Slot::State::Prefill || budget <= 0) continue;
    const auto& prompt = s.req.prompt;
    const int64_t done = static_cast<int64_t>(s.cached.size());
    const int64_t n = std::min<int64_t>(budget, static_cast<int64_t>(prompt.size()) - done);
    for (int64_t i = done; i < done + n; ++i) {
      const bool last = i + 1 == static_cast<int64_t>(prompt.size());
      batch.add(prompt[i], s.seq(), static_cast<int32_t>(i), last);
      s.cached.push_back(prompt[i]);
      if (last) outputs.push_back(&s);
    }
    prefill.emplace_back(&s, n);
    budget -= n;
  }
}

void Scheduler::Impl::step() {
  std::vector<std::pair<Slot*, int64_t>> prefill;
  std::vector<Slot*> outputs;
  build_batch(prefill, outputs);
  if (batch.size() == 0) return;
  try {
    forward.eval(batch, cache, pool);
  } catch (const std::exception& e) {
    // Nothing a request did can cause this (prompts are validated at submit); fail the slots of
    // this batch and drop their cache entries rather than the whole server.
    for (Slot& s : slots) {
      if (!s.active()) continue;
      cache.truncate(s.seq(), 0);
      s.cached.clear();
      finish(s, FinishReason::Error, e.what());
    }
    return;
  }
  int64_t n_prompt = 0;
  for (auto& [slot, n] : prefill) {
    n_prompt += n;
    if (slot->cached.size() == slot->req.prompt.size()) slot->state = Slot::State::Generate;
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    emit_token(*outputs[i], forward.logits(static_cast<int64_t>(i)));
  }
  std::lock_guard lock(mu);
  throughput.add(Clock::now(), static_cast<int64_t>(outputs.size()), n_prompt);
  kv_used = cache.n_cells() - cache.n_free();
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
void Scheduler::Impl::finish(Slot& slot, FinishReason reason, const std::string& error) {
  if (slot.decoder && reason != FinishReason::Cancelled && reason != FinishReason::Error) {
    StopMatcher::Result r = slot.stop->push(slot.decoder->flush());
    std::string rest = r.text + (r.stopped ? std::string() : slot.stop->flush());
    if (!rest.empty()) {
      TokenEvent ev;
      ev.text = std::move(rest);
      slot.req.sink->on_token(std::move(ev));
    }
  }
  slot.req.sink->on_finish(reason, slot.usage, error);
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

SubmitStatus Scheduler::submit(GenerationRequest request) {
  if (request.prompt.empty()) return SubmitStatus::EmptyPrompt;
  if (static_cast<int64_t>(request.prompt.size()) >= impl_->opt.n_ctx) return SubmitStatus::PromptTooLong;
  {
    std::lock_guard lock(impl_->mu);
    if (impl_->draining || impl_->stopping) return SubmitStatus::Draining;
    const int64_t free_slots = impl_->opt.n_slots - impl_->active_count;
    if (static_cast<int64_t>(impl_->queue.size()) >= impl_->opt.max_queue + free_slots) {
      return SubmitStatus::QueueFull;
    }
    impl_->queue.push_back(std::move(request));
  }
  impl_->cv.notify_all();
  return SubmitStatus::Accepted;
}

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
