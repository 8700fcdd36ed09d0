// Compiled grammars shared across requests: compiling a schema against a 150k-token vocabulary
// costs milliseconds to hundreds of milliseconds, and clients send the same schema every time.
#pragma once

#include <cstddef>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "engine/text/grammar/token_masks.h"

namespace engine::grammar {

// A bounded least-recently-used map from a grammar's source (kind + text) to its CompiledGrammar
// for one vocabulary. Ownership: shares the vocabulary and the grammars it hands out.
// Thread-safety: get() may be called from any thread; compilation runs outside the lock (two
// threads asking for the same new grammar may both compile it; one result is kept).
class GrammarCache {
 public:
  // `max_visits`: the compile budget of each grammar (CompiledGrammar).
  GrammarCache(std::shared_ptr<const TokenVocab> vocab, size_t capacity = 64,
               size_t max_visits = CompiledGrammar::kDefaultMaxVisits)
      : vocab_(std::move(vocab)), capacity_(capacity), max_visits_(max_visits) {}

  // The compiled grammar for `key`, building it with `build` (which may throw GrammarError) on a miss.
  std::shared_ptr<const CompiledGrammar> get(const std::string& key,
                                             const std::function<std::shared_ptr<const Grammar>()>& build);
  const std::shared_ptr<const TokenVocab>& vocab() const { return vocab_; }
  size_t size() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const CompiledGrammar>>;
  std::shared_ptr<const TokenVocab> vocab_;
  size_t capacity_;
  size_t max_visits_;
  mutable std::mutex mu_;
  std::list<Entry> lru_;  // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> index_;
};

}  // namespace engine::grammar
