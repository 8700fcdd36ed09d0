// The forward pass of a llama-family transformer over a batch of tokens, read top to bottom:
//   embed (* scale) -> per layer:
//     [norm, Q/K/V, (bias), (q/k norm), rope, store K/V, attention (window, soft-cap), output
//      projection, (post-norm), residual]
//     [norm, gate/up, act(gate) * up, down -- or the top-k experts' -- (post-norm), residual]
//   -> final norm -> logits (soft-cap, scale).
// What varies by architecture is data in HParams (arch.h's table and hparams.cpp fill it).
#include "engine/model/forward.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/kernels/flash_attn.h"
#include "engine/kernels/matmul.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

RopeParams Forward::rope_params(int n_rot, float base, float scale, const float* factors) const {
  RopeParams rp;
  rp.n_rot = n_rot;
  rp.freq_base = base;
  rp.freq_scale = scale;
  rp.freq_factors = factors;
  rp.mscale = hp_.rope_attn_factor;
  rp.ext_factor = hp_.yarn_ext_factor;
  if (rp.ext_factor != 0.0f) yarn_corr_dims(rp, hp_.n_ctx_orig, hp_.yarn_beta_fast, hp_.yarn_beta_slow);
  return rp;
}

Forward::Forward(const Model& model, int64_t max_batch, int64_t n_ctx_seq)
    : model_(model),
      hp_(model.hparams()),
      max_batch_(max_batch),
      attention_(hp_),
      has_swa_(std::find(hp_.swa_layer.begin(), hp_.swa_layer.end(), 1) != hp_.swa_layer.end()) {
  if (max_batch <= 0) throw std::invalid_argument("max_batch must be positive");
  const float* factors = model.rope_factors(n_ctx_seq > 0 ? n_ctx_seq : hp_.n_ctx_train);
  rope_params_ = rope_params(hp_.n_rot, hp_.rope_freq_base, hp_.rope_freq_scale, factors);
  rope_params_.imrope = hp_.imrope;
  std::copy(std::begin(hp_.rope_sections), std::end(hp_.rope_sections), rope_params_.sections);
  rope_params_swa_ = rope_params(hp_.rot_swa(), hp_.rope_freq_base_swa, hp_.rope_freq_scale_swa,
                                 hp_.rope_factors_swa ? factors : nullptr);
  const int64_t B = max_batch;
  x_.resize(sz(B * hp_.n_embd));
  xb_.resize(sz(B * hp_.n_embd));
  xb2_.resize(sz(B * hp_.n_embd));
  q_.resize(sz(B * hp_.n_head * hp_.max_head_k()));
  k_.resize(sz(B * hp_.n_head_kv * hp_.max_head_k()));
  v_.resize(sz(B * hp_.n_head_kv * hp_.max_head_v()));
  att_.resize(sz(B * hp_.n_head * hp_.max_head_v()));
  if (hp_.n_expert == 0 || hp_.experts_beside_ffn || hp_.n_layer_dense_lead > 0) {  // a dense FFN somewhere
    hb_.resize(sz(B * hp_.n_ff));
    hb2_.resize(sz(B * hp_.n_ff));
  }
  rope_.resize(sz(B * hp_.n_rot));
  if (has_swa_) rope_swa_.resize(sz(B * hp_.rot_swa()));
  if (hp_.n_embd_per_layer > 0) {
    pl_in_.resize(sz(B * hp_.n_layer * hp_.n_embd_per_layer));
    pl_proj_.resize(sz(B * hp_.n_layer * hp_.n_embd_per_layer));
    pl_gate_.resize(sz(B * hp_.n_embd_per_layer));
  }
  cells_.resize(sz(B));
  window_cells_.resize(sz(B));
  xout_.resize(sz(B * hp_.n_embd));
  if (hp_.attn_out_gate) {
    qg_.resize(sz(B * 2 * hp_.q_dim()));
    qgate_.resize(sz(B * hp_.q_dim()));
  }
  if (hp_.ssm.enabled()) {
    const DeltaNetParams& s = hp_.ssm;
    rec_index_.assign(sz(hp_.n_layer), -1);
    for (int64_t il = 0, r = 0; il < hp_.n_layer; ++il) {
      if (hp_.recurrent(il)) rec_index_[sz(il)] = r++;
    }
    tok_run_.resize(sz(B));
    tok_pos_.resize(sz(B));
    dn_in_.resize(sz(B * (2 * s.key_dim() + 2 * s.d_inner)));
    dn_z_.resize(sz(B * s.d_inner));
    dn_ba_.resize(sz(B * 2 * s.n_v_heads));
    dn_conv_.resize(sz(B * s.conv_channels()));
    dn_beta_.resize(sz(B * s.n_v_heads));
    dn_gate_.resize(sz(B * s.n_v_heads));
    dn_out_.resize(sz(B * s.d_inner));
    if (s.short_conv) sc_bch_.resize(sz(B * 3 * hp_.n_embd));
  }
  if (hp_.n_expert > 0) {
    router_.resize(sz(B * hp_.n_expert));
    order_.resize(sz(hp_.n_expert));
    if (hp_.expert_selection_bias) score_.resize(sz(hp_.n_expert));
    sel_.resize(sz(B * hp_.n_expert_used));
    selw_.resize(sz(B * hp_.n_expert_used));
    const int64_t BK = B * hp_.n_expert_used;
    first_.resize(sz(hp_.n_expert + 1));
    cursor_.resize(sz(hp_.n_expert));
    rows_.resize(sz(BK));
    xe_.resize(sz(BK * hp_.n_embd));
    he_.resize(sz(BK * hp_.n_ff_exp));
    he2_.resize(sz(BK * hp_.n_ff_exp));
    ye_.resize(sz(BK * hp_.n_embd));
    if (hp_.n_ff_shexp > 0) {  // the shared expert's hidden rows in hb_ / hb2_, its output in ys_
      hb_.resize(std::max(hb_.size(), sz(B * hp_.n_ff_shexp)));
      hb2_.resize(std::max(hb2_.size(), sz(B * hp_.n_ff_shexp)));
      ys_.resize(sz(B * hp_.n_embd));
    }
    if (hp_.experts_beside_ffn) {  // the dense branch's output in ys_, the router's input in xr_
      ys_.resize(sz(B * hp_.n_embd));
      xr_.resize(sz(B * hp_.n_embd));
    }
  }
}

void Forward::check_tokens(const Batch& batch) const {
  const int64_t n = batch.size();
  if (sz(n) != batch.seq.size() || sz(n) != batch.pos.size() || sz(n) != batch.logits.size()) {
    throw std::invalid_argument("batch: tokens, seq, pos and logits differ in length");
  }
  if (!batch.embd.empty() && (batch.embd.size() != sz(n) || batch.see.size() != sz(n))) {
    throw std::invalid_argument("batch: embedding rows and positions seen differ in length from the tokens");
  }
  if (!batch.mrope.empty() && batch.mrope.size() != sz(n)) {
    throw std::invalid_argument("batch: M-RoPE positions differ in length from the tokens");
  }
  for (int64_t i = 0; i < n; ++i) {
    if (batch.row(i) == nullptr && (batch.tokens[sz(i)] < 0 || batch.tokens[sz(i)] >= hp_.n_vocab)) {
      throw std::invalid_argument("batch: token id " + std::to_string(batch.tokens[sz(i)]) +
                                  " is outside the vocabulary [0, " + std::to_string(hp_.n_vocab) + ")");
    }
    // a token that sees past itself: the rest of its span follows it in the same chunk
    if (!batch.see.empty() && batch.see[sz(i)] != batch.pos[sz(i)]) {
      const int64_t last = i + (batch.see[sz(i)] - batch.pos[sz(i)]);
      if (batch.see[sz(i)] < batch.pos[sz(i)] || last >= n || last / max_batch_ != i / max_batch_ ||
          batch.seq[sz(last)] != batch.seq[sz(i)] || batch.pos[sz(last)] != batch.see[sz(i)]) {
        throw std::invalid_argument("batch: entry " + std::to_string(i) + " sees up to position " +
                                    std::to_string(batch.see[sz(i)]) + ", which does not follow it in its chunk");
      }
    }
    if (batch.pos[sz(i)] < 0) {
      throw std::invalid_argument("batch: negative position " + std::to_string(batch.pos[sz(i)]));
    }
  }
}

void Forward::eval(const Batch& batch, KvCache& cache, ThreadPool& pool) {
  const int64_t n = batch.size();
  check_tokens(batch);
  if (hp_.ssm.enabled()) check_recurrent(batch, cache);
  n_outputs_ = batch.n_outputs();
  n_hidden_ = batch.n_hidden();
  route_margin_.assign(hp_.n_expert > 0 ? sz(n) : 0, 1.0f);
  logits_.resize(sz(n_outputs_ * hp_.n_vocab));
  hidden_.resize(sz(n_hidden_ * hp_.n_embd));
  hidden_end_ = 0;
  float* out = logits_.data();
  for (int64_t begin = 0; begin < n; begin += max_batch_) {
    const int64_t end = std::min(n, begin + max_batch_);
    chunk_begin_ = begin;
    eval_chunk(batch, begin, end, cache, pool);
    slide_windows(batch, begin, end, cache);
    out = output_head(batch, begin, end, out, pool);
    if (cache.nextn()) nextn_mirror(batch, begin, end, cache, pool);  // (after the head: it overwrites x_)
  }
}

void Forward::eval_chunk(const Batch& batch, int64_t begin, int64_t end, KvCache& cache,
                         ThreadPool& pool) {
  const int64_t n = end - begin, E = hp_.n_embd;
  const int32_t* tokens = batch.tokens.data() + begin;
  const SeqId* seq = batch.seq.data() + begin;
  const int32_t* pos = batch.pos.data() + begin;
  for (int64_t t = 0; t < n; ++t) {
    // x[t] = token_embd[token] * embd_scale      token_embd (n_vocab, E) -> x (E,)
    //   or the row given in its place (an image's: not scaled, as llama.cpp's graphs skip it)
    if (const float* row = batch.row(begin + t)) {
      std::copy_n(row, E, x_.data() + t * E);
    } else {
      dequantize_row(model_.tok_embd, tokens[t], x_.data() + t * E);
      if (hp_.embd_scale != 1.0f) scale(x_.data() + t * E, hp_.embd_scale, E);
    }
    // the token's cache cell, and its rope angles (n_rot/2, 2): global and sliding layers'
    cells_[sz(t)] = cache.cell_for(seq[t], pos[t]);
    if (cache.n_window_cells() > 0) {
      window_cells_[sz(t)] = cache.cell_for(seq[t], pos[t], KvCache::Pool::kWindow);
    }
    if (batch.mrope.empty()) {
      rope_angles(rope_.data() + t * hp_.n_rot, pos[t], rope_params_);
    } else {  // M-RoPE positions (a qwen-vl image's tokens, the text after one)
      rope_angles_multi(rope_.data() + t * hp_.n_rot, batch.mrope[sz(begin + t)].data(), rope_params_);
    }
    if (has_swa_) rope_angles(rope_swa_.data() + t * hp_.rot_swa(), pos[t], rope_params_swa_);
  }
  observe("inp_embd", -1, n, E, x_.data());
  if (hp_.n_embd_per_layer > 0) per_layer_inputs(batch, begin, n, pool);
  // the chunk's sequences and their cached keys (and what an image's tokens see)
  attention_.prepare(n, seq, pos, cache, batch.see.empty() ? nullptr : batch.see.data() + begin);
  if (hp_.ssm.enabled()) plan_recurrent(n, seq, pos, cache);
  for (int64_t il = 0; il < hp_.n_layer; ++il) {
    if (hp_.recurrent(il) && hp_.ssm.short_conv) {
      short_conv_block(il, n, cache, pool);
    } else if (hp_.recurrent(il)) {
      delta_net_block(il, n, cache, pool);
    } else {
      attention_block(il, n, pos, cache, pool);
    }
    ffn_block(il, n, pool);
    if (hp_.n_embd_per_layer > 0) per_layer_block(il, n, pool);
    if (const std::vector<float>& s = model_.layers[sz(il)].out_scale; !s.empty()) scale(x_.data(), s[0], n * E);
    // deepstack (qwen3vl): x[t] += row[t][(il + 1) E, (il + 2) E) for an image's rows
    if (il < hp_.n_deepstack) {
      for (int64_t t = 0; t < n; ++t) {
        if (const float* row = batch.row(begin + t)) add(x_.data() + t * E, row + (il + 1) * E, E);
      }
    }
    observe("l_out", il, n, E, x_.data());
  }
  if (hp_.ssm.enabled()) finish_recurrent(cache);
}

void Forward::slide_windows(const Batch& batch, int64_t begin, int64_t end, KvCache& cache) {
  if (cache.n_window_cells() == 0) return;
  // Each sequence's last token in the chunk (found from the back; a batch holds few sequences).
  slid_.clear();
  for (int64_t t = end - 1; t >= begin; --t) {
    const SeqId s = batch.seq[sz(t)];
    if (std::find(slid_.begin(), slid_.end(), s) != slid_.end()) continue;
    slid_.push_back(s);
    cache.slide_window(s, batch.pos[sz(t)] + 1);
  }
}

void Forward::attention_block(int64_t il, int64_t n, const int32_t* pos,
                              KvCache& cache, ThreadPool& pool) {
  const LayerWeights& l = layer(il);
  const int64_t E = hp_.n_embd;

  // xb = rmsnorm(x) * attn_norm                  x (n, E) -> xb (n, E)
  for_each_token(n, pool, [&](int64_t t) {
    rmsnorm(xb_.data() + t * E, x_.data() + t * E, l.attn_norm.data(), E, hp_.rms_eps);
  });
  observe("attn_norm", il, n, E, xb_.data());
  // Q = xb @ Wq^T, K = xb @ Wk^T, V = xb @ Wv^T  xb (n, E) -> q (n, q_dim), k (n, k_dim), v (n, v_dim)
  // of the layer (one group: xb is converted once, and the threads share the products' row chunks)
  // (attn_out_gate: Q and its gate, (n, 2 * q_dim), then split; a layer reusing another's K/V: Q
  // only; without Wv: V = K's projection, copied in prepare_qkv)
  const MatmulJob qkv[] = {{&l.wq, xb_.data(), n, hp_.attn_out_gate ? qg_.data() : q_.data()},
                           {&l.wk, xb_.data(), n, k_.data()}, {&l.wv, xb_.data(), n, v_.data()}};
  matmul_group(std::span(qkv, !hp_.own_kv(il) ? 1 : l.wv.data ? 3 : 2), pool);
  if (hp_.attn_out_gate) split_q_gate(n);

  // Per token: biases, per-head q/k norms, rope; then K/V into the token's cache cell.
  pool.run([&](int ith, int nth) {
    for (int64_t t = ith; t < n; t += nth) prepare_qkv(il, t, pos[t], cache);
  });
  observe("q", il, n, hp_.q_dim(il), q_.data());
  if (hp_.own_kv(il)) {
    observe("k", il, n, hp_.k_dim(il), k_.data());
    observe("v", il, n, hp_.v_dim(il), v_.data());
  }

  // att[t, h] = softmax(kq_scale * q[t, h] . K[seq_t, window of pos_t]) @ V[...]   (n, n_head * head_v(il))
  attention_.run(il, l.attn_sinks, q_.data(), cache, att_.data(), pool);
  observe("kqv_out", il, n, hp_.n_head * hp_.head_v(il), att_.data());
  if (hp_.attn_out_gate) gate_attention(n);  // att *= sigmoid(gate)

  // xb2 = att @ Wo^T (+ bo)                      att (n, n_head * head_v(il)) -> xb2 (n, E)
  matmul(l.wo, att_.data(), n, xb2_.data(), pool);
  if (!l.bo.empty()) {
    for (int64_t t = 0; t < n; ++t) add(xb2_.data() + t * E, l.bo.data(), E);
  }
  add_residual(l.post_attn_norm, n, pool);
  observe("attn_out", il, n, E, xb2_.data());
  observe("ffn_inp", il, n, E, x_.data());
}

void Forward::add_residual(const std::vector<float>& post_norm, int64_t n, ThreadPool& pool) {
  const int64_t E = hp_.n_embd;
  for_each_token(n, pool, [&](int64_t t) {
    float* y = xb2_.data() + t * E;
    // xb2 = rmsnorm(xb2) * post_norm (gemma); xb2 *= residual_scale (granite)
    if (!post_norm.empty()) rmsnorm(y, y, post_norm.data(), E, hp_.rms_eps);
    if (hp_.residual_scale != 1.0f) scale(y, hp_.residual_scale, E);
    // x += xb2                                   residual
    add(x_.data() + t * E, y, E);
  });
}

void Forward::prepare_qkv(int64_t il, int64_t t, int32_t pos, KvCache& cache) {
  const LayerWeights& l = layer(il);
  const int64_t hd = hp_.head_k(il), qd = hp_.q_dim(il), kd = hp_.k_dim(il), vd = hp_.v_dim(il);
  const int n_rot = hp_.rot(il);
  float* q = q_.data() + t * qd;  // (n_head, head_k(il))
  float* k = k_.data() + t * kd;  // (n_head_kv, head_k(il))
  float* v = v_.data() + t * vd;  // (n_head_kv, head_v(il))
  if (!l.bq.empty()) add(q, l.bq.data(), qd);
  const bool use_rope = hp_.uses_rope(il);
  const float* angles = hp_.swa(il) ? rope_swa_.data() + t * hp_.rot_swa() : rope_.data() + t * hp_.n_rot;  // (n_rot/2, 2)
  for (int64_t h = 0; h < hp_.n_head; ++h) {
    if (!l.q_norm.empty()) rmsnorm(q + h * hd, q + h * hd, l.q_norm.data(), hd, hp_.rms_eps);
    if (use_rope) rope(q + h * hd, angles, n_rot, hp_.rope_style);
  }
  if (hp_.q_scale != 1.0f) scale(q, hp_.q_scale, qd);  // gemma, phi3: Q itself scaled
  if (hp_.attn_temp_scale != 0.0f) {  // mistral3: Q *= 1 + s ln(floor(pos / floor) + 1)
    const float p = std::floor(static_cast<float>(pos) / static_cast<float>(hp_.attn_temp_floor));
    scale(q, static_cast<float>(std::log(p + 1.0) * hp_.attn_temp_scale + 1.0), qd);
  }
  if (!hp_.own_kv(il)) return;  // (it reads another layer's K/V)
  if (!l.wv.data) std::copy(k, k + kd, v);  // V = K's projection (gemma4 without attn_v)
  if (!l.bk.empty()) add(k, l.bk.data(), kd);
  if (!l.bv.empty()) add(v, l.bv.data(), vd);
  for (int64_t h = 0; h < hp_.n_head_kv; ++h) {
    if (!l.k_norm.empty()) rmsnorm(k + h * hd, k + h * hd, l.k_norm.data(), hd, hp_.rms_eps);
    if (use_rope) rope(k + h * hd, angles, n_rot, hp_.rope_style);
  }
  if (hp_.v_norm) {  // per head, without a weight (gemma4)
    for (int64_t h = 0; h < hp_.n_head_kv; ++h) rmsnorm(v + h * hp_.head_v(il), v + h * hp_.head_v(il), nullptr, hp_.head_v(il), hp_.rms_eps);
  }
  // cache K[il, cell] = k (k_dim,), V[il, cell] = v (v_dim,), in the layer's pool
  const int32_t cell = (cache.pool(il) == KvCache::Pool::kWindow ? window_cells_ : cells_)[sz(t)];
  kernels::kv_store(cache.elem(), k, cache.k_row(il, cell), kd);
  kernels::kv_store(cache.elem(), v, cache.v_row(il, cell), vd);
}

void Forward::ffn_block(int64_t il, int64_t n, ThreadPool& pool) {
  const LayerWeights& l = layer(il);
  const int64_t E = hp_.n_embd;
  // xb = rmsnorm(x) * ffn_norm                   x (n, E) -> xb (n, E)
  for_each_token(n, pool, [&](int64_t t) {
    rmsnorm(xb_.data() + t * E, x_.data() + t * E, l.ffn_norm.data(), E, hp_.rms_eps);
  });
  observe("ffn_norm", il, n, E, xb_.data());
  if (l.gate_exps.empty()) {
    dense_ffn(l, n, pool);
    observe("ffn_act", il, n, hp_.n_ff, hb_.data());  // act(gate) * up, still in hb
  } else if (l.ffn_gate.data) {
    ffn_beside_experts(l, n, pool);
  } else {
    moe_ffn(l, xb_.data(), n, pool);
  }
  add_residual(l.post_ffn_norm, n, pool);
  observe("ffn_out", il, n, E, xb2_.data());
}

void Forward::ffn_act(float* gate, const float* up, int64_t n) const {
  switch (hp_.ffn_act) {
    case FfnAct::kSilu: silu_mul(gate, up, n); return;
    case FfnAct::kGeluTanh: gelu_mul(gate, up, n); return;
    case FfnAct::kSwigluOai: swiglu_oai_mul(gate, up, n); return;
  }
}

void Forward::dense_ffn(const LayerWeights& l, int64_t n, ThreadPool& pool) {
  const int64_t F = hp_.n_ff;
  // hb = xb @ Wgate^T, hb2 = xb @ Wup^T          xb (n, E) -> hb, hb2 (n, F)
  const MatmulJob gate_up[] = {{&l.ffn_gate, xb_.data(), n, hb_.data()}, {&l.ffn_up, xb_.data(), n, hb2_.data()}};
  matmul_group(gate_up, pool);
  // hb = act(hb) * hb2                           (n, F)
  for_each_token(n, pool, [&](int64_t t) { ffn_act(hb_.data() + t * F, hb2_.data() + t * F, F); });
  // xb2 = hb @ Wdown^T                           hb (n, F) -> xb2 (n, E)
  matmul(l.ffn_down, hb_.data(), n, xb2_.data(), pool);
}

void Forward::route(const LayerWeights& l, const float* in, int64_t n, ThreadPool& pool) {
  const int64_t X = hp_.n_expert, K = hp_.n_expert_used;
  const ExpertGating gating = hp_.expert_gating;
  // router = in @ Wgate_inp^T (+ bias)           in (n, E) -> router (n, X)
  matmul(l.ffn_gate_inp, in, n, router_.data(), pool);
  for (int64_t t = 0; t < n; ++t) {
    float* p = router_.data() + t * X;
    if (!l.ffn_gate_inp_b.empty()) add(p, l.ffn_gate_inp_b.data(), X);
    // p = the gating's probabilities (kSoftmaxTopK: the logits, softmaxed once chosen)
    if (gating == ExpertGating::kSoftmax) softmax(p, X);
    if (gating == ExpertGating::kSigmoid) {
      for (int64_t e = 0; e < X; ++e) p[e] = sigmoid(p[e]);
    }
    // score = what chooses: p, plus the selection bias when the layer has one
    const float* score = p;
    if (!l.ffn_exp_probs_b.empty()) {
      for (int64_t e = 0; e < X; ++e) score_[sz(e)] = p[e] + l.ffn_exp_probs_b[sz(e)];
      score = score_.data();
    }
    // the K best scores, best first (and the runner-up, for the margin)
    for (int32_t e = 0; e < X; ++e) order_[sz(e)] = e;
    const int64_t ranked = std::min(K + 1, X);
    std::partial_sort(order_.begin(), order_.begin() + ranked, order_.end(),
                      [&](int32_t a, int32_t b) { return score[a] > score[b]; });
    if (ranked > K) note_route_margin(t, score, X, K);
    int32_t* sel = sel_.data() + t * K;  // (K,)
    float* w = selw_.data() + t * K;     // (K,)
    float sum = 0.0f;
    for (int64_t j = 0; j < K; ++j) {  // (weights from p: the selection bias never weights)
      sel[j] = order_[sz(j)];
      w[j] = p[sel[j]];
      sum += w[j];
    }
    if (gating == ExpertGating::kSoftmaxTopK) softmax(w, K);
    // renormalized to sum 1 (the sum clamped to f16's smallest normal, as llama.cpp), then scaled
    if (hp_.expert_weights_norm) scale(w, 1.0f / std::max(sum, 6.103515625e-5f), K);
    if (hp_.expert_weights_scale != 0.0f && hp_.expert_weights_scale != 1.0f) scale(w, hp_.expert_weights_scale, K);
  }
}

void Forward::note_route_margin(int64_t t, const float* score, int64_t X, int64_t K) {
  const float last = score[order_[sz(K - 1)]], next = score[order_[sz(K)]];
  float gap = last - next;  // in the selection score (softmax: probability; sigmoid: sigmoid + bias)
  if (hp_.expert_gating == ExpertGating::kSoftmaxTopK) {  // scores are logits: the gap in probability over all experts
    const float top = score[order_[0]];
    float z = 0.0f;
    for (int64_t e = 0; e < X; ++e) z += std::exp(score[e] - top);
    gap = (std::exp(last - top) - std::exp(next - top)) / z;
  }
  float& margin = route_margin_[sz(chunk_begin_ + t)];
  margin = std::min(margin, gap);
}

// The n * K choices are grouped by expert, so each chosen expert's weights are read once for the
// whole batch, and experts no token chose are not read at all; all experts' gate and up products
// (and the shared expert's, for all n tokens) run as one group of the pool, then all their downs.
void Forward::moe_ffn(const LayerWeights& l, const float* router_in, int64_t n, ThreadPool& pool) {
  const int64_t E = hp_.n_embd, F = hp_.n_ff_exp, K = hp_.n_expert_used, X = hp_.n_expert;
  route(l, router_in, n, pool);
  // expert e's rows are [first_[e], first_[e + 1]) of xe (n * K, E); row i is choice rows_[i] (t * K + j)
  std::fill(first_.begin(), first_.end(), 0);
  for (int64_t tj = 0; tj < n * K; ++tj) ++first_[sz(sel_[sz(tj)] + 1)];
  for (int64_t e = 0; e < X; ++e) first_[sz(e + 1)] += first_[sz(e)];
  std::copy(first_.begin(), first_.end() - 1, cursor_.begin());
  for (int64_t tj = 0; tj < n * K; ++tj) {
    const int64_t i = cursor_[sz(sel_[sz(tj)])]++;
    rows_[sz(i)] = static_cast<int32_t>(tj);
    std::copy_n(xb_.data() + (tj / K) * E, E, xe_.data() + i * E);
  }
  // he = xe @ Wgate_e^T, he2 = xe @ Wup_e^T      xe (m, E) -> he, he2 (m, F) for each chosen e
  jobs_.clear();
  for (int64_t e = 0; e < X; ++e) {
    const int64_t i0 = first_[sz(e)], m = first_[sz(e + 1)] - i0;
    if (m == 0) continue;
    jobs_.push_back({&l.gate_exps[sz(e)], xe_.data() + i0 * E, m, he_.data() + i0 * F});
    jobs_.push_back({&l.up_exps[sz(e)], xe_.data() + i0 * E, m, he2_.data() + i0 * F});
  }
  // hs = xb @ Wgate_shexp^T, hs2 = xb @ Wup_shexp^T   xb (n, E) -> hb, hb2 (n, Fs)
  const int64_t Fs = hp_.n_ff_shexp;
  if (Fs > 0) {
    jobs_.push_back({&l.gate_shexp, xb_.data(), n, hb_.data()});
    jobs_.push_back({&l.up_shexp, xb_.data(), n, hb2_.data()});
  }
  matmul_group(jobs_, pool);
  if (!l.gate_exps_b.empty()) {  // (+ the expert's biases: gpt-oss)
    for (int64_t i = 0; i < n * K; ++i) {
      const int64_t e = sel_[sz(rows_[sz(i)])];
      add(he_.data() + i * F, l.gate_exps_b.data() + e * F, F);
      add(he2_.data() + i * F, l.up_exps_b.data() + e * F, F);
    }
  }
  // he = act(he) * he2                           (n * K, F)
  ffn_act(he_.data(), he2_.data(), n * K * F);
  if (Fs > 0) ffn_act(hb_.data(), hb2_.data(), n * Fs);
  // ye = he @ Wdown_e^T                          he (m, F) -> ye (m, E) for each chosen e
  jobs_.clear();
  for (int64_t e = 0; e < X; ++e) {
    const int64_t i0 = first_[sz(e)], m = first_[sz(e + 1)] - i0;
    if (m > 0) jobs_.push_back({&l.down_exps[sz(e)], he_.data() + i0 * F, m, ye_.data() + i0 * E});
  }
  // ys = hs @ Wdown_shexp^T                      hb (n, Fs) -> ys (n, E)
  if (Fs > 0) jobs_.push_back({&l.down_shexp, hb_.data(), n, ys_.data()});
  matmul_group(jobs_, pool);
  // xb2[t] = sum over j of w[t, j] * (ye[i] * down scale + down bias), i the row of choice t * K + j
  std::fill(xb2_.begin(), xb2_.begin() + n * E, 0.0f);
  for (int64_t i = 0; i < n * K; ++i) {
    const int64_t tj = rows_[sz(i)], t = tj / K;
    float* src = ye_.data() + i * E;
    if (!l.down_exps_scale.empty()) scale(src, l.down_exps_scale[sz(sel_[sz(tj)])], E);
    if (!l.down_exps_b.empty()) add(src, l.down_exps_b.data() + sel_[sz(tj)] * E, E);
    const float w = selw_[sz(tj)];
    float* dst = xb2_.data() + t * E;
    for (int64_t c = 0; c < E; ++c) dst[c] += w * src[c];
  }
  // xb2[t] += sigmoid(xb[t] . gate_inp_shexp) * ys[t]
  for (int64_t t = 0; Fs > 0 && t < n; ++t) {
    float g = 0.0f;
    for (int64_t c = 0; c < E; ++c) g += xb_[sz(t * E + c)] * l.ffn_gate_inp_shexp[sz(c)];
    g = sigmoid(g);
    float* dst = xb2_.data() + t * E;
    const float* src = ys_.data() + t * E;
    for (int64_t c = 0; c < E; ++c) dst[c] += g * src[c];
  }
}

float* Forward::output_head(const Batch& batch, int64_t begin, int64_t end, float* out,
                            ThreadPool& pool) {
  const int64_t E = hp_.n_embd;
  // xout[j] = rmsnorm(x[t]) * output_norm for the j-th token wanting logits   (m, E)
  // hidden[k] = the same for the k-th token wanting its hidden state          (embeddings)
  int64_t m = 0;
  for (int64_t t = 0; t < end - begin; ++t) {
    const bool logits = batch.logits[sz(begin + t)], hidden = batch.wants_hidden(begin + t);
    if (!logits && !hidden) continue;
    float* row = logits ? xout_.data() + m * E : hidden_.data() + hidden_end_ * E;
    rmsnorm(row, x_.data() + t * E, model_.output_norm.data(), E, hp_.rms_eps);
    if (hidden && logits) std::copy(row, row + E, hidden_.data() + hidden_end_ * E);
    hidden_end_ += hidden;
    m += logits;
  }
  // logits = xout @ Wout^T                       xout (m, E) -> out (m, n_vocab)
  if (m > 0) matmul(model_.output, xout_.data(), m, out, pool);
  // soft-capped (gemma2), divided by logit_scale (granite)
  if (hp_.final_softcap != 0.0f) softcap(out, hp_.final_softcap, m * hp_.n_vocab);
  if (hp_.logit_scale != 1.0f) scale(out, 1.0f / hp_.logit_scale, m * hp_.n_vocab);
  return out + m * hp_.n_vocab;
}

}  // namespace engine
