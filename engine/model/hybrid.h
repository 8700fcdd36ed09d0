// Hybrid stacks: the hyperparameters and weights of their recurrent layers -- Gated DeltaNet
// (linear attention: qwen35, qwen35moe, qwen3next) or gated short convolutions (lfm2) -- and of
// the NextN / multi-token-prediction block a file may append after the stack.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/matmul.h"

namespace engine {

// A Gated DeltaNet layer, per token x (n_embd,):
//   qkv = conv1d(Wqkv x) over the last d_conv tokens, silu    -> q, k (n_k_heads, d_state), v (n_v_heads, d_state)
//   q, k L2-normalized per head; beta = sigmoid(Wbeta x); gate = softplus(Walpha x + dt_bias) * a (log-decay)
//   o = the gated delta rule per value head (kernels/delta_rule.h), reading the key head k_head(h)
//   out = Wout (rmsnorm(o_h) * ssm_norm * silu(z_h) per head), z = Wz x
// Its state per sequence: the last d_conv - 1 inputs of the conv and each value head's (d_state,
// d_state) matrix.
//
// lfm2's gated short convolution (short_conv) is the conv part alone, per token x (n_embd,):
//   b, c, h = Win x (three n_embd rows); out = Wout (c * conv1d(b * h) over the last d_conv tokens)
// with d_inner = n_embd channels and no delta rule (no heads, d_state 0): its state is the conv's
// last d_conv - 1 inputs.
struct DeltaNetParams {
  int64_t d_conv = 0;     // ssm.conv_kernel
  int64_t d_state = 0;    // ssm.state_size: the head size of q, k and v
  int64_t n_k_heads = 0;  // ssm.group_count
  int64_t n_v_heads = 0;  // ssm.time_step_rank
  int64_t d_inner = 0;    // ssm.inner_size: n_v_heads * d_state
  // How value heads share key heads (n_v_heads a multiple of n_k_heads): qwen3next repeats each
  // key head for consecutive value heads (h / ratio), qwen35 cycles through them (h % n_k_heads).
  bool grouped_heads = false;
  bool short_conv = false;  // lfm2: gated short convolutions (shortconv.l_cache = d_conv)

  bool enabled() const { return d_conv > 0; }
  int64_t key_dim() const { return n_k_heads * d_state; }
  int64_t conv_channels() const { return 2 * key_dim() + d_inner; }  // q, k, v
  int64_t k_head(int64_t h) const { return grouped_heads ? h / (n_v_heads / n_k_heads) : h % n_k_heads; }
  // Floats of one layer's state: the delta-rule matrices and the conv's past inputs.
  int64_t state_floats() const { return n_v_heads * d_state * d_state; }
  int64_t conv_floats() const { return (d_conv - 1) * conv_channels(); }
};

// One Gated DeltaNet layer's weights (views into the file; small vectors as f32 copies). The input
// projections come as attn_qkv + attn_gate + ssm_beta + ssm_alpha (qwen35; qwen3next's current
// files with ssm_ba in place of beta and alpha) or as qwen3next's older fused ssm_in.
struct DeltaNetWeights {
  Matrix wqkv;     // (conv_channels, n_embd) attn_qkv: q, k, v before the conv
  Matrix wz;       // (d_inner, n_embd) attn_gate: the output gate z
  Matrix w_beta;   // (n_v_heads, n_embd) ssm_beta
  Matrix w_alpha;  // (n_v_heads, n_embd) ssm_alpha
  // qwen3next: (2 n_v_heads, n_embd) ssm_ba, per key head its ratio betas then its ratio alphas
  Matrix w_ba;
  // qwen3next's older files: (2 key_dim + 2 d_inner, n_embd) ssm_in, per key head q (d_state),
  // k (d_state), v (ratio d_state), z (ratio d_state); in place of wqkv and wz.
  Matrix w_in;
  std::vector<float> conv;     // (conv_channels, d_conv) ssm_conv1d: channel c's taps, oldest first
  std::vector<float> dt_bias;  // (n_v_heads,) ssm_dt.bias
  std::vector<float> a;        // (n_v_heads,) ssm_a = -exp(A_log)
  std::vector<float> norm;     // (d_state,) ssm_norm
  Matrix w_out;    // (n_embd, d_inner) ssm_out

  bool present() const { return w_out.data != nullptr; }
};

// One gated short convolution layer's weights (lfm2; views into the file, the taps as f32).
struct ShortConvWeights {
  Matrix in_proj;           // (3 n_embd, n_embd) shortconv.in_proj: rows b, then c, then h
  std::vector<float> conv;  // (n_embd, d_conv) shortconv.conv: channel c's taps, oldest first
  Matrix out_proj;          // (n_embd, n_embd) shortconv.out_proj
};

// The NextN / MTP block of qwen35 files (nextn_predict_layers): a full-attention block fed by
// eh_proj [enorm(embedding of the next token); hnorm(the main stack's final hidden state)],
// predicting the token after next. Loaded and checked; drafting with it is not implemented.
struct NextNWeights {
  Matrix eh_proj;                        // (n_embd, 2 n_embd)
  std::vector<float> enorm, hnorm;       // (n_embd,)
  std::vector<float> shared_head_norm;   // (n_embd,) optional (else output_norm)
  Matrix embed_tokens;                   // (n_vocab, n_embd) optional (else token_embd)
  Matrix shared_head_head;               // (n_vocab, n_embd) optional (else output)
};

}  // namespace engine
