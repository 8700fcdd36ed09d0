// The vision encoder's forward pass over one image, read top to bottom:
//   patches (n, 3 p p) -> x = patches @ W_patch^T + b_patch + position_embd      (n, V)
//   per layer: [LayerNorm ln1, Q/K/V + biases, attention over all patches, output + bias, residual]
//              [LayerNorm ln2, up + bias, GELU, down + bias, residual]
//   -> post LayerNorm -> (gemma3) average k x k patches -> RMS norm * soft_emb_norm
//   -> @ input_projection                                                          (n_tokens, T)
#include "engine/vision/vit.h"

#include <atomic>
#include <stdexcept>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/matmul.h"
#include "engine/model/ops.h"

namespace engine {

namespace {

size_t sz(int64_t n) { return static_cast<size_t>(n); }

// Rows of (n, E) in parallel.
template <class F>
void for_rows(int64_t n, ThreadPool& pool, F f) {
  pool.run([&](int ith, int nth) {
    for (int64_t t = ith; t < n; t += nth) f(t);
  });
}

}  // namespace

VisionEncoder::VisionEncoder(const VisionModel& model)
    : model_(model), hp_(model.hparams()), n_(hp_.n_patches()) {
  const int64_t V = hp_.n_embd, P = hp_.patch_size;
  flash_params_.d_k = hp_.head_dim();
  flash_params_.d_v = hp_.head_dim();
  flash_params_.scale = 1.0f / std::sqrt(static_cast<float>(hp_.head_dim()));
  patches_.resize(sz(n_ * 3 * P * P));
  for (auto* b : {&x_, &xn_, &q_, &k_, &v_, &att_, &y_}) b->resize(sz(n_ * V));
  hb_.resize(sz(n_ * hp_.n_ff));
}

std::vector<float> VisionEncoder::encode(const std::vector<float>& pixels, ThreadPool& pool) {
  begin(pixels, pool);
  while (!done()) advance(pool);
  return finish(pool);
}

void VisionEncoder::begin(const std::vector<float>& pixels, ThreadPool& pool) {
  const int64_t S = hp_.image_size;
  if (pixels.size() != sz(3 * S * S)) {
    throw std::invalid_argument("vision encoder: pixels hold " + std::to_string(pixels.size()) + " values, expected " +
                                std::to_string(3 * S * S));
  }
  while (static_cast<int>(workers_.size()) < pool.size()) workers_.emplace_back(flash_params_);
  embed_patches(pixels, pool);
  block_ = 0;
}

void VisionEncoder::advance(ThreadPool& pool) {
  if (done()) return;
  const VisionLayer& l = model_.layers[sz(block_ / 2)];
  if (block_ % 2 == 0) {
    attention_block(l, pool);
  } else {
    ffn_block(l, pool);
  }
  ++block_;
}

std::vector<float> VisionEncoder::finish(ThreadPool& pool) {
  if (!done()) throw std::logic_error("vision encoder: finish() before the last block");
  if (!model_.post_ln.empty()) {
    const int64_t V = hp_.n_embd;
    for_rows(n_, pool, [&](int64_t t) {
      float* x = x_.data() + t * V;
      layernorm(x, x, model_.post_ln.data(), model_.post_ln_b.empty() ? nullptr : model_.post_ln_b.data(), V, hp_.eps);
    });
  }
  return project(pool);
}

void VisionEncoder::embed_patches(const std::vector<float>& pixels, ThreadPool& pool) {
  const int64_t S = hp_.image_size, P = hp_.patch_size, G = hp_.patches_per_side(), V = hp_.n_embd;
  // patches[t] = pixels[c, py*P + ky, px*P + kx] over (c, ky, kx), t = py * G + px   (n, 3 P P)
  for (int64_t py = 0; py < G; ++py) {
    for (int64_t px = 0; px < G; ++px) {
      float* dst = patches_.data() + (py * G + px) * 3 * P * P;
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t ky = 0; ky < P; ++ky) {
          const float* src = pixels.data() + c * S * S + (py * P + ky) * S + px * P;
          std::copy_n(src, P, dst + (c * P + ky) * P);
        }
      }
    }
  }
  // x = patches @ W_patch^T + b_patch + pos_embd       (n, 3 P P) -> (n, V)   (the conv, as a product)
  matmul(model_.patch_embd, patches_.data(), n_, x_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    float* x = x_.data() + t * V;
    if (!model_.patch_bias.empty()) add(x, model_.patch_bias.data(), V);
    add(x, model_.pos_embd.data() + t * V, V);
  });
}

void VisionEncoder::attention_block(const VisionLayer& l, ThreadPool& pool) {
  const int64_t V = hp_.n_embd, D = hp_.head_dim(), H = hp_.n_head;
  // xn = layernorm(x) * ln1 + ln1_b                   (n, V)
  for_rows(n_, pool, [&](int64_t t) { layernorm(xn_.data() + t * V, x_.data() + t * V, l.ln1.data(), l.ln1_b.data(), V, hp_.eps); });
  // q, k, v = xn @ W^T + b                             (n, V) each
  const MatmulJob qkv[] = {{&l.wq, xn_.data(), n_, q_.data()}, {&l.wk, xn_.data(), n_, k_.data()},
                           {&l.wv, xn_.data(), n_, v_.data()}};
  matmul_group(qkv, pool);
  for_rows(n_, pool, [&](int64_t t) {
    if (!l.bq.empty()) add(q_.data() + t * V, l.bq.data(), V);
    if (!l.bk.empty()) add(k_.data() + t * V, l.bk.data(), V);
    if (!l.bv.empty()) add(v_.data() + t * V, l.bv.data(), V);
  });
  // att[t, h] = softmax(q[t, h] . k[:, h] / sqrt(D)) @ v[:, h]     (n, H, D): every patch sees all
  // tiles of up to kFlashRows patches of one head; keys without positions (no mask)
  const int64_t tiles_per_head = (n_ + kernels::kFlashRows - 1) / kernels::kFlashRows;
  const kernels::FlashFn flash = kernels::dispatch().flash;
  std::atomic<int64_t> next{0};
  pool.run([&](int ith, int) {
    FlashWorker& w = workers_[sz(ith)];
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < H * tiles_per_head;) {
      const int64_t h = i / tiles_per_head, r0 = (i % tiles_per_head) * kernels::kFlashRows;
      const int rows = static_cast<int>(std::min<int64_t>(kernels::kFlashRows, n_ - r0));
      for (int r = 0; r < rows; ++r) {
        w.q_rows[sz(r)] = q_.data() + (r0 + r) * V + h * D;
        w.out_rows[sz(r)] = att_.data() + (r0 + r) * V + h * D;
      }
      const kernels::FlashKv kv{reinterpret_cast<const uint8_t*>(k_.data() + h * D),
                                reinterpret_cast<const uint8_t*>(v_.data() + h * D),
                                sz(V) * sizeof(float), sz(V) * sizeof(float), nullptr, nullptr, n_,
                                kernels::KvElem::kF32};
      kernels::FlashState st = w.state();
      kernels::flash_init(st, rows, D);
      flash(flash_params_, w.query(rows), kv, 0, n_, st, w.scratch);
      kernels::flash_finish(st, rows, D, nullptr, w.out_rows.data());
    }
  });
  // x += att @ Wo^T + bo                               (n, V)
  matmul(l.wo, att_.data(), n_, y_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    if (!l.bo.empty()) add(y_.data() + t * V, l.bo.data(), V);
    add(x_.data() + t * V, y_.data() + t * V, V);
  });
}

void VisionEncoder::ffn_block(const VisionLayer& l, ThreadPool& pool) {
  const int64_t V = hp_.n_embd, F = hp_.n_ff;
  // xn = layernorm(x) * ln2 + ln2_b; hb = gelu(xn @ Wup^T + b_up); x += hb @ Wdown^T + b_down
  for_rows(n_, pool, [&](int64_t t) { layernorm(xn_.data() + t * V, x_.data() + t * V, l.ln2.data(), l.ln2_b.data(), V, hp_.eps); });
  matmul(l.ffn_up, xn_.data(), n_, hb_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    float* h = hb_.data() + t * F;
    if (!l.ffn_up_b.empty()) add(h, l.ffn_up_b.data(), F);
    gelu(h, F);
  });
  matmul(l.ffn_down, hb_.data(), n_, y_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    if (!l.ffn_down_b.empty()) add(y_.data() + t * V, l.ffn_down_b.data(), V);
    add(x_.data() + t * V, y_.data() + t * V, V);
  });
}

std::vector<float> VisionEncoder::project(ThreadPool& pool) {
  const int64_t V = hp_.n_embd, G = hp_.patches_per_side(), k = hp_.n_merge, g = G / k, T = hp_.n_embd_text;
  const int64_t n_tok = g * g;
  // pooled[ty * g + tx] = mean of the k x k patches (ty k + dy, tx k + dx)      (n_tok, V)
  std::vector<float>& pooled = xn_;
  std::fill_n(pooled.begin(), n_tok * V, 0.0f);
  const float inv = 1.0f / static_cast<float>(k * k);
  for (int64_t ty = 0; ty < g; ++ty) {
    for (int64_t tx = 0; tx < g; ++tx) {
      float* dst = pooled.data() + (ty * g + tx) * V;
      for (int64_t dy = 0; dy < k; ++dy) {
        for (int64_t dx = 0; dx < k; ++dx) add(dst, x_.data() + ((ty * k + dy) * G + tx * k + dx) * V, V);
      }
      scale(dst, inv, V);
      // rmsnorm(pooled) * soft_emb_norm
      rmsnorm(dst, dst, model_.soft_emb_norm.data(), V, hp_.eps);
    }
  }
  // out = pooled @ input_projection                     (n_tok, V) -> (n_tok, T)
  std::vector<float> out(sz(n_tok * T));
  matmul(model_.input_proj, pooled.data(), n_tok, out.data(), pool);
  return out;
}

}  // namespace engine
