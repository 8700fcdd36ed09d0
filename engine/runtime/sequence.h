// The state of one request while a scheduler slot serves it (scheduler.cpp's own; not an API).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/model/pooling.h"
#include "engine/runtime/ngram_index.h"
#include "engine/runtime/sampler.h"
#include "engine/runtime/scheduler.h"
#include "engine/runtime/stop_strings.h"
#include "engine/vision/projector.h"
#include "engine/text/grammar/token_masks.h"
#include "engine/text/tokenizer/decoder.h"

namespace engine {

class Tokenizer;

// A request being served: its sampler (primed with the prompt's tail for the penalties), the
// decoder and stop matcher its text goes through, its grammar state, its usage, and the n-gram
// index prompt-lookup drafting keeps of its tokens.
// Ownership: owns the request; its decoder borrows the Tokenizer, which must outlive it.
// Thread-safety: none; the scheduler's thread only.
struct Sequence {
  // cached: prompt tokens whose K/V the slot already holds. Throws std::invalid_argument for
  // parameters the sampler refuses.
  Sequence(GenerationRequest&& r, const Tokenizer& tok, size_t cached);

  bool embedding() const { return req.pooling != PoolingType::kNone; }

  // A lazy grammar watches the output (token `id`'s bytes, as the grammar vocabulary has them)
  // for its triggers; at the first, it starts from there.
  void watch_triggers(int32_t id, const Tokenizer& tok);

  // The logits to sample from: `logits` itself, or with a grammar a copy in which every token it
  // does not allow is -inf. Throws std::runtime_error when the grammar allows nothing at all.
  const float* constrain(const float* logits);

  GenerationRequest req;
  Sampler sampler;
  StreamDecoder decoder;
  StopMatcher stop;
  std::optional<grammar::TokenConstraint> constraint;
  std::vector<float> masked;  // (n_vocab,) the constrained logits row
  std::string lazy_text;      // the output's tail, searched for a lazy grammar's triggers
  bool lazy_done = false;     // a trigger was found (whether or not the grammar took it)
  Usage usage;
  std::optional<Pooler> pooler;  // embedding requests: their hidden states so far
  bool generating = false;  // the whole prompt is cached: next_token goes in at the next step
  int32_t next_token = -1;
  NgramIndex ngram;  // empty until the n-gram drafter first looks (speculation.h)
  std::vector<std::vector<float>> image_rows;  // per req.images: (n_tokens, n_embd) once encoded
  std::vector<ImageSpan> mrope_spans;  // per req.images when they take M-RoPE positions (qwen-vl)
};

}  // namespace engine
