// gemma4's additions to the forward pass (forward.h), as llama.cpp's gemma4.cpp orders them:
//   per-layer inputs, once per chunk (P = n_embd_per_layer, L = n_layer):
//     in[t] = (rmsnorm_per_layer(per_layer_model_proj @ x0[t] / sqrt(E)) * per_layer_proj_norm
//              + per_layer_tok_embd[token_t] * sqrt(P)) / sqrt(2)                    (L, P)
//   after each layer's FFN: x += rmsnorm(proj @ (gelu(inp_gate @ x) * in[t, il])) * post_norm
//   MoE layers: the dense FFN and the experts side by side, each post-normed, then summed.
#include <cmath>

#include "engine/kernels/matmul.h"
#include "engine/model/forward.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }

}  // namespace

void Forward::per_layer_inputs(const Batch& batch, int64_t begin, int64_t n, ThreadPool& pool) {
  const int32_t* tokens = batch.tokens.data() + begin;
  const int64_t E = hp_.n_embd, P = hp_.n_embd_per_layer, LP = hp_.n_layer * P;
  // pl_proj = x @ Wplm^T                         x (n, E) -> pl_proj (n, L * P)
  matmul(model_.per_layer_model_proj, x_.data(), n, pl_proj_.data(), pool);
  const float proj_scale = 1.0f / std::sqrt(static_cast<float>(E));
  const float embd_scale = std::sqrt(static_cast<float>(P));
  const float sum_scale = 1.0f / std::sqrt(2.0f);
  for_each_token(n, pool, [&](int64_t t) {
    float* proj = pl_proj_.data() + t * LP;  // (L, P)
    float* in = pl_in_.data() + t * LP;      // (L, P)
    // proj = rmsnorm(proj / sqrt(E)) * per_layer_proj_norm, each layer's P on its own
    scale(proj, proj_scale, LP);
    for (int64_t il = 0; il < hp_.n_layer; ++il) {
      rmsnorm(proj + il * P, proj + il * P, model_.per_layer_proj_norm.data(), P, hp_.rms_eps);
    }
    // in = (proj + per_layer_tok_embd[token] * sqrt(P)) / sqrt(2); an image's row (given in place
    // of a token's embedding) takes token 0's, as llama.cpp's graph does for embeddings
    dequantize_row(model_.per_layer_tok_embd, batch.row(begin + t) != nullptr ? 0 : tokens[t], in);
    scale(in, embd_scale, LP);
    for (int64_t i = 0; i < LP; ++i) in[i] = (proj[i] + in[i]) * sum_scale;
  });
  observe("inp_per_layer", -1, n, LP, pl_in_.data());
}

void Forward::per_layer_block(int64_t il, int64_t n, ThreadPool& pool) {
  const LayerWeights& l = model_.layers[sz(il)];
  const int64_t P = hp_.n_embd_per_layer, LP = hp_.n_layer * P;
  // g = x @ Wgate^T                              x (n, E) -> g (n, P)
  matmul(l.per_layer_inp_gate, x_.data(), n, pl_gate_.data(), pool);
  // g = gelu(g) * in[t, il]                      (n, P)
  for_each_token(n, pool, [&](int64_t t) {
    float* g = pl_gate_.data() + t * P;
    gelu(g, P);
    mul(g, pl_in_.data() + t * LP + il * P, P);
  });
  // xb2 = g @ Wproj^T                            g (n, P) -> xb2 (n, E); then post-norm, x += xb2
  matmul(l.per_layer_proj, pl_gate_.data(), n, xb2_.data(), pool);
  add_residual(l.per_layer_post_norm, n, pool);
  observe("per_layer_out", il, n, hp_.n_embd, x_.data());
}

void Forward::ffn_beside_experts(const LayerWeights& l, int64_t n, ThreadPool& pool) {
  const int64_t E = hp_.n_embd;
  // ys = rmsnorm(dense FFN of xb) * post_ffn_norm_1          xb (n, E) -> ys (n, E)
  dense_ffn(l, n, pool);
  for_each_token(n, pool, [&](int64_t t) {
    rmsnorm(ys_.data() + t * E, xb2_.data() + t * E, l.post_ffn_norm_1.data(), E, hp_.rms_eps);
  });
  // the experts' input xb = rmsnorm(x) * pre_ffn_norm_2; the router's xr = rmsnorm(x) / sqrt(E) *
  // ffn_gate_inp_scale                                       x (n, E) -> xb, xr (n, E)
  const float router_scale = 1.0f / std::sqrt(static_cast<float>(E));
  for_each_token(n, pool, [&](int64_t t) {
    const float* x = x_.data() + t * E;
    float* xr = xr_.data() + t * E;
    rmsnorm(xb_.data() + t * E, x, l.pre_ffn_norm_2.data(), E, hp_.rms_eps);
    rmsnorm(xr, x, nullptr, E, hp_.rms_eps);
    scale(xr, router_scale, E);
    mul(xr, l.ffn_gate_inp_scale.data(), E);
  });
  // xb2 = rmsnorm(experts of xb) * post_ffn_norm_2 + ys      (n, E)
  moe_ffn(l, xr_.data(), n, pool);
  for_each_token(n, pool, [&](int64_t t) {
    float* y = xb2_.data() + t * E;
    rmsnorm(y, y, l.post_ffn_norm_2.data(), E, hp_.rms_eps);
    add(y, ys_.data() + t * E, E);
  });
}

}  // namespace engine
