// lfm2's gated short convolution layers, as a member of Forward; read with forward.cpp and
// forward_delta.cpp (whose causal conv and recurrent bookkeeping it shares). Top to bottom:
//   norm -> in_proj: b, c, h -> b * h -> per sequence: conv1d over its last d_conv inputs (no
//   activation; the state in the cache's RecurrentCache) -> c * conv -> out_proj -> residual.
#include "engine/kernels/matmul.h"
#include "engine/model/forward.h"
#include "engine/model/ops.h"

namespace engine {

void Forward::short_conv_block(int64_t il, int64_t n, KvCache& cache, ThreadPool& pool) {
  const LayerWeights& l = model_.layers[static_cast<size_t>(il)];
  const int64_t E = hp_.n_embd;
  // xb = rmsnorm(x) * attn_norm                  x (n, E) -> xb (n, E)
  for_each_token(n, pool, [&](int64_t t) {
    rmsnorm(xb_.data() + t * E, x_.data() + t * E, l.attn_norm.data(), E, hp_.rms_eps);
  });
  observe("attn_norm", il, n, E, xb_.data());
  // bch = xb @ in_proj^T                         xb (n, E) -> bch (n, 3E): b, c, h
  matmul(l.sc.in_proj, xb_.data(), n, sc_bch_.data(), pool);
  // in = b * h                                   (n, E): the conv's inputs
  for_each_token(n, pool, [&](int64_t t) {
    const float* bch = sc_bch_.data() + t * 3 * E;
    float* in = dn_in_.data() + t * E;
    for (int64_t c = 0; c < E; ++c) in[c] = bch[c] * bch[2 * E + c];
  });
  // conv = the causal conv over each sequence's last d_conv inputs   (n, E)
  recurrent_conv(l.sc.conv, rec_index_[static_cast<size_t>(il)], n, false, cache, pool);
  // y = c * conv                                 (n, E)
  for_each_token(n, pool, [&](int64_t t) {
    const float* c_gate = sc_bch_.data() + t * 3 * E + E;
    const float* conv = dn_conv_.data() + t * E;
    float* y = dn_out_.data() + t * E;
    for (int64_t c = 0; c < E; ++c) y[c] = c_gate[c] * conv[c];
  });
  // xb2 = y @ out_proj^T                         y (n, E) -> xb2 (n, E)
  matmul(l.sc.out_proj, dn_out_.data(), n, xb2_.data(), pool);
  add_residual(l.post_attn_norm, n, pool);
  observe("attn_out", il, n, E, xb2_.data());
  observe("ffn_inp", il, n, E, x_.data());
}

}  // namespace engine
