// The NextN / multi-token-prediction block of qwen35 files, as llama.cpp's qwen35 graph_mtp runs
// it: for a token x at position p and h, the stack's final hidden state at p - 1 (after the
// output norm),
//   x0 = eh_proj @ [rmsnorm(embed(x)) * enorm ; rmsnorm(h) * hnorm]      (2E) -> (E)
//   x1 = x0 + the gated full-attention block (the stack's attention layers' code, its own K/V)
//   x2 = x1 + the FFN (post_attention_norm, SiLU-gated)
//   h' = rmsnorm(x2) * shared_head_norm (else output_norm)   -> logits = head @ h' (the token
//        after x, drafted; h' is the next draft's h)
// See forward.h (eval_nextn, and what eval() adds with a NextN cache).
#include <algorithm>
#include <stdexcept>

#include "engine/kernels/matmul.h"
#include "engine/model/forward.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

void Forward::nextn_block(const int32_t* tokens, const float* h, int64_t n, const int32_t* pos, KvCache& cache,
                          ThreadPool& pool) {
  const NextNWeights& w = model_.nextn.at(0);
  const int64_t E = hp_.n_embd, il = hp_.n_layer;
  const Matrix& embd = w.embed_tokens.data ? w.embed_tokens : model_.tok_embd;
  nx_cat_.resize(sz(max_batch_ * 2 * E));
  // cat[t] = [rmsnorm(embd[token]) * enorm ; rmsnorm(h[t]) * hnorm]      (n, 2E)
  for (int64_t t = 0; t < n; ++t) {
    float* cat = nx_cat_.data() + t * 2 * E;
    dequantize_row(embd, tokens[t], cat);
    rmsnorm(cat, cat, w.enorm.data(), E, hp_.rms_eps);
    rmsnorm(cat + E, h + t * E, w.hnorm.data(), E, hp_.rms_eps);
  }
  // x = cat @ eh_proj^T                          cat (n, 2E) -> x (n, E)
  matmul(w.eh_proj, nx_cat_.data(), n, x_.data(), pool);
  observe("nextn_eh_proj", il, n, E, x_.data());
  attention_block(il, n, pos, cache, pool);
  ffn_block(il, n, pool);
  observe("l_out", il, n, E, x_.data());
}

// The chunk's final hidden states hn (as output_head normed the flagged ones) are the inputs of
// the tokens one position later; each token's own input is its previous position's.
void Forward::nextn_mirror(const Batch& batch, int64_t begin, int64_t end, KvCache& cache, ThreadPool& pool) {
  const int64_t n = end - begin, E = hp_.n_embd;
  const SeqId* seq = batch.seq.data() + begin;
  const int32_t* pos = batch.pos.data() + begin;
  nx_h_.resize(sz(max_batch_ * E));
  nx_prev_.resize(sz(max_batch_ * E));
  // hn[t] = rmsnorm(x[t]) * output_norm          x (n, E) -> hn (n, E)
  for_each_token(n, pool, [&](int64_t t) {
    rmsnorm(nx_h_.data() + t * E, x_.data() + t * E, model_.output_norm.data(), E, hp_.rms_eps);
  });
  // prev[t] = the hidden state of (seq[t], pos[t] - 1): an earlier token of the chunk, the cache's, or 0
  for (int64_t t = 0; t < n; ++t) {
    const float* src = nullptr;
    for (int64_t u = t - 1; u >= 0 && src == nullptr; --u) {
      if (seq[u] == seq[t] && pos[u] == pos[t] - 1) src = nx_h_.data() + u * E;
    }
    if (src == nullptr) src = cache.hidden(seq[t], pos[t] - 1);
    float* dst = nx_prev_.data() + t * E;
    if (src != nullptr) {
      std::copy(src, src + E, dst);
    } else {
      std::fill(dst, dst + E, 0.0f);  // (unknown: a prefix attached or kept from an earlier request)
    }
  }
  // Kept for the next batch and for drafts: each run of a sequence's consecutive positions.
  for (int64_t t0 = 0, t1 = 0; t0 < n; t0 = t1) {
    for (t1 = t0 + 1; t1 < n && seq[t1] == seq[t0] && pos[t1] == pos[t1 - 1] + 1;) ++t1;
    cache.keep_hidden(seq[t0], pos[t0], nx_h_.data() + t0 * E, t1 - t0);
  }
  nextn_block(batch.tokens.data() + begin, nx_prev_.data(), n, pos, cache, pool);
}

void Forward::eval_nextn(const Batch& batch, const float* h, KvCache& cache, ThreadPool& pool) {
  const int64_t n = batch.size(), E = hp_.n_embd, V = hp_.n_vocab;
  check_tokens(batch);
  if (!cache.nextn()) throw std::invalid_argument("eval_nextn: the KV cache has no NextN rows");
  if (n > max_batch_) {
    throw std::invalid_argument("eval_nextn: " + std::to_string(n) + " tokens, more than max_batch " +
                                std::to_string(max_batch_));
  }
  const NextNWeights& w = model_.nextn.at(0);
  const SeqId* seq = batch.seq.data();
  const int32_t* pos = batch.pos.data();
  chunk_begin_ = 0;
  route_margin_.assign(hp_.n_expert > 0 ? sz(n) : 0, 1.0f);
  for (int64_t t = 0; t < n; ++t) {
    cells_[sz(t)] = cache.cell_for(seq[t], pos[t]);
    rope_angles(rope_.data() + t * hp_.n_rot, pos[t], rope_params_);
  }
  attention_.prepare(n, seq, pos, cache);
  nextn_block(batch.tokens.data(), h, n, pos, cache, pool);
  // hidden[t] = rmsnorm(x[t]) * head norm; logits = hidden @ head^T    (n, E) -> (n, V)
  const std::vector<float>& norm = w.shared_head_norm.empty() ? model_.output_norm : w.shared_head_norm;
  n_outputs_ = n_hidden_ = n;
  hidden_.resize(sz(n * E));
  logits_.resize(sz(n * V));
  for_each_token(n, pool, [&](int64_t t) {
    rmsnorm(hidden_.data() + t * E, x_.data() + t * E, norm.data(), E, hp_.rms_eps);
  });
  matmul(w.shared_head_head.data ? w.shared_head_head : model_.output, hidden_.data(), n, logits_.data(), pool);
}

}  // namespace engine
