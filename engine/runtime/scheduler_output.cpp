// What a step's logits rows become: sampled tokens (and verified drafts), scored prompt tokens,
// pooled embeddings, and the ends of requests. See scheduler.h and speculation.h.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "engine/model/pooling.h"
#include "engine/runtime/scheduler_impl.h"
#include "engine/text/tokenizer/tokenizer.h"

namespace engine {

// The rows in batch order. A slot's chain of rows (its next token's, then one per draft) is
// followed only while the drafts are what the request samples: after a rejected draft the rows
// were computed from a token that is not in the output and are skipped.
void Scheduler::Impl::emit_outputs(const std::vector<Output>& outputs) {
  for (size_t i = 0; i < outputs.size(); ++i) {
    const Output& out = outputs[i];
    Slot& slot = *out.slot;
    if (!slot.active() || (out.link > 0 && slot.rejected)) continue;  // ended, or a void row
    try {
      emit_output(out, eval.logits(static_cast<int64_t>(i)));
      if (out.link < slot.draft.size() && slot.active()) check_draft(slot, out.link);
    } catch (const std::exception& e) {
      fail(slot, e.what());
    }
  }
  settle_drafts();
}

// The token just sampled from row `link` is the request's next token; when it is the draft that
// went into the batch after that row, the draft's K/V (and the next row) are the request's own.
void Scheduler::Impl::check_draft(Slot& slot, size_t link) {
  if (slot.seq->next_token == slot.draft[link]) {
    slot.cached.push_back(slot.draft[link]);
    ++slot.accepted;
    ++step_accepted;
  } else {
    slot.rejected = true;
  }
}

// The evaluator holds K/V for every draft of the batch; those not accepted (and those after the
// end of a request) go. Nothing of them was published: publish() only sees `cached`.
// The slot's cap follows its acceptance: doubled after a fully accepted proposal, cut to one more
// than the accepted run after a rejection, so that a request whose drafts keep failing (sampling
// at a high temperature, text unlike its context) costs a row or two per step, not draft_max.
// With spec_auto the gate hears of it too, and pauses drafting while it does not pay at all.
void Scheduler::Impl::settle_drafts() {
  for (Slot& s : slots) {
    if (s.draft.empty()) continue;
    const auto proposed = static_cast<int32_t>(s.draft.size()), accepted = static_cast<int32_t>(s.accepted);
    s.draft_cap = std::clamp(accepted == proposed ? 2 * s.draft_cap : accepted + 1, std::max(opt.draft_min, 1),
                             std::max(opt.draft_max, 1));
    if (opt.spec_auto) s.gate.drafted(proposed, accepted);
    s.draft.clear();
    s.rejected = false;
    const auto keep = static_cast<int32_t>(s.cached.size());
    const int32_t kept = eval.truncate(s.id(), keep);
    if (kept == keep) continue;
    // Only a sliding-window ring can keep less, and draft_max <= KvCache::kWindowSlack prevents
    // it; should it happen, the slot's cache is what it kept and its request cannot go on.
    s.cached.resize(static_cast<size_t>(std::max(kept, 0)));
    if (s.active()) fail(s, "speculative decoding: the KV cache could not drop the rejected drafts");
  }
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
  ++step_generated;
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
    seq.usage.stop_string = std::move(r.matched);
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
      if (r.stopped) seq.usage.stop_string = std::move(r.matched);
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
  {
    MutexLock lock(mu);
    publish_spec_counts();
  }
  // The slot is free before its client hears of the end: whoever reads stats() after a reply sees
  // the request gone (its cells, its running count).
  const std::shared_ptr<TokenSink> sink = seq.req.sink;
  const Usage usage = seq.usage;
  slot.seq.reset();
  vacate(slot);
  try {
    sink->on_finish(reason, usage, message);
  } catch (...) {  // a sink that cannot take its end has nobody left to tell
  }
}

void Scheduler::Impl::vacate(Slot& slot) {
  slot.last_used = ++tick;
  if (encoding.slot == slot.index) encoding = {};  // (its image's encoding is dropped)
  MutexLock lock(mu);
  --active_count;
  held_positions[static_cast<size_t>(slot.index)] = 0;
}

}  // namespace engine
