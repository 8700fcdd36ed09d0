// Test doubles for the scheduler (no model): a 26-letter tokenizer, a deterministic fake
// evaluator and a sink that records what it gets.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/model/batch.h"
#include "engine/model/model.h"
#include "engine/runtime/evaluator.h"
#include "engine/runtime/scheduler.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/writer.h"

namespace engine::test {

// One layer, one head of 4: the smallest model shape a KvCache or PrefixCache can hold.
inline HParams one_head_hparams() {
  HParams hp;
  hp.n_layer = 1;
  hp.n_embd = 4;
  hp.n_head = 1;
  hp.n_head_kv = 1;
  hp.head_dim_k = 4;
  hp.head_dim_v = 4;
  return hp;
}

using namespace std::chrono_literals;

constexpr int32_t kLetters = 26;     // tokens 0..25 are "a".."z"
constexpr int32_t kEos = kLetters;   // token 26 is the end of generation

// Byte-level BPE over the 26 letters and an EOS control token: enough to decode what the fake
// generates.
inline Tokenizer letters_tokenizer() {
  static std::vector<uint8_t> bytes;
  gguf::Writer w;
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  for (char c = 'a'; c <= 'z'; ++c) {
    tokens.emplace_back(1, c);
    types.push_back(1);
  }
  tokens.emplace_back("<eos>");
  types.push_back(3);
  w.set("tokenizer.ggml.model", gguf::OwnedValue::string("gpt2"));
  w.set("tokenizer.ggml.pre", gguf::OwnedValue::string("default"));
  w.set("tokenizer.ggml.tokens", gguf::OwnedValue::string_array(tokens));
  w.set("tokenizer.ggml.token_type", gguf::OwnedValue::i32_array(types));
  w.set("tokenizer.ggml.merges", gguf::OwnedValue::string_array({}));
  w.set("tokenizer.ggml.eos_token_id", gguf::OwnedValue::u32(kEos));
  bytes = w.to_bytes();
  return Tokenizer::from_gguf(gguf::File::parse(bytes));
}

// After token t the next letter is most likely: logits favour (t + 1) % 26 by 4 over (t + 2) % 26
// by 2 over the rest; EOS after `eos_after` (never by default). Records every batch and keeps
// the cached positions per sequence so truncation can be checked.
class FakeEvaluator : public BatchEvaluator {
 public:
  int32_t eos_after = -1;
  bool fail_next = false;
  int32_t max_rewind = -1;  // >= 0: like a sliding-window ring, truncating further back drops all
  std::vector<int64_t> batch_sizes;
  std::map<SeqId, int32_t> cached;  // sequence -> cached positions
  int32_t max_pos = -1;             // the highest position ever evaluated

  int64_t n_vocab() const override { return kLetters + 1; }
  void eval(const Batch& batch) override {
    std::lock_guard lock(mu_);
    if (fail_next) {
      fail_next = false;
      throw std::runtime_error("the evaluator failed");
    }
    batch_sizes.push_back(batch.size());
    rows_.clear();
    for (int64_t i = 0; i < batch.size(); ++i) {
      if (batch.pos[i] != cached[batch.seq[i]]) throw std::logic_error("position out of order");
      cached[batch.seq[i]] = batch.pos[i] + 1;
      max_pos = std::max(max_pos, batch.pos[i]);
      if (!batch.logits[i]) continue;
      std::vector<float> row(static_cast<size_t>(n_vocab()), 0.0f);
      const int32_t t = batch.tokens[i];
      if (t == eos_after) {
        row[kEos] = 8.0f;
      } else {
        row[static_cast<size_t>((t + 1) % kLetters)] = 4.0f;
        row[static_cast<size_t>((t + 2) % kLetters)] = 2.0f;
      }
      rows_.push_back(std::move(row));
    }
  }
  const float* logits(int64_t i) const override { return rows_[static_cast<size_t>(i)].data(); }
  int32_t truncate(SeqId seq, int32_t n_keep) override {
    std::lock_guard lock(mu_);
    const bool too_far = max_rewind >= 0 && n_keep < cached[seq] - max_rewind;
    cached[seq] = too_far ? 0 : std::min(cached[seq], std::max(n_keep, 0));
    return cached[seq];
  }
  CacheUse cache_use() const override { return {0, 1024, 0}; }

  std::vector<int64_t> sizes() {
    std::lock_guard lock(mu_);
    return batch_sizes;
  }

 private:
  std::mutex mu_;
  std::vector<std::vector<float>> rows_;
};

// Records what the scheduler emits; optionally throws from on_token after `throw_after` tokens,
// or says it is cancelled once `cancel_after` tokens arrived.
class RecordingSink : public TokenSink {
 public:
  explicit RecordingSink(int throw_after = -1, int cancel_after = -1)
      : throw_after_(throw_after), cancel_after_(cancel_after) {}

  void on_token(TokenEvent&& event) override {
    std::lock_guard lock(mu_);
    const bool generated = !event.prompt && event.token >= 0;
    if (generated && throw_after_ >= 0 && generated_ >= throw_after_) throw std::runtime_error("sink exploded");
    if (generated) ++generated_;
    text_ += event.text;
    events_.push_back(std::move(event));
  }
  void on_finish(FinishReason reason, const Usage& usage, const std::string& error) override {
    std::lock_guard lock(mu_);
    ++finishes_;
    reason_ = reason;
    usage_ = usage;
    error_ = error;
    cv_.notify_all();
  }
  bool cancelled() const override {
    std::lock_guard lock(mu_);
    return cancel_after_ >= 0 && generated_ >= cancel_after_;
  }

  // Waits (at most 30 s) for the end; returns the finish reason.
  FinishReason wait() {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, 30s, [&] { return finishes_ > 0; }));
    return reason_;
  }
  std::vector<TokenEvent> events() { return locked(events_); }
  Usage usage() { return locked(usage_); }
  std::string error() { return locked(error_); }
  std::string text() { return locked(text_); }
  int finishes() { return locked(finishes_); }

 private:
  template <class T>
  T locked(const T& v) {
    std::lock_guard lock(mu_);
    return v;
  }

  mutable std::mutex mu_;
  std::condition_variable cv_;
  int throw_after_, cancel_after_;
  int generated_ = 0;
  int finishes_ = 0;
  std::vector<TokenEvent> events_;
  std::string text_;
  FinishReason reason_ = FinishReason::kStop;
  Usage usage_;
  std::string error_;
};

}  // namespace engine::test
