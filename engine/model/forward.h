// The forward pass: a batch of tokens in, their K/V into the cache, logits out.
#pragma once

#include <cstdint>
#include <memory>
#include <new>
#include <utility>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/attention.h"
#include "engine/model/batch.h"
#include "engine/model/kv_cache.h"
#include "engine/model/model.h"

namespace engine {

// An allocator whose resize() leaves new elements uninitialized (default-initialized), for the
// largest scratch rows of a forward pass: each eval writes them before reading them, and zeroing
// them (hundreds of MiB at a prefill chunk of 2048) was a fifth of a model's load time.
template <class T>
struct UninitializedAllocator : std::allocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedAllocator<U>;
  };
  UninitializedAllocator() = default;
  template <class U>
  UninitializedAllocator(const UninitializedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using ScratchRows = std::vector<float, UninitializedAllocator<float>>;

// Sees the activations of a forward pass between its steps (`ggufd logits --dump-layers`). Called
// on the thread driving Forward::eval(), once per chunk and step, in execution order:
//   layer -1: inp_embd (the token embeddings, scaled);
//   layer il: attn_norm, q, k, v (after biases, q/k norms, RoPE and Q's scale), kqv_out (attention
//   before the output projection), attn_out (after it, its bias and a post-norm: what the residual
//   adds), ffn_inp (the residual after it), ffn_norm, ffn_act (act(gate) * up; dense FFNs only),
//   ffn_out (the FFN's output after a post-norm), per_layer_out (gemma4: the residual after the
//   per-layer input block), l_out (the layer's output);
//   gemma4, layer -1 after inp_embd: inp_per_layer (each token's inputs to every layer, (n_layer, P)).
// rows (n, width), row-major: row t is the batch's token first + t. Valid only during the call.
class ForwardObserver {
 public:
  virtual ~ForwardObserver() = default;
  virtual void observe(const char* name, int64_t layer, int64_t first, int64_t n, int64_t width,
                       const float* rows) = 0;
};

// Evaluates batches of tokens with one Model, reusing scratch buffers sized for `max_batch`
// tokens (larger batches are processed in chunks of max_batch).
//
// Every weight matrix is applied to a whole chunk at once (one read of the weights per chunk);
// each token attends only to its own sequence's cached positions <= its own, so a token's logits
// do not depend on what else is in the batch.
// Ownership: borrows the Model (which must outlive it); owns its scratch and output buffers.
// Thread-safety: none; one Forward per thread driving a ThreadPool.
class Forward {
 public:
  // n_ctx_seq: the longest sequence this pass will see (0: the training context); it picks
  // LongRoPE's short or long factors, as llama.cpp does.
  Forward(const Model& model, int64_t max_batch, int64_t n_ctx_seq = 0);

  // Runs `batch`: stores every token's K/V in `cache` (cells assigned with cache.cell_for(), in
  // the window pool too when the cache has one) and computes the logits of the tokens whose
  // batch.logits flag is set, in batch order. A sequence's tokens in a batch come in position
  // order; afterwards its window cells are slid to its last position + 1.
  // Hybrid stacks: a sequence's tokens must continue its recurrent state (positions length,
  // length + 1, ...: truncate first to go back), which they advance.
  // Throws std::invalid_argument for a bad token id / position / sequence id, std::runtime_error
  // when the cache is full (cells of the tokens already processed stay assigned).
  void eval(const Batch& batch, KvCache& cache, ThreadPool& pool);

  // NextN / MTP (forward_nextn.cpp). With a cache built with nextn, eval() also runs the NextN
  // block over every token of the batch: the token at position p of a sequence goes in with the
  // stack's final hidden state (after the output norm, as llama.cpp's qwen35 graph) of position
  // p - 1 -- from the same batch, else kept in the cache (KvCache::hidden), else zeros -- and its
  // K/V go to the cell's NextN rows; the batch's hidden states are kept for the next batch.
  // eval_nextn() is a drafting pass of the NextN block alone: token i at position pos[i] with
  // h (n, n_embd) its previous position's hidden state (the stack's, or what an earlier
  // eval_nextn() gave). It writes the NextN rows of those positions (cells assigned as eval()
  // does; the stack's rows and recurrent state are left alone: truncate the sequences back
  // before the stack evaluates them) and computes, for every token, hidden(i): the block's
  // output after its head norm (shared_head_norm, else output_norm; (n_embd,), the next draft's
  // h) and logits(i) through its head (shared_head_head, else the output matrix). The batch must
  // fit max_batch. Throws std::invalid_argument as eval(), and for a cache without NextN rows.
  void eval_nextn(const Batch& batch, const float* h, KvCache& cache, ThreadPool& pool);

  // Results of the last eval(): logits(i) is the i-th flagged token's row (n_vocab,).
  int64_t n_outputs() const { return n_outputs_; }
  const float* logits(int64_t i) const { return logits_.data() + i * hp_.n_vocab; }
  // hidden(i): the i-th token flagged in batch.hidden, its final hidden state after the output
  // norm (n_embd,): what decoder embedders pool.
  int64_t n_hidden() const { return n_hidden_; }
  const float* hidden(int64_t i) const { return hidden_.data() + i * hp_.n_embd; }
  int64_t n_vocab() const { return hp_.n_vocab; }
  int64_t max_batch() const { return max_batch_; }
  // Shows the following eval()s' activations to `observer` (null: none, the default; it costs a
  // pointer test per step). The observer must outlive its use.
  void set_observer(ForwardObserver* observer) { observer_ = observer; }
  // F16 caches: the positions whose attention accumulates in f32 (Attention::set_f32_accum_range;
  // tests reproducing llama.cpp's batches). Not for a Forward whose cache is shared by prefix.
  void set_f32_accum_range(int32_t begin, int32_t end) { attention_.set_f32_accum_range(begin, end); }
  // MoE only: for token i of the last batch, the smallest gap over the layers between the selection
  // scores of its last chosen expert and the best expert not chosen: router probabilities (softmax
  // over all experts; kSoftmaxTopK too), or sigmoid + selection bias (kSigmoid). A gap near 0 is a
  // near-tie another implementation may resolve the other way (tests use it; 1 for dense models).
  float route_margin(int64_t i) const { return route_margin_.empty() ? 1.0f : route_margin_[static_cast<size_t>(i)]; }

 private:
  // One chunk of at most max_batch tokens, [begin, end) of the batch.
  void eval_chunk(const Batch& batch, int64_t begin, int64_t end, KvCache& cache, ThreadPool& pool);
  void attention_block(int64_t il, int64_t n, const int32_t* pos,
                       KvCache& cache, ThreadPool& pool);
  void prepare_qkv(int64_t il, int64_t t, int32_t pos, KvCache& cache);
  // After a chunk: each of its sequences' window cells that no later token attends to are freed.
  void slide_windows(const Batch& batch, int64_t begin, int64_t end, KvCache& cache);
  void ffn_block(int64_t il, int64_t n, ThreadPool& pool);
  // xb (n, E) -> xb2 (n, E) through the dense FFN / the token's top-k experts (chosen by the
  // router from router_in (n, E)).
  void dense_ffn(const LayerWeights& l, int64_t n, ThreadPool& pool);
  void moe_ffn(const LayerWeights& l, const float* router_in, int64_t n, ThreadPool& pool);
  // The router's top-k experts of each token, from in (n, E): sel_ (n, k) ids and selw_ (n, k) weights.
  void route(const LayerWeights& l, const float* in, int64_t n, ThreadPool& pool);
  // Lowers token t's route_margin_ to the gap between score[order_[K - 1]] and score[order_[K]]
  // (score (X,): what chose the experts; kSoftmaxTopK: logits, the gap taken in probability).
  void note_route_margin(int64_t t, const float* score, int64_t X, int64_t K);
  // gemma4 (forward_gemma4.cpp). xb (n, E) = the FFN's normed input -> xb2 (n, E): the dense FFN
  // and the experts side by side, each post-normed, summed (HParams::experts_beside_ffn).
  void ffn_beside_experts(const LayerWeights& l, int64_t n, ThreadPool& pool);
  // The chunk's per-layer inputs pl_in_ (n, n_layer * P) from its tokens and embeddings x_.
  void per_layer_inputs(const Batch& batch, int64_t begin, int64_t n, ThreadPool& pool);
  // After layer il's FFN: x += its per-layer input block's output.
  void per_layer_block(int64_t il, int64_t n, ThreadPool& pool);
  // fn(t) for every token t < n of a chunk, each thread a contiguous run of them (the per-token
  // row operations are independent). Fewer than 16 tokens (decode steps) run on the calling
  // thread: a row's norm or activation takes about a microsecond, waking the pool several.
  template <class Fn>
  static void for_each_token(int64_t n, ThreadPool& pool, const Fn& fn) {
    if (n < 16 || pool.size() < 2) {
      for (int64_t t = 0; t < n; ++t) fn(t);
      return;
    }
    pool.run([&](int ith, int nth) {
      for (int64_t t = n * ith / nth, end = n * (ith + 1) / nth; t < end; ++t) fn(t);
    });
  }
  // Block output xb2 (n, E): the post-norm (gemma) and residual scale (granite), then x += xb2.
  void add_residual(const std::vector<float>& post_norm, int64_t n, ThreadPool& pool);
  // gate (n,) = act(gate) * up (n,) with the model's FFN activation.
  void ffn_act(float* gate, const float* up, int64_t n) const;
  RopeParams rope_params(int n_rot, float base, float scale, const float* factors) const;
  // rows (n, width) of the running chunk to the observer, if any.
  void observe(const char* name, int64_t il, int64_t n, int64_t width, const float* rows) const {
    if (observer_ != nullptr) observer_->observe(name, il, chunk_begin_, n, width, rows);
  }
  // Hybrid stacks (forward_delta.cpp). One sequence's tokens in a chunk and the snapshots its
  // state takes at the chunk boundaries it crosses.
  struct RecurrentRun {
    SeqId seq;
    int32_t p0;                   // its first position: the state's length
    std::vector<int32_t> tokens;  // chunk indices, in position order
    std::vector<std::pair<int32_t, int32_t>> snaps;  // (boundary position, snapshot slot)
  };
  void check_recurrent(const Batch& batch, const KvCache& cache) const;
  void plan_recurrent(int64_t n, const SeqId* seq, const int32_t* pos, KvCache& cache);
  void delta_net_block(int64_t il, int64_t n, KvCache& cache, ThreadPool& pool);
  void delta_net_inputs(const LayerWeights& l, int64_t n, ThreadPool& pool);
  void delta_net_conv(const LayerWeights& l, int64_t r, int64_t n, KvCache& cache, ThreadPool& pool);
  void recurrent_conv(const std::vector<float>& w, int64_t r, int64_t n, bool silu_out, KvCache& cache, ThreadPool& pool);
  // lfm2 (forward_short_conv.cpp).
  void short_conv_block(int64_t il, int64_t n, KvCache& cache, ThreadPool& pool);
  void delta_net_rule(int64_t r, KvCache& cache, ThreadPool& pool);
  void finish_recurrent(KvCache& cache);
  // Gated attention: q_ and qgate_ from qg_'s rows; att_ *= sigmoid(qgate_).
  void split_q_gate(int64_t n);
  void gate_attention(int64_t n);
  // NextN (forward_nextn.cpp). mirror: after the stack's layers and head, the NextN block over
  // the chunk [begin, end) (its cells, RoPE angles and attention plan are the stack's).
  // block: x_ (n, E) = the NextN block's output for tokens at pos with inputs h (n, E).
  void nextn_mirror(const Batch& batch, int64_t begin, int64_t end, KvCache& cache, ThreadPool& pool);
  void nextn_block(const int32_t* tokens, const float* h, int64_t n, const int32_t* pos, KvCache& cache,
                   ThreadPool& pool);
  void check_tokens(const Batch& batch) const;
  // The weights of layer il: the stack's, or the NextN block's (il == n_layer).
  const LayerWeights& layer(int64_t il) const {
    return il < hp_.n_layer ? model_.layers[sz_(il)] : model_.nextn_layers.at(sz_(il - hp_.n_layer));
  }
  static size_t sz_(int64_t n) { return static_cast<size_t>(n); }
  // Final norm + output matrix for the chunk's flagged tokens; writes their rows at `out` and
  // returns the end of what it wrote.
  float* output_head(const Batch& batch, int64_t begin, int64_t end, float* out, ThreadPool& pool);

  const Model& model_;
  const HParams& hp_;
  int64_t max_batch_;
  Attention attention_;               // the chunk's attention over the cache (tiled)
  RopeParams rope_params_;            // how positions become angles: global layers
  RopeParams rope_params_swa_;        // sliding layers (their own base)
  bool has_swa_;                      // some layer slides (its RoPE may differ: rope_swa_)
  int64_t n_outputs_ = 0;
  int64_t n_hidden_ = 0;
  int64_t hidden_end_ = 0;   // hidden rows written so far in this eval()
  int64_t chunk_begin_ = 0;  // the running chunk's first token in the batch
  ForwardObserver* observer_ = nullptr;  // see set_observer()

  // Scratch, (max_batch, ...) row-major: row t belongs to the chunk's t-th token.
  std::vector<float> x_;        // (B, n_embd) residual stream
  std::vector<float> xb_;       // (B, n_embd) normed input of a block
  std::vector<float> xb2_;      // (B, n_embd) block output before the residual add
  ScratchRows q_;               // (B, n_head * head_k(il)), sized for the widest layer
  ScratchRows k_;               // (B, n_head_kv * head_k(il))
  ScratchRows v_;               // (B, n_head_kv * head_v(il))
  ScratchRows att_;             // (B, n_head * head_v(il)) attention output per head
  ScratchRows hb_;              // (B, n_ff) gate, then act(gate) * up (MoE: the shared expert's, n_ff_shexp)
  ScratchRows hb2_;             // (B, n_ff) up (MoE: n_ff_shexp)
  std::vector<float> rope_;     // (B, n_rot/2, 2) cos, sin per token
  std::vector<float> rope_swa_; // (B, n_rot_swa/2, 2) the same with the sliding layers' base and dims
  std::vector<int32_t> cells_;  // (B,) the cache cell of each token (full pool)
  std::vector<int32_t> window_cells_;  // (B,) its cell in the window pool, when the cache has one
  std::vector<SeqId> slid_;     // the sequences slide_windows() has seen in this chunk
  std::vector<float> xout_;     // (B, n_embd) final-normed rows that want logits
  // Mixture of experts (empty for a dense model).
  std::vector<float> router_;   // (B, n_expert) router logits, then probabilities
  std::vector<int32_t> order_;  // (n_expert,) experts ranked by one token's selection score
  std::vector<float> score_;    // (n_expert,) one token's selection score: probability + exp_probs_b
  std::vector<int32_t> sel_;    // (B, n_expert_used) chosen experts of each token
  std::vector<float> selw_;     // (B, n_expert_used) their weights
  std::vector<int64_t> first_;  // (n_expert + 1,) first row of each expert in xe (counting sort)
  std::vector<int64_t> cursor_; // (n_expert,) next free row of each expert while gathering
  std::vector<int32_t> rows_;   // (B * n_expert_used,) the choice (t * k + j) behind each row of xe
  ScratchRows xe_;              // (B * n_expert_used, n_embd) xb's rows, gathered by expert
  ScratchRows he_;              // (B * n_expert_used, n_ff_exp) gate, then act(gate) * up
  ScratchRows he2_;             // (B * n_expert_used, n_ff_exp) up
  ScratchRows ye_;              // (B * n_expert_used, n_embd) the experts' outputs
  std::vector<float> ys_;       // (B, n_embd) the shared expert's output (qwen2moe), the dense branch's (gemma4)
  std::vector<float> xr_;       // (B, n_embd) the router's input, when not xb (gemma4)
  // Per-layer inputs (gemma4; empty otherwise), P = n_embd_per_layer.
  std::vector<float> pl_in_;    // (B, n_layer * P) each token's input to every layer
  std::vector<float> pl_proj_;  // (B, n_layer * P) the embeddings' projection, normed per layer
  std::vector<float> pl_gate_;  // (B, P) gelu(x @ inp_gate^T) * the layer's input
  std::vector<MatmulJob> jobs_; // the experts' products of one step
  std::vector<float> route_margin_;  // (batch size,) see route_margin()
  // Hybrid stacks (empty otherwise).
  std::vector<float> qg_;       // (B, 2 * q_dim) Q and its gate, per head (attn_out_gate)
  std::vector<float> qgate_;    // (B, q_dim) the attention output's gate
  std::vector<int64_t> rec_index_;   // (n_layer,) a layer's index among the Gated DeltaNet ones, or -1
  std::vector<RecurrentRun> runs_;   // the chunk's sequences
  int64_t n_runs_ = 0;
  std::vector<int32_t> tok_run_;     // (B,) each token's run
  std::vector<int32_t> tok_pos_;     // (B,) each token's position
  std::vector<RecurrentCache::LayerState> run_state_;  // (n_runs_,) each run's state in the running layer
  std::vector<float> dn_in_;    // (B, conv_channels) the conv's inputs: projected q, k, v (ssm_in: (B, 2 key_dim + 2 d_inner)), b * h (lfm2)
  std::vector<float> sc_bch_;   // (B, 3 n_embd) lfm2: in_proj's b, c, h
  std::vector<float> dn_z_;     // (B, d_inner) output gate z
  std::vector<float> dn_ba_;    // (B, 2 n_v_heads) beta and alpha projections
  std::vector<float> dn_conv_;  // (B, conv_channels) q, k (L2-normed), v after the conv and silu; lfm2: the conv
  std::vector<float> dn_beta_;  // (B, n_v_heads) sigmoid(beta)
  std::vector<float> dn_gate_;  // (B, n_v_heads) log-decay
  std::vector<float> dn_out_;   // (B, d_inner) the delta rule's output, then gated-normed; lfm2: c * conv
  std::vector<float> dn_scratch_;  // (threads, 3 kChunk + 2 d_state) delta-rule kernel scratch
  // NextN (empty unless a pass ran it).
  std::vector<float> nx_h_;     // (B, n_embd) the chunk's final hidden states (the stack's)
  std::vector<float> nx_prev_;  // (B, n_embd) each token's input h: the previous position's
  std::vector<float> nx_cat_;   // (B, 2 n_embd) [enorm(embedding); hnorm(h)]
  std::vector<float> logits_;   // (n_outputs, n_vocab) results of the last eval()
  std::vector<float> hidden_;   // (n_hidden, n_embd) results of the last eval()
};

}  // namespace engine
