// The forward pass of a BERT-style encoder (bert, nomic-bert, jina-bert-v2): whole sequences in,
// each token's final hidden state out.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/attn_ops.h"
#include "engine/kernels/thread_pool.h"
#include "engine/model/batch.h"
#include "engine/model/model.h"

namespace engine {

// Evaluates batches of whole sequences with one encoder Model (arch_traits(arch).encoder): every
// token attends to every token of its own sequence, so nothing is cached between calls and a
// sequence must come complete, in one batch.
//
// A batch holds one or more sequences, each contiguous with positions 0, 1, ..., n - 1 (n at most
// the model's n_ctx_train, the rows of its position table). Every weight matrix is applied to the
// whole batch at once; a token's result does not depend on the other sequences in it.
// Ownership: borrows the Model (which must outlive it); owns its scratch, grown to the largest
// batch seen. Thread-safety: none; one Encoder per thread driving a ThreadPool.
class Encoder {
 public:
  explicit Encoder(const Model& model);

  // Runs `batch`; afterwards hidden(i) is the final hidden state of the i-th token flagged in
  // batch.hidden (the logits flags are ignored: an encoder has no output head). Throws
  // std::invalid_argument for a bad token id, a sequence that is not contiguous from position 0,
  // or one longer than the position table.
  void eval(const Batch& batch, ThreadPool& pool);

  int64_t n_hidden() const { return n_hidden_; }
  const float* hidden(int64_t i) const { return hidden_.data() + i * hp_.n_embd; }

 private:
  void check(const Batch& batch);
  void embed(const Batch& batch);
  void attention_block(const LayerWeights& l, int64_t n, ThreadPool& pool);
  // One head of token t over its sequence's tokens [begin, end); scores: (end - begin,) scratch.
  void attend(int64_t t, int64_t h, int64_t begin, int64_t end, float* scores);
  // RoPE encoders: rotates q_ and k_ of the n tokens by their positions (angles in rope_)
  void rotate(int64_t n);
  void ffn_block(const LayerWeights& l, int64_t n, ThreadPool& pool);
  // x (n, E) = layernorm(x + y) * w + b, per row
  void add_norm(const float* y, const std::vector<float>& w, const std::vector<float>& b, int64_t n);
  void resize(int64_t n, int n_threads);

  const Model& model_;
  const HParams& hp_;
  const kernels::AttnOps* attn_ops_;
  bool rope_;               // positions by RoPE (nomic-bert), not a table
  RopeParams rope_params_;  // how positions become angles (RoPE encoders)
  std::vector<float> alibi_slopes_;  // (n_head,) ALiBi slope of each head (jina-bert-v2); empty: none
  int64_t n_hidden_ = 0;
  int64_t capacity_ = 0;  // tokens the scratch below is sized for

  // Scratch, (n, ...) row-major: row t belongs to the batch's t-th token.
  std::vector<int64_t> seq_begin_;  // (n,) first token of t's sequence in the batch
  std::vector<int64_t> seq_end_;    // (n,) one past its last
  std::vector<float> x_;       // (n, n_embd) residual stream
  std::vector<float> xin_;     // (n, n_embd) a layer's input (jina-bert-v2's attn_norm_2 adds it again)
  std::vector<float> y_;       // (n, n_embd) a block's output before the residual add
  std::vector<float> q_;       // (n, n_embd) queries, then keys and values:
  std::vector<float> k_;       // (n, n_embd)
  std::vector<float> v_;       // (n, n_embd)
  std::vector<float> att_;     // (n, n_embd) attention output per head
  std::vector<float> hb_;      // (n, up rows) FFN hidden: up (jina's fused GeGLU: gate | up), then
                               // act(up) (bert) or act(gate) * up, (n, n_ff)
  std::vector<float> hb2_;     // (n, n_ff) gate (a separate ffn_gate: nomic-bert)
  std::vector<float> angles_;  // (n, n_rot/2, 2) cos, sin of each token's position (RoPE encoders)
  std::vector<float> scores_;  // (threads, longest sequence) one head's scores per thread
  std::vector<float> hidden_;  // (n_hidden, n_embd) results of the last eval()
};

}  // namespace engine
