// The gated delta rule of Gated DeltaNet layers (qwen35, qwen3next), in the chunked form: one head,
// one row (token) of a chunk at a time, and the state at the chunk's end.
//
// The recurrence (one head; S is (d_v, d_k), row j of S holds the k-weights of value dim j):
//   S'_t = g_t S_{t-1}                       g_t = exp(gate_t) in (0, 1]
//   d_t  = beta_t (v_t - S'_t k_t)            the "new value" the token writes
//   S_t  = S'_t + d_t k_t^T
//   o_t  = scale * S_t q_t
// Chunked: with S_0 the state at the chunk's start and G_t = gate_0 + ... + gate_t (log-decay
// since the chunk's start), every S'_t is gamma_t S_0 + sum_{s<t} e^{G_t - G_s} d_s k_s^T, so
//   d_t = beta_t (v_t - e^{G_t} S_0 k_t - sum_{s<t} e^{G_t - G_s} (k_s . k_t) d_s)
//   o_t = scale (e^{G_t} S_0 q_t + sum_{s<t} e^{G_t - G_s} (k_s . q_t) d_s + (k_t . q_t) d_t)
//   S_C = e^{G_{C-1}} S_0 + sum_s e^{G_{C-1} - G_s} d_s k_s^T         (after the chunk's C tokens)
// Row t reads only S_0 and rows s < t, so a row's result does not depend on how many rows of its
// chunk are computed together: a token gets the same bits in a prefill run, a decode step or a
// verification of drafts. (ggml_gated_delta_net runs the plain recurrence; the two agree to
// float rounding.)
#pragma once

#include <cstddef>
#include <cstdint>

namespace engine::kernels {

// Row t of one head's chunk. Rows s < t of k / d / G were written by earlier calls.
struct DeltaRowArgs {
  const float* s0;   // (d_v, d_k) the head's state at the chunk's start
  const float* k;    // k rows of the chunk, row s at k + s * k_stride (d_k,), L2-normalized; row t is the token's
  size_t k_stride;
  float* d;          // new-value rows, row s at d + s * d_stride (d_v,); row t is written
  size_t d_stride;
  const float* G;    // G rows, G[s * G_stride]: log-decay since the chunk's start, row t included
  size_t G_stride;
  int t;             // the row: 0 .. chunk size - 1
  const float* q;    // (d_k,) the token's query, L2-normalized
  const float* v;    // (d_v,) its value
  float beta;        // its write strength, in (0, 1)
  float scale;       // 1 / sqrt(d_k)
  float* o;          // (d_v,) out: the token's output
  int64_t d_k, d_v;
  float* scratch;    // (2 * d_v + 2 * (t + 1),) floats
};
using DeltaRowFn = void (*)(const DeltaRowArgs& a);

// s_end (d_v, d_k) = e^{G[n-1]} s0 + sum_{s<n} e^{G[n-1] - G[s]} d_s k_s^T over the chunk's n rows
// (k, d, G as in DeltaRowArgs). s_end must not alias s0.
struct DeltaEndArgs {
  const float* s0;
  const float* k;
  size_t k_stride;
  const float* d;
  size_t d_stride;
  const float* G;
  size_t G_stride;
  int n;
  float* s_end;
  int64_t d_k, d_v;
  float* scratch;    // (n,) floats
};
using DeltaEndFn = void (*)(const DeltaEndArgs& a);

namespace ref {
void delta_row(const DeltaRowArgs& a);
void delta_end(const DeltaEndArgs& a);
// The plain recurrence for one token, in place: s (d_v, d_k) <- the state after the token, o
// (d_v,) its output. gate = log g_t. The test reference of the chunked form, as ggml computes it.
void delta_step(float* s, const float* q, const float* k, const float* v, float gate, float beta, float scale,
                float* o, int64_t d_k, int64_t d_v);
}  // namespace ref

namespace avx2 {
// ref::delta_row / delta_end with 8-wide dot products and updates (the sums in another order).
void delta_row(const DeltaRowArgs& a);
void delta_end(const DeltaEndArgs& a);
}  // namespace avx2

}  // namespace engine::kernels
