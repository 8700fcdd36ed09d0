// The hybrid stacks' layers (qwen35, qwen35moe, qwen3next), as members of Forward; read with
// forward.cpp. A Gated DeltaNet layer, top to bottom:
//   norm -> projections (q/k/v before the conv, z, beta, alpha) -> per sequence: conv1d over its
//   last d_conv inputs, silu, L2 norms of q and k -> the chunked delta rule per value head
//   (kernels/delta_rule.h, its state in the cache's RecurrentCache) -> rmsnorm * silu(z) per head
//   -> output projection -> residual.
// And the gated attention of their other layers: Q's gate rows, att *= sigmoid(gate).
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/matmul.h"
#include "engine/model/forward.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

constexpr int32_t C = RecurrentCache::kChunk;

size_t sz(int64_t n) { return static_cast<size_t>(n); }

float softplus(float x) { return x > 20.0f ? x : std::log(1.0f + std::exp(x)); }  // (as ggml)
float silu(float x) { return x / (1.0f + std::exp(-x)); }

// x (n,) /= max(|x|, eps), the squares summed in double (ggml_l2_norm).
void l2norm(float* x, int64_t n, float eps) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  scale(x, 1.0f / std::fmax(std::sqrt(static_cast<float>(sum)), eps), n);
}

template <class Fn>
void for_each_row(int64_t n, ThreadPool& pool, const Fn& fn) {
  if (n < 16 || pool.size() < 2) {
    for (int64_t t = 0; t < n; ++t) fn(t);
    return;
  }
  pool.run([&](int ith, int nth) {
    for (int64_t t = n * ith / nth, end = n * (ith + 1) / nth; t < end; ++t) fn(t);
  });
}

}  // namespace

void Forward::check_recurrent(const Batch& batch, const KvCache& cache) const {
  const RecurrentCache* rc = cache.recurrent();
  if (rc == nullptr) throw std::invalid_argument("batch: a hybrid model needs a KV cache built for it");
  std::vector<std::pair<SeqId, int32_t>> next;  // each sequence's next position (a batch holds few)
  for (size_t i = 0; i < batch.tokens.size(); ++i) {
    const SeqId s = batch.seq[i];
    auto it = std::find_if(next.begin(), next.end(), [&](const auto& e) { return e.first == s; });
    if (it == next.end()) it = next.insert(next.end(), {s, rc->length(s)});
    if (batch.pos[i] != it->second) {
      throw std::invalid_argument("batch: position " + std::to_string(batch.pos[i]) + " of sequence " +
                                  std::to_string(s) + " does not continue its recurrent state, which has taken in " +
                                  std::to_string(it->second) + " positions (truncate the sequence first)");
    }
    ++it->second;
  }
}

void Forward::plan_recurrent(int64_t n, const SeqId* seq, const int32_t* pos, KvCache& cache) {
  RecurrentCache& rc = *cache.recurrent();
  rc.drop_uncommitted();
  n_runs_ = 0;
  for (int64_t t = 0; t < n; ++t) {
    int64_t ru = 0;
    while (ru < n_runs_ && runs_[sz(ru)].seq != seq[t]) ++ru;
    if (ru == n_runs_) {
      if (sz(n_runs_) == runs_.size()) runs_.emplace_back();
      RecurrentRun& run = runs_[sz(n_runs_++)];
      run.seq = seq[t];
      run.p0 = pos[t];
      run.tokens.clear();
      run.snaps.clear();
      rc.prepare(seq[t]);
    }
    runs_[sz(ru)].tokens.push_back(static_cast<int32_t>(t));
    tok_run_[sz(t)] = static_cast<int32_t>(ru);
    tok_pos_[sz(t)] = pos[t];
  }
  // a snapshot at every chunk boundary a run crosses (when the cache has a pool)
  for (int64_t ru = 0; ru < n_runs_; ++ru) {
    RecurrentRun& run = runs_[sz(ru)];
    const auto end = run.p0 + static_cast<int32_t>(run.tokens.size());
    for (int32_t b = (run.p0 / C + 1) * C; b <= end; b += C) {
      const int32_t slot = rc.capture(run.seq, b);
      if (slot >= 0) run.snaps.emplace_back(b, slot);
    }
  }
  run_state_.resize(sz(n_runs_));
}

void Forward::finish_recurrent(KvCache& cache) {
  RecurrentCache& rc = *cache.recurrent();
  for (int64_t ru = 0; ru < n_runs_; ++ru) {
    const RecurrentRun& run = runs_[sz(ru)];
    rc.advance(run.seq, run.p0 + static_cast<int32_t>(run.tokens.size()));
    for (const auto& [b, slot] : run.snaps) rc.commit(slot);
  }
}

void Forward::delta_net_block(int64_t il, int64_t n, KvCache& cache, ThreadPool& pool) {
  const LayerWeights& l = model_.layers[sz(il)];
  const int64_t E = hp_.n_embd, d = hp_.ssm.d_state, di = hp_.ssm.d_inner;
  const int64_t r = rec_index_[sz(il)];
  // xb = rmsnorm(x) * attn_norm                  x (n, E) -> xb (n, E)
  for_each_row(n, pool, [&](int64_t t) {
    rmsnorm(xb_.data() + t * E, x_.data() + t * E, l.attn_norm.data(), E, hp_.rms_eps);
  });
  delta_net_inputs(l, n, pool);
  delta_net_conv(l, r, n, cache, pool);
  delta_net_rule(r, cache, pool);
  // out[t, h] = rmsnorm(out[t, h]) * ssm_norm * silu(z[t, h])      (n, n_v_heads, d_state)
  for_each_row(n, pool, [&](int64_t t) {
    for (int64_t h = 0; h < hp_.ssm.n_v_heads; ++h) {
      float* o = dn_out_.data() + t * di + h * d;
      const float* z = dn_z_.data() + t * di + h * d;
      rmsnorm(o, o, l.dn.norm.data(), d, hp_.rms_eps);
      for (int64_t j = 0; j < d; ++j) o[j] *= silu(z[j]);
    }
  });
  // xb2 = out @ Wout^T                           out (n, d_inner) -> xb2 (n, E)
  matmul(l.dn.w_out, dn_out_.data(), n, xb2_.data(), pool);
  add_residual(l.post_attn_norm, n, pool);
}

// in (n, conv_channels) q, k, v before the conv; z (n, d_inner); beta (n, n_v) = sigmoid(Wbeta xb);
// gate (n, n_v) = softplus(Walpha xb + dt_bias) * a, the log-decay.
void Forward::delta_net_inputs(const LayerWeights& l, int64_t n, ThreadPool& pool) {
  const DeltaNetWeights& w = l.dn;
  const DeltaNetParams& s = hp_.ssm;
  const int64_t nv = s.n_v_heads, kd = s.key_dim(), di = s.d_inner, ch = s.conv_channels(), d = s.d_state;
  const int64_t ratio = nv / s.n_k_heads;
  std::vector<MatmulJob>& jobs = jobs_;
  jobs.clear();
  if (w.w_in.data) {
    jobs.push_back({&w.w_in, xb_.data(), n, dn_in_.data()});
  } else {
    jobs.push_back({&w.wqkv, xb_.data(), n, dn_in_.data()});
    jobs.push_back({&w.wz, xb_.data(), n, dn_z_.data()});
  }
  if (w.w_ba.data) {
    jobs.push_back({&w.w_ba, xb_.data(), n, dn_ba_.data()});
  } else {
    jobs.push_back({&w.w_beta, xb_.data(), n, dn_beta_.data()});
    jobs.push_back({&w.w_alpha, xb_.data(), n, dn_gate_.data()});
  }
  matmul_group(jobs, pool);
  if (w.w_in.data) {  // per key head g: q, k, v (ratio heads), z (ratio heads) -> q | k | v rows and z
    for (int64_t t = 0; t < n; ++t) {  // (in order: row t's new place overlaps only rows <= t)
      const float* src = dn_in_.data() + t * (2 * kd + 2 * di);
      float* tmp = dn_conv_.data();
      for (int64_t g = 0; g < s.n_k_heads; ++g) {
        const float* grp = src + g * (2 * d + 2 * ratio * d);
        std::copy_n(grp, d, tmp + g * d);
        std::copy_n(grp + d, d, tmp + kd + g * d);
        std::copy_n(grp + 2 * d, ratio * d, tmp + 2 * kd + g * ratio * d);
        std::copy_n(grp + 2 * d + ratio * d, ratio * d, dn_z_.data() + t * di + g * ratio * d);
      }
      std::copy_n(tmp, ch, dn_in_.data() + t * ch);
    }
  }
  for (int64_t t = 0; t < n; ++t) {
    float* beta = dn_beta_.data() + t * nv;
    float* gate = dn_gate_.data() + t * nv;
    if (w.w_ba.data) {  // per key head g: its ratio betas, then its ratio alphas
      const float* ba = dn_ba_.data() + t * 2 * nv;
      for (int64_t g = 0; g < s.n_k_heads; ++g) {
        for (int64_t j = 0; j < ratio; ++j) {
          beta[g * ratio + j] = ba[g * 2 * ratio + j];
          gate[g * ratio + j] = ba[g * 2 * ratio + ratio + j];
        }
      }
    }
    for (int64_t h = 0; h < nv; ++h) {
      beta[h] = sigmoid(beta[h]);
      gate[h] = softplus(gate[h] + w.dt_bias[sz(h)]) * w.a[sz(h)];
    }
  }
}

// conv[t] = silu(sum over the taps of the sequence's inputs at pos - d_conv + 1 .. pos), q and k
// L2-normalized per head.
void Forward::delta_net_conv(const LayerWeights& l, int64_t r, int64_t n, KvCache& cache, ThreadPool& pool) {
  const DeltaNetParams& s = hp_.ssm;
  const int64_t ch = s.conv_channels(), kd = s.key_dim(), d = s.d_state;
  recurrent_conv(l.dn.conv, r, n, true, cache, pool);
  for_each_row(n, pool, [&](int64_t t) {
    float* out = dn_conv_.data() + t * ch;
    for (int64_t g = 0; g < s.n_k_heads; ++g) {
      l2norm(out + g * d, d, hp_.rms_eps);
      l2norm(out + kd + g * d, d, hp_.rms_eps);
    }
  });
}

// dn_conv_ (n, ch) = (silu of, when `silu`) the sum over the taps of each token's sequence's
// inputs dn_in_ at pos - d_conv + 1 .. pos; then each run's inputs go into its ring in recurrent
// layer r (and its snapshots' conv tails).
void Forward::recurrent_conv(const std::vector<float>& w, int64_t r, int64_t n, bool silu_out, KvCache& cache,
                             ThreadPool& pool) {
  RecurrentCache& rc = *cache.recurrent();
  const int64_t ch = hp_.ssm.conv_channels(), dc = hp_.ssm.d_conv, R = rc.raw_rows();
  for (int64_t ru = 0; ru < n_runs_; ++ru) run_state_[sz(ru)] = rc.layer(runs_[sz(ru)].seq, r);
  // w (ch, d_conv): channel c's taps, oldest first
  // the input row of position p of run ru: this chunk's, the ring's, or none (before the sequence)
  auto input = [&](int64_t ru, int64_t p) -> const float* {
    const RecurrentRun& run = runs_[sz(ru)];
    if (p < 0) return nullptr;
    if (p >= run.p0) return dn_in_.data() + run.tokens[sz(p - run.p0)] * ch;
    return run_state_[sz(ru)].raw + (p % R) * ch;
  };
  for_each_row(n, pool, [&](int64_t t) {
    const int64_t ru = tok_run_[sz(t)], p = tok_pos_[sz(t)];
    const float* taps[64];  // (d_conv <= 64: hparams)
    for (int64_t k = 0; k < dc; ++k) taps[k] = input(ru, p - (dc - 1) + k);
    float* out = dn_conv_.data() + t * ch;
    for (int64_t c = 0; c < ch; ++c) {
      float sum = 0.0f;
      for (int64_t k = 0; k < dc; ++k) {
        if (taps[k]) sum += taps[k][c] * w[sz(c * dc + k)];
      }
      out[c] = silu_out ? silu(sum) : sum;
    }
  });
  for (int64_t ru = 0; ru < n_runs_; ++ru) {
    const RecurrentRun& run = runs_[sz(ru)];
    for (const auto& [b, slot] : run.snaps) {  // (before the ring's rows are overwritten)
      float* tail = rc.snapshot_layer(slot, r).raw;  // (d_conv - 1, ch): inputs b - d_conv + 1 .. b - 1
      for (int64_t i = 0; i < dc - 1; ++i) {
        const float* src = input(ru, b - (dc - 1) + i);
        if (src) {
          std::copy_n(src, ch, tail + i * ch);
        } else {
          std::fill_n(tail + i * ch, ch, 0.0f);
        }
      }
    }
    const auto len = static_cast<int64_t>(run.tokens.size());
    for (int64_t i = std::max<int64_t>(0, len - R); i < len; ++i) {
      std::copy_n(dn_in_.data() + run.tokens[sz(i)] * ch, ch, run_state_[sz(ru)].raw + ((run.p0 + i) % R) * ch);
    }
  }
}

// The delta rule, in rounds: round j takes each run's tokens of its j-th chunk; their keys go into
// the log first, then every (run, value head) of the round runs as one item of the pool.
void Forward::delta_net_rule(int64_t r, KvCache& cache, ThreadPool& pool) {
  RecurrentCache& rc = *cache.recurrent();
  const kernels::Dispatch& kern = kernels::dispatch();
  const DeltaNetParams& s = hp_.ssm;
  const int64_t d = s.d_state, nv = s.n_v_heads, kd = s.key_dim(), ch = s.conv_channels(), di = s.d_inner;
  const int64_t per_thread = 3 * C + 2 * d;
  dn_scratch_.resize(sz(pool.size() * per_thread));
  const float scale_q = 1.0f / std::sqrt(static_cast<float>(d));
  int64_t rounds = 0;
  for (int64_t ru = 0; ru < n_runs_; ++ru) {
    const RecurrentRun& run = runs_[sz(ru)];
    const int64_t end = run.p0 + static_cast<int64_t>(run.tokens.size());
    rounds = std::max(rounds, (end - 1) / C - run.p0 / C + 1);
  }
  // the positions [a, b) of run ru in round j (empty when it has no j-th chunk)
  auto segment = [&](int64_t ru, int64_t j) {
    const RecurrentRun& run = runs_[sz(ru)];
    const int64_t c = (run.p0 / C + j) * C, end = run.p0 + static_cast<int64_t>(run.tokens.size());
    return std::pair<int64_t, int64_t>{std::max<int64_t>(run.p0, c), std::min(end, c + C)};
  };
  std::vector<int32_t> live;  // runs of the round
  for (int64_t j = 0; j < rounds; ++j) {
    live.clear();
    for (int64_t ru = 0; ru < n_runs_; ++ru) {
      const auto [a, b] = segment(ru, j);
      if (a >= b) continue;
      live.push_back(static_cast<int32_t>(ru));
      const RecurrentRun& run = runs_[sz(ru)];
      for (int64_t p = a; p < b; ++p) {  // k (n_k_heads, d_state) of each token into the log
        const float* k = dn_conv_.data() + run.tokens[sz(p - run.p0)] * ch + kd;
        std::copy_n(k, kd, run_state_[sz(ru)].log_k + (p % (2 * C)) * kd);
      }
    }
    const int64_t n_items = static_cast<int64_t>(live.size()) * nv;
    pool.run([&](int ith, int nth) {
      float* scratch = dn_scratch_.data() + ith * per_thread;
      for (int64_t item = ith; item < n_items; item += nth) {
        const int64_t ru = live[sz(item / nv)], h = item % nv, kh = s.k_head(h);
        const RecurrentRun& run = runs_[sz(ru)];
        const RecurrentCache::LayerState& st = run_state_[sz(ru)];
        const auto [a, b] = segment(ru, j);
        for (int64_t p = a; p < b; ++p) {
          const int64_t t = p % C, c0 = p - t, row = p % (2 * C), base = c0 % (2 * C);
          const int64_t tk = run.tokens[sz(p - run.p0)];
          const float g_prev = t == 0 ? 0.0f : st.log_G[(row - 1) * nv + h];
          st.log_G[row * nv + h] = g_prev + dn_gate_[sz(tk * nv + h)];
          kernels::DeltaRowArgs ra;
          ra.s0 = st.s[(c0 / C) % 2] + h * d * d;
          ra.k = st.log_k + base * kd + kh * d;
          ra.k_stride = sz(kd);
          ra.d = st.log_d + base * di + h * d;
          ra.d_stride = sz(di);
          ra.G = st.log_G + base * nv + h;
          ra.G_stride = sz(nv);
          ra.t = static_cast<int>(t);
          ra.q = dn_conv_.data() + tk * ch + kh * d;
          ra.v = dn_conv_.data() + tk * ch + 2 * kd + h * d;
          ra.beta = dn_beta_[sz(tk * nv + h)];
          ra.scale = scale_q;
          ra.o = dn_out_.data() + tk * di + h * d;
          ra.d_k = d;
          ra.d_v = d;
          ra.scratch = scratch;
          kern.delta_row(ra);
          if (t != C - 1) continue;
          // the chunk is complete: the state at its end, into the other buffer (and snapshots)
          float* s_end = st.s[(c0 / C + 1) % 2] + h * d * d;
          kern.delta_end({ra.s0, ra.k, ra.k_stride, ra.d, ra.d_stride, ra.G, ra.G_stride, C, s_end, d, d, scratch});
          for (const auto& [bound, slot] : run.snaps) {
            if (bound == c0 + C) std::copy_n(s_end, d * d, rc.snapshot_layer(slot, r).s[0] + h * d * d);
          }
        }
      }
    });
  }
}

void Forward::split_q_gate(int64_t n) {
  const int64_t D = hp_.head_dim_k, H = hp_.n_head;
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const float* src = qg_.data() + (t * H + h) * 2 * D;  // (query, gate) of head h
      std::copy_n(src, D, q_.data() + (t * H + h) * D);
      std::copy_n(src + D, D, qgate_.data() + (t * H + h) * D);
    }
  }
}

void Forward::gate_attention(int64_t n) {
  const int64_t m = n * hp_.q_dim();
  for (int64_t i = 0; i < m; ++i) att_[sz(i)] *= sigmoid(qgate_[sz(i)]);
}

}  // namespace engine
