// The step loop: admit -> build one batch -> evaluate -> sample -> emit. See scheduler.h.
#include "engine/runtime/scheduler.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/model/arch.h"
#include "engine/model/pooling.h"
#include "engine/runtime/draft_model.h"
#include "engine/runtime/mtp_drafter.h"
#include "engine/runtime/scheduler_impl.h"
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

size_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  const size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  return i;
}

}  // namespace

Scheduler::Impl::Impl(std::unique_ptr<BatchEvaluator> owned_, BatchEvaluator& ev, const Tokenizer& t,
                      SchedulerOptions o, std::unique_ptr<DraftSource> owned_drafter_, DraftSource* drafter_)
    : owned(std::move(owned_)),
      eval(ev),
      tokenizer(t),
      opt(o),
      owned_drafter(std::move(owned_drafter_)),
      drafter(drafter_),
      slots(static_cast<size_t>(o.n_slots)) {
  for (size_t i = 0; i < slots.size(); ++i) slots[i].index = static_cast<int>(i);
  cache_use = eval.cache_use();
  held_positions.assign(slots.size(), 0);
  prefix_block = eval.prefix_block();
  spec.mode = drafter != nullptr ? opt.spec : SpecMode::kNone;
  spec.gated = drafter != nullptr && opt.spec_auto;
  thread = std::thread([this] { loop(); });
}

Scheduler::Impl::~Impl() {
  {
    MutexLock lock(mu);
    stopping = true;
  }
  cv.notify_all();
  thread.join();
}

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
  // (every position's output needed, or the client asked for the prompt to be computed again)
  const bool fresh = req.prompt_logprobs || req.pooling != PoolingType::kNone || !req.reuse_prefix;
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
  slot.draft_cap = opt.draft_max;
  slot.gate = DraftGate(opt.draft_gate);
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
    check_images(req);
    const auto n_prompt = static_cast<int64_t>(req.prompt.size());
    slot.seq.emplace(std::move(req), tokenizer, keep);
    slot.seq->image_rows.resize(slot.seq->req.images.size());
    if (opt.vision && opt.vision->traits().image_positions == ImagePositions::kMrope2d) {
      for (const PromptImage& im : slot.seq->req.images) {
        slot.seq->mrope_spans.push_back(opt.vision->hparams().span(im.at, im.input->width, im.input->height));
      }
    }
    if (slot.seq->embedding()) slot.seq->pooler.emplace(slot.seq->req.pooling, eval.rank_pools_last(), eval.n_embd(), n_prompt);
  } catch (const std::exception& e) {  // parameters the sampler refuses: this request only ends
    slot.seq.reset();
    vacate(slot);  // before the client hears of the end, as in finish()
    try {
      sink->on_finish(FinishReason::kError, usage, e.what());
    } catch (...) {
    }
    return;
  }
  // Nothing to generate and nothing to score: done before any work.
  if (slot.seq->req.max_tokens == 0 && !slot.seq->req.prompt_logprobs && !slot.seq->embedding()) {
    finish(slot, FinishReason::kLength);
  }
}

// Decode tokens of generating slots first, each followed by its drafts, then prompt chunks of
// prefilling slots within the prefill budget. `outputs` gets the slot of each logits row in order,
// `hidden` of each hidden-state row (embeddings); `prefill` the slots that advanced their prompt,
// and by how many tokens.
void Scheduler::Impl::build_batch(std::vector<std::pair<Slot*, int64_t>>& prefill, std::vector<Output>& outputs,
                                  std::vector<Output>& hidden) {
  batch.clear();
  std::vector<Slot*> generating;
  for (Slot& s : slots) {
    s.draft.clear();
    s.accepted = 0;
    s.rejected = false;
    if (!s.active() || !s.seq->generating) continue;
    s.cached.push_back(s.seq->next_token);
    generating.push_back(&s);
  }
  if (drafter != nullptr && !generating.empty()) propose_drafts(generating);
  for (Slot* s : generating) {
    const auto pos = static_cast<int32_t>(s->cached.size() - 1);
    batch.add(s->seq->next_token, s->id(), pos, true);
    place_mrope(*s, pos);
    outputs.push_back({s, -1, 0});
    for (size_t j = 0; j < s->draft.size(); ++j) {
      batch.add(s->draft[j], s->id(), pos + 1 + static_cast<int32_t>(j), true);
      outputs.push_back({s, -1, j + 1});
    }
  }
  int64_t budget = opt.prefill_chunk;
  for (Slot& s : slots) {
    if (!s.active() || s.seq->generating || budget <= 0) continue;
    const GenerationRequest& req = s.seq->req;
    const int64_t done = static_cast<int64_t>(s.cached.size());
    int64_t n = prefill_count(s, budget, batch.size() == 0);
    if (!req.images.empty()) n = image_cut(s, done, n, budget);  // (an image goes in whole, once encoded)
    if (n == 0) continue;
    for (int64_t i = done; i < done + n; ++i) {
      const bool last = i + 1 == static_cast<int64_t>(req.prompt.size());
      const bool pooled = s.seq->pooler && s.seq->pooler->wants(i);
      const bool logits = !s.seq->embedding() && (last || req.prompt_logprobs);
      add_prompt_entry(s, i, logits, pooled);
      s.cached.push_back(req.prompt[i]);
      if (logits) outputs.push_back({&s, last ? -1 : i});
      if (pooled) hidden.push_back({&s, i});
    }
    prefill.emplace_back(&s, n);
    budget -= n;
  }
}

// Rows j = 1.. of a slot are reached only when the request has neither ended nor run out of room:
// with u tokens generated and the next token at position c - 1, row j emits token u + j + 1 at
// the context's c + j. So drafts beyond max_tokens - u - 1 or n_ctx - c - 1 would never be used.
// Within that, the slot's cap (see settle_drafts()) and how far the evaluator can go back.
int32_t Scheduler::Impl::draft_room(const Slot& s) const {
  const Sequence& seq = *s.seq;
  int64_t room = std::min<int64_t>(s.draft_cap, opt.n_ctx - static_cast<int64_t>(s.cached.size()) - 1);
  room = std::min<int64_t>(room, eval.rollback_limit());  // (rejected drafts must be droppable)
  if (seq.req.max_tokens >= 0) room = std::min(room, seq.req.max_tokens - seq.usage.completion_tokens - 1);
  return static_cast<int32_t>(std::max<int64_t>(room, 0));
}

// Asks the drafter for every generating slot with room at once, then keeps what is usable: at most
// the room, token ids the model has, at least draft_min of them. A drafter that fails proposes
// nothing: the slots decode plainly in this step. With spec_auto, a slot whose gate is paused
// decodes plainly too (and counts the step towards its next probe).
void Scheduler::Impl::propose_drafts(const std::vector<Slot*>& generating) {
  draft_slots.clear();
  for (Slot* s : generating) {
    if (!s->seq->req.images.empty()) continue;  // (drafters know no image positions)
    const int32_t room = draft_room(*s);
    if (room < std::max(opt.draft_min, 1)) continue;
    if (opt.spec_auto && s->gate.paused()) {
      s->gate.plain_step();
      ++step_paused;
      continue;
    }
    draft_slots.push_back({s->id(), s->cached, room, &s->seq->ngram, {}});
  }
  if (draft_slots.empty()) return;
  try {
    drafter->propose(draft_slots);
  } catch (const std::exception&) {
    return;
  }
  for (DraftSlot& d : draft_slots) {
    std::vector<int32_t>& draft = slots[static_cast<size_t>(d.seq)].draft;
    const size_t n = std::min(d.draft.size(), static_cast<size_t>(d.max));
    for (size_t j = 0; j < n && d.draft[j] >= 0 && d.draft[j] < eval.n_vocab(); ++j) draft.push_back(d.draft[j]);
    if (draft.size() < static_cast<size_t>(opt.draft_min)) draft.clear();
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
  // With other models on the same threads, this step waits its turn (ComputeShare).
  std::optional<ComputeShare::Turn> turn;
  if (opt.compute) turn.emplace(*opt.compute);
  std::vector<std::pair<Slot*, int64_t>> prefill;
  std::vector<Output> outputs, hidden;
  step_paused = 0;
  advance_images();
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
  step_generated = step_accepted = 0;
  step_drafts = 0;  // verified by this pass
  for (const Slot& s : slots) step_drafts += static_cast<int64_t>(s.draft.size());
  emit_outputs(outputs);
  const BatchEvaluator::CacheUse use = eval.cache_use();
  MutexLock lock(mu);
  throughput.add(Clock::now(), step_generated, n_prompt);
  publish_spec_counts();
  cache_use = use;
  for (const Slot& s : slots) held_positions[static_cast<size_t>(s.index)] = s.active() ? static_cast<int64_t>(s.cached.size()) : 0;
}

void Scheduler::Impl::publish_spec_counts() {
  spec.draft_tokens += std::exchange(step_drafts, 0);
  spec.accepted_tokens += std::exchange(step_accepted, 0);
  spec.paused_steps += std::exchange(step_paused, 0);
}

// The slot's K/V of `cached` are all computed: a block of them completed since the last time is
// shared (with the blocks before it, which the evaluator checks again).
void Scheduler::Impl::publish(Slot& slot) {
  const size_t blocks = slot.cached.size() / static_cast<size_t>(prefix_block);
  if (blocks <= slot.published) return;
  eval.publish_prefix(slot.id(), slot.cached);
  slot.published = blocks;
}

// Whether n more requests may be queued now.
SubmitStatus Scheduler::Impl::admission(int64_t n_requests) const {
  if (draining || stopping) return SubmitStatus::kDraining;
  if (n_requests > opt.n_slots + opt.max_queue) return SubmitStatus::kTooLarge;
  const int64_t free_slots = opt.n_slots - active_count;
  if (static_cast<int64_t>(queue.size()) + n_requests > opt.max_queue + free_slots) return SubmitStatus::kQueueFull;
  return SubmitStatus::kAccepted;
}

namespace {

// Throws std::invalid_argument for speculation settings the scheduler cannot honour.
void check_spec(const SchedulerOptions& o, bool has_draft_model) {
  if (o.spec == SpecMode::kNone) return;
  if (o.draft_max < 1 || o.draft_max > KvCache::kWindowSlack) {
    throw std::invalid_argument("speculative decoding: draft_max must be between 1 and " +
                                std::to_string(KvCache::kWindowSlack) + ", found " + std::to_string(o.draft_max));
  }
  if (o.draft_min < 0 || o.draft_min > o.draft_max) {
    throw std::invalid_argument("speculative decoding: draft_min must be between 0 and draft_max (" +
                                std::to_string(o.draft_max) + "), found " + std::to_string(o.draft_min));
  }
  const DraftGateParams& g = o.draft_gate;
  if (o.spec_auto && !(g.break_even >= 0 && g.warmup >= 1 && g.decay > 0 && g.decay <= 1 && g.probe_after >= 1 &&
                       g.probe_after_max >= g.probe_after)) {
    throw std::invalid_argument("speculative decoding: the draft gate needs break_even >= 0, warmup >= 1, decay in "
                                "(0, 1] and 1 <= probe_after <= probe_after_max");
  }
  if (o.spec == SpecMode::kDraft && !has_draft_model) {
    throw std::invalid_argument("speculative decoding with a draft model needs a draft model");
  }
}

// --spec mtp drafts with the model's own NextN block: a model without one cannot.
void check_mtp(const SchedulerOptions& o, const Model& model) {
  if (o.spec != SpecMode::kMtp || model.hparams().n_layer_nextn > 0) return;
  throw std::invalid_argument("speculative decoding with mtp needs a model with NextN / MTP layers "
                              "(nextn_predict_layers); this " + model.hparams().arch_name +
                              " model has none: use --spec ngram or a draft model");
}

}  // namespace

Scheduler::Scheduler(const Model& model, const Tokenizer& tokenizer, SchedulerOptions options,
                     const Model* draft_model) {
  check_spec(options, draft_model != nullptr);
  check_mtp(options, model);
  if (draft_model != nullptr && options.spec != SpecMode::kDraft) {
    throw std::invalid_argument("a draft model is only used with speculative decoding by a draft model");
  }
  if (!options.compute) options.compute = ComputeShare::make(options.n_threads);
  if (arch_traits(model.hparams().arch).encoder) {  // nothing to generate: nothing to draft
    auto owned = std::make_unique<EncoderEvaluator>(model, options.compute);
    BatchEvaluator& ev = *owned;
    options.spec = SpecMode::kNone;
    impl_ = std::make_unique<Impl>(std::move(owned), ev, tokenizer, options, nullptr, nullptr);
    return;
  }
  const int64_t drafts = options.spec == SpecMode::kNone ? 0 : options.draft_max;
  auto owned = std::make_unique<ModelEvaluator>(model, options.n_ctx, options.n_slots, options.kv_type,
                                                options.prefill_chunk + options.n_slots * (1 + drafts),
                                                options.compute, options.prefix_cache_bytes, options.prefix_store,
                                                options.spec == SpecMode::kMtp);
  std::unique_ptr<DraftSource> drafter;
  if (options.spec == SpecMode::kNgram) {
    drafter = std::make_unique<NgramDrafter>();
  } else if (options.spec == SpecMode::kMtp) {
    drafter = std::make_unique<MtpDrafter>(*owned);
  } else if (options.spec == SpecMode::kDraft) {
    drafter = std::make_unique<DraftModel>(*draft_model, tokenizer, owned->n_vocab(), options.n_ctx, options.n_slots,
                                           options.kv_type, options.prefill_chunk, owned->pool());
  }
  BatchEvaluator& ev = *owned;
  DraftSource* d = drafter.get();
  impl_ = std::make_unique<Impl>(std::move(owned), ev, tokenizer, options, std::move(drafter), d);
}

Scheduler::Scheduler(BatchEvaluator& evaluator, const Tokenizer& tokenizer, SchedulerOptions options,
                     DraftSource* drafter) {
  check_spec(options, drafter != nullptr);
  std::unique_ptr<DraftSource> own;
  if (options.spec == SpecMode::kNgram) {
    own = std::make_unique<NgramDrafter>();
    drafter = own.get();
  } else if (options.spec == SpecMode::kNone) {
    drafter = nullptr;
  }
  impl_ = std::make_unique<Impl>(nullptr, evaluator, tokenizer, options, std::move(own), drafter);
}

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
  for (int64_t n : impl_->held_positions) s.kv_positions_running += n;
  s.kv_bytes = impl_->cache_use.bytes;
  s.kv_window_cells = impl_->cache_use.window_cells;
  s.kv_bytes_without_window = impl_->cache_use.bytes_without_window;
  s.recurrent_bytes = impl_->cache_use.recurrent_bytes;
  s.recurrent_slot_bytes = impl_->cache_use.recurrent_seq_bytes;
  s.prefix_cache = impl_->cache_use.prefix;
  s.spec = impl_->spec;
  std::tie(s.generation_tokens_per_second, s.prompt_tokens_per_second) = impl_->throughput.rates(Clock::now());
  return s;
}

const SchedulerOptions& Scheduler::options() const { return impl_->opt; }

}  // namespace engine
