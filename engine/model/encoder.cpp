// The forward pass of a BERT-style encoder over a batch of whole sequences, read top to bottom:
//   x = token_embd[token] + token_types[0] (+ position_embd[pos]: bert) -> LayerNorm
//   per layer (input x_in):
//     [Q/K/V (+ biases), LayerNorms on Q and K (jina-bert-v2, optional), RoPE on Q and K
//      (nomic-bert), bidirectional attention within the sequence (jina-bert-v2: ALiBi biases),
//      output projection (+ bias), x = LayerNorm(x + attention)
//      (jina-bert-v2, optional: x = LayerNorm2(x + x_in))]
//     [bert: up + bias, GELU, down + bias; nomic-bert: silu(gate) * up, down; jina-bert-v2:
//      gelu(gate) * up from one fused matrix + bias, down + bias; x = LayerNorm(x + FFN)]
//   -> x is each token's hidden state (no final norm; pooling happens outside).
#include "engine/model/encoder.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/kernels/dispatch.h"
#include "engine/model/arch.h"
#include "engine/kernels/matmul.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

Encoder::Encoder(const Model& model)
    : model_(model),
      hp_(model.hparams()),
      attn_ops_(kernels::dispatch().attn),
      rope_(arch_traits(hp_.arch).positions == EncoderPositions::kRope) {
  if (!arch_traits(hp_.arch).encoder) throw std::invalid_argument("Encoder: the model is not an encoder");
  rope_params_.n_rot = hp_.n_rot;
  rope_params_.freq_base = hp_.rope_freq_base;
  rope_params_.freq_scale = hp_.rope_freq_scale;
  rope_params_.mscale = hp_.rope_attn_factor;
  rope_params_.ext_factor = hp_.yarn_ext_factor;
  if (rope_params_.ext_factor != 0.0f) {
    yarn_corr_dims(rope_params_, hp_.n_ctx_orig, hp_.yarn_beta_fast, hp_.yarn_beta_slow);
  }
  if (hp_.alibi_max_bias > 0.0f) {
    // ggml's slopes (soft_max_ext with max_bias): m0^(h+1) for the first n_log2 heads (the
    // largest power of two <= n_head), then m1^(2(h - n_log2) + 1)
    const auto n_log2 = static_cast<int64_t>(1) << static_cast<int>(std::floor(std::log2(static_cast<double>(hp_.n_head))));
    const float m0 = std::pow(2.0f, -hp_.alibi_max_bias / static_cast<float>(n_log2));
    const float m1 = std::pow(2.0f, -hp_.alibi_max_bias / 2.0f / static_cast<float>(n_log2));
    for (int64_t h = 0; h < hp_.n_head; ++h) {
      alibi_slopes_.push_back(h < n_log2 ? std::pow(m0, static_cast<float>(h + 1))
                                         : std::pow(m1, static_cast<float>(2 * (h - n_log2) + 1)));
    }
  }
}

void Encoder::resize(int64_t n, int n_threads) {
  int64_t longest = 0;
  for (size_t t = 0; t < seq_begin_.size(); ++t) longest = std::max(longest, seq_end_[t] - seq_begin_[t]);
  scores_.resize(sz(n_threads * longest));
  if (n <= capacity_) return;
  capacity_ = n;
  const int64_t E = hp_.n_embd;
  int64_t up_rows = hp_.n_ff;
  bool second_norm = false;
  for (const LayerWeights& l : model_.layers) {
    up_rows = std::max(up_rows, l.ffn_up.rows);
    second_norm |= !l.attn_norm_2.empty();
  }
  x_.resize(sz(n * E));
  if (second_norm) xin_.resize(sz(n * E));
  y_.resize(sz(n * E));
  q_.resize(sz(n * hp_.q_dim()));
  k_.resize(sz(n * hp_.k_dim()));
  v_.resize(sz(n * hp_.v_dim()));
  att_.resize(sz(n * hp_.n_head * hp_.head_dim_v));
  hb_.resize(sz(n * up_rows));
  if (model_.layers.front().ffn_gate.data != nullptr) hb2_.resize(sz(n * hp_.n_ff));
  if (rope_) angles_.resize(sz(n * hp_.n_rot));
}

// Every sequence contiguous, from position 0 up by one; ids inside the vocabulary.
void Encoder::check(const Batch& batch) {
  const int64_t n = batch.size();
  if (sz(n) != batch.seq.size() || sz(n) != batch.pos.size() || sz(n) != batch.logits.size()) {
    throw std::invalid_argument("batch: tokens, seq, pos and logits differ in length");
  }
  seq_begin_.resize(sz(n));
  seq_end_.resize(sz(n));
  int64_t begin = 0;
  for (int64_t t = 0; t < n; ++t) {
    const int32_t token = batch.tokens[sz(t)];
    if (token < 0 || token >= hp_.n_vocab) {
      throw std::invalid_argument("batch: token id " + std::to_string(token) + " is outside the vocabulary [0, " +
                                  std::to_string(hp_.n_vocab) + ")");
    }
    const bool starts = t == 0 || batch.seq[sz(t)] != batch.seq[sz(t - 1)];
    if (starts) begin = t;
    if (batch.pos[sz(t)] != t - begin) {
      throw std::invalid_argument("batch: an encoder needs whole sequences (positions 0, 1, ... in order); token " +
                                  std::to_string(t) + " has position " + std::to_string(batch.pos[sz(t)]) +
                                  ", expected " + std::to_string(t - begin));
    }
    if (t - begin >= hp_.n_ctx_train) {
      throw std::invalid_argument("batch: a sequence is longer than the model's " + std::to_string(hp_.n_ctx_train) +
                                  " positions");
    }
    seq_begin_[sz(t)] = begin;
  }
  for (int64_t t = n - 1, end = n; t >= 0; --t) {
    seq_end_[sz(t)] = end;
    if (seq_begin_[sz(t)] == t) end = t;
  }
}

void Encoder::eval(const Batch& batch, ThreadPool& pool) {
  check(batch);
  const int64_t n = batch.size(), E = hp_.n_embd;
  resize(n, pool.size());
  embed(batch);
  if (rope_) {
    // angles[t] = RoPE's (cos, sin) at t's position                (n, n_rot/2, 2)
    for (int64_t t = 0; t < n; ++t) rope_angles(angles_.data() + t * hp_.n_rot, batch.pos[sz(t)], rope_params_);
  }
  for (const LayerWeights& l : model_.layers) {
    attention_block(l, n, pool);
    ffn_block(l, n, pool);
  }
  // hidden[i] = x[t] for the i-th flagged token        (n_hidden, E)
  n_hidden_ = batch.n_hidden();
  hidden_.resize(sz(n_hidden_ * E));
  for (int64_t t = 0, i = 0; t < n; ++t) {
    if (batch.wants_hidden(t)) std::copy_n(x_.data() + t * E, E, hidden_.data() + (i++) * E);
  }
}

void Encoder::embed(const Batch& batch) {
  const int64_t E = hp_.n_embd;
  std::vector<float>& pos_row = y_;  // (E,) scratch: y_ is free until the first block
  for (int64_t t = 0; t < batch.size(); ++t) {
    // x[t] = token_embd[token] + token_types[0] (+ position_embd[pos])     (E,)
    float* x = x_.data() + t * E;
    dequantize_row(model_.tok_embd, batch.tokens[sz(t)], x);
    if (model_.pos_embd.data != nullptr) {
      dequantize_row(model_.pos_embd, batch.pos[sz(t)], pos_row.data());
      add(x, pos_row.data(), E);
    }
    if (!model_.type_embd0.empty()) add(x, model_.type_embd0.data(), E);
    // x[t] = layernorm(x[t]) * tok_norm + tok_norm_b
    layernorm(x, x, model_.tok_norm.data(), model_.tok_norm_b.data(), E, hp_.norm_eps);
  }
}

void Encoder::attention_block(const LayerWeights& l, int64_t n, ThreadPool& pool) {
  const int64_t E = hp_.n_embd;
  if (!l.attn_norm_2.empty()) std::copy_n(x_.data(), n * E, xin_.data());  // x_in = x
  // q = x @ Wq^T (+ bq), k = x @ Wk^T (+ bk), v = x @ Wv^T (+ bv)   x (n, E) -> (n, q_dim) ...
  const MatmulJob qkv[] = {{&l.wq, x_.data(), n, q_.data()}, {&l.wk, x_.data(), n, k_.data()},
                           {&l.wv, x_.data(), n, v_.data()}};
  matmul_group(qkv, pool);  // x converted once; the threads share the three products' row chunks
  for (int64_t t = 0; t < n; ++t) {
    if (!l.bq.empty()) add(q_.data() + t * hp_.q_dim(), l.bq.data(), hp_.q_dim());
    if (!l.bk.empty()) add(k_.data() + t * hp_.k_dim(), l.bk.data(), hp_.k_dim());
    if (!l.bv.empty()) add(v_.data() + t * hp_.v_dim(), l.bv.data(), hp_.v_dim());
    // q[t] = layernorm(q[t]) * q_ln + q_ln_b, k[t] likewise, over the whole row (jina-bert-v2)
    if (!l.attn_q_ln.empty()) {
      float* q = q_.data() + t * hp_.q_dim();
      layernorm(q, q, l.attn_q_ln.data(), l.attn_q_ln_b.data(), hp_.q_dim(), hp_.norm_eps);
    }
    if (!l.attn_k_ln.empty()) {
      float* k = k_.data() + t * hp_.k_dim();
      layernorm(k, k, l.attn_k_ln.data(), l.attn_k_ln_b.data(), hp_.k_dim(), hp_.norm_eps);
    }
  }
  if (rope_) rotate(n);
  // att[t, h] = softmax(q[t, h] . k[s, h] / sqrt(head_dim) over s in t's sequence) @ v[s, h]
  const int64_t n_items = n * hp_.n_head;
  const size_t per_thread = scores_.size() / sz(pool.size());
  pool.run([&](int ith, int nth) {
    float* scores = scores_.data() + sz(ith) * per_thread;
    for (int64_t i = ith; i < n_items; i += nth) {
      const int64_t t = i / hp_.n_head;
      attend(t, i % hp_.n_head, seq_begin_[sz(t)], seq_end_[sz(t)], scores);
    }
  });
  // y = att @ Wo^T + bo                                            att (n, E) -> y (n, E)
  matmul(l.wo, att_.data(), n, y_.data(), pool);
  if (!l.bo.empty()) {
    for (int64_t t = 0; t < n; ++t) add(y_.data() + t * E, l.bo.data(), E);
  }
  // x = layernorm(x + y) * attn_out_norm + attn_out_norm_b
  add_norm(y_.data(), l.attn_out_norm, l.attn_out_norm_b, n);
  // x = layernorm(x + x_in) * attn_norm_2 + attn_norm_2_b       (jina-bert-v2, optional)
  if (!l.attn_norm_2.empty()) add_norm(xin_.data(), l.attn_norm_2, l.attn_norm_2_b, n);
}

void Encoder::rotate(int64_t n) {
  // q[t, h] = rope(q[t, h], angles[t]), k[t, h] likewise        (n, n_head, head_dim_k) ...
  for (int64_t t = 0; t < n; ++t) {
    const float* cs = angles_.data() + t * hp_.n_rot;
    for (int64_t h = 0; h < hp_.n_head; ++h) rope(q_.data() + t * hp_.q_dim() + h * hp_.head_dim_k, cs, hp_.n_rot, hp_.rope_style);
    for (int64_t h = 0; h < hp_.n_head_kv; ++h) rope(k_.data() + t * hp_.k_dim() + h * hp_.head_dim_k, cs, hp_.n_rot, hp_.rope_style);
  }
}

void Encoder::attend(int64_t t, int64_t h, int64_t begin, int64_t end, float* scores) {
  const kernels::AttnOps& ops = *attn_ops_;
  const int64_t hd_k = hp_.head_dim_k, hd_v = hp_.head_dim_v;
  const int64_t kv_head = h / (hp_.n_head / hp_.n_head_kv);
  const float* q = q_.data() + t * hp_.q_dim() + h * hd_k;  // (head_dim_k,)
  const float slope = alibi_slopes_.empty() ? 0.0f : alibi_slopes_[sz(h)];
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t s = begin; s < end; ++s) {
    // score[s] = q . k[s] / sqrt(head_dim) - slope * |t - s|   (slope 0 without ALiBi)
    const float* k = k_.data() + s * hp_.k_dim() + kv_head * hd_k;
    scores[s - begin] = hp_.kq_scale * ops.dot_f32(q, k, hd_k) - slope * static_cast<float>(std::abs(t - s));
    max = std::max(max, scores[s - begin]);
  }
  float sum = 0.0f;
  for (int64_t s = 0; s < end - begin; ++s) {
    scores[s] = std::exp(scores[s] - max);
    sum += scores[s];
  }
  float* out = att_.data() + (t * hp_.n_head + h) * hd_v;  // (head_dim_v,)
  std::fill(out, out + hd_v, 0.0f);
  for (int64_t s = begin; s < end; ++s) {
    ops.mad_f32(out, scores[s - begin] / sum, v_.data() + s * hp_.v_dim() + kv_head * hd_v, hd_v);
  }
}

void Encoder::ffn_block(const LayerWeights& l, int64_t n, ThreadPool& pool) {
  const int64_t E = hp_.n_embd, F = hp_.n_ff, U = l.ffn_up.rows;
  // hb = x @ Wup^T (+ b_up)                                        x (n, E) -> hb (n, U)
  matmul(l.ffn_up, x_.data(), n, hb_.data(), pool);
  if (!l.ffn_up_b.empty()) {
    for (int64_t t = 0; t < n; ++t) add(hb_.data() + t * U, l.ffn_up_b.data(), U);
  }
  const float* h = hb_.data();  // act(...) (n, F)
  if (l.ffn_gate.data != nullptr) {
    // hb2 = act(x @ Wgate^T) * hb   (nomic-bert: silu)              x (n, E) -> hb2 (n, F)
    matmul(l.ffn_gate, x_.data(), n, hb2_.data(), pool);
    if (hp_.ffn_act == FfnAct::kSilu) {
      silu_mul(hb2_.data(), hb_.data(), n * F);
    } else {
      gelu_mul(hb2_.data(), hb_.data(), n * F);
    }
    h = hb2_.data();
  } else if (U == 2 * F) {
    // hb[t] = gelu(hb[t, :F]) * hb[t, F:], rows packed to (n, F)  (jina-bert-v2's fused GeGLU)
    for (int64_t t = 0; t < n; ++t) {
      float* row = hb_.data() + t * U;
      gelu_mul(row, row + F, F);
      if (t > 0) std::copy_n(row, F, hb_.data() + t * F);  // [tF, tF + F) ends before row t + 1
    }
  } else {
    gelu(hb_.data(), n * F);  // hb = gelu(hb)  (bert)
  }
  // y = h @ Wdown^T (+ b_down)                                     h (n, F) -> y (n, E)
  matmul(l.ffn_down, h, n, y_.data(), pool);
  if (!l.ffn_down_b.empty()) {
    for (int64_t t = 0; t < n; ++t) add(y_.data() + t * E, l.ffn_down_b.data(), E);
  }
  // x = layernorm(x + y) * layer_out_norm + layer_out_norm_b
  add_norm(y_.data(), l.layer_out_norm, l.layer_out_norm_b, n);
}

void Encoder::add_norm(const float* y, const std::vector<float>& w, const std::vector<float>& b, int64_t n) {
  const int64_t E = hp_.n_embd;
  for (int64_t t = 0; t < n; ++t) {
    float* x = x_.data() + t * E;
    add(x, y + t * E, E);
    layernorm(x, x, w.data(), b.data(), E, hp_.norm_eps);
  }
}

}  // namespace engine
