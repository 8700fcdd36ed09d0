// The vision encoder's forward pass over one image, read top to bottom:
//   patches (n, 3 p p) -> x = patches @ W_patch^T (+ b_patch) + positions (-> pixtral: RMS pre-norm)  (n, V)
//     positions: gemma3 a learned row per patch; gemma4v column table[col] + row table[row];
//     pixtral, qwen2vl, qwen2.5vl none (RoPE only); qwen3vl the learned table resized to the grid;
//     qwen-vl add a second frame's patch embedding
//   per layer: [norm ln1, Q/K/V (+ biases), (gemma4v: per-head RMS norms of q, k (weighted) and
//               v), (2-D RoPE or M-RoPE of q, k), attention over all patches (qwen2.5vl: most
//               layers only within windows), output (+ bias), (post-norm), residual]
//              [norm ln2, up (+ bias), GELU / SiLU / quick GELU (of the gate + bias, times up),
//               down (+ bias), (post-norm), residual, (times the layer's out scale)]
//     norms: gemma3, qwen3vl, qwen2vl LayerNorm with biases; gemma4v, pixtral, qwen2.5vl RMS norm
//   -> (post norm), then the projection (projection.cpp)
//   gemma4v's linears clamp their input and output where the file says so.
// Rows of the residual stream are patches in raster order, except under window attention, where
// each window's patches are contiguous (order_ / slot_ map the two).
#include "engine/vision/vit.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <stdexcept>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/matmul.h"
#include "engine/model/ops.h"
#include "engine/vision/rows.h"

namespace engine {

namespace {

using vision_rows::for_rows;
using vision_rows::sz;

void clamp_row(float* x, int64_t n, float lo, float hi) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::min(std::max(x[i], lo), hi);
}

}  // namespace

std::string pairing_error(const VisionModel& vision, const HParams& decoder) {
  const VisionHParams& hp = vision.hparams();
  if (hp.n_embd_text != decoder.n_embd) {
    return "its projection width " + std::to_string(hp.n_embd_text) + " is not the model's embedding width " +
           std::to_string(decoder.n_embd);
  }
  if (hp.n_deepstack != decoder.n_deepstack) {
    return "its rows carry " + std::to_string(hp.n_deepstack) + " deepstack layers' merges and the model takes " +
           std::to_string(decoder.n_deepstack) + " (n_deepstack_layers)";
  }
  const int* sec = decoder.rope_sections;
  if (vision.traits().image_positions == ImagePositions::kMrope2d && sec[0] + sec[1] + sec[2] == 0) {
    return std::string("its images (") + vision.traits().name +
           ") take 2-D M-RoPE positions, and the model has no rope.dimension_sections (a qwen-vl text model has)";
  }
  return "";
}

VisionEncoder::VisionEncoder(const VisionModel& model)
    : model_(model), hp_(model.hparams()), traits_(model.traits()) {
  const int64_t D = hp_.head_dim();
  flash_params_.d_k = D;
  flash_params_.d_v = D;
  flash_params_.scale = traits_.attn_scaled ? 1.0f / std::sqrt(static_cast<float>(D)) : 1.0f;
  if (traits_.positions != VitPositions::kLearned) {
    // (M-RoPE uses rope_first_ for rows and columns alike)
    // each half of a head (D/2 dims) turns as RoPE over D/2 dims; kRope2d's second half at the odd
    // frequencies (freq_scale base^(-2/D))
    RopeParams first, second;
    first.n_rot = second.n_rot = static_cast<int>(D / 2);
    first.freq_base = second.freq_base = traits_.rope_theta;
    if (traits_.positions == VitPositions::kRope2d) {
      second.freq_scale = std::pow(traits_.rope_theta, -2.0f / static_cast<float>(D));
    }
    const int64_t L = hp_.max_side_patches();
    rope_first_.resize(sz(L * D / 2));
    rope_second_.resize(sz(L * D / 2));
    for (int64_t p = 0; p < L; ++p) {
      rope_angles(rope_first_.data() + p * D / 2, static_cast<int32_t>(p), first);
      rope_angles(rope_second_.data() + p * D / 2, static_cast<int32_t>(p), second);
    }
  }
}

std::vector<float> VisionEncoder::encode(const EncoderInput& input, ThreadPool& pool) {
  begin(input, pool);
  while (!done()) advance(pool);
  return finish(pool);
}

void VisionEncoder::begin(const EncoderInput& input, ThreadPool& pool) {
  if (!hp_.accepts(input.width, input.height) || input.pixels.size() != sz(3 * input.width * input.height)) {
    throw std::invalid_argument("vision encoder: an input of " + std::to_string(input.width) + " x " +
                                std::to_string(input.height) + " pixels holding " + std::to_string(input.pixels.size()) +
                                " values is not one this encoder takes");
  }
  while (static_cast<int>(workers_.size()) < pool.size()) workers_.emplace_back(flash_params_);
  gx_ = input.width / hp_.patch_size;
  gy_ = input.height / hp_.patch_size;
  n_ = gx_ * gy_;
  reserve(n_);
  order_windows();
  embed_patches(input, pool);
  block_ = 0;
  deepstack_.clear();
}

// Scratch for n patches, grown as images need it (a small image does not pay for the largest).
void VisionEncoder::reserve(int64_t n) {
  if (n <= capacity_) return;
  const int64_t V = hp_.n_embd, P = hp_.patch_size, F = hp_.n_ff;
  // the projector's inputs: a merger's concatenated blocks and its hidden width fit in (n, V) buffers
  patches_.resize(sz(n * 3 * P * P));
  for (auto* b : {&x_, &xn_, &q_, &k_, &v_, &att_, &y_}) b->resize(sz(n * V));
  int64_t hidden = std::max(F, model_.block_merger.fc1.w.rows / 4 + 1);  // per patch: a merger's per token / 4
  for (const VisionLayer& l : model_.layers) hidden = std::max(hidden, l.deepstack.fc1.w.rows / 4 + 1);
  hidden = std::max(hidden, V);  // (idefics3's pixel-shuffled blocks: n x V values)
  hb_.resize(sz(n * hidden));
  if (!model_.layers.empty() && model_.layers[0].ffn_gate.w.rows > 0) hg_.resize(sz(n * F));
  clamped_.resize(sz(n * std::max(V, F)));
  capacity_ = n;
}

// order_, slot_ and windows_ for the image begun: the identity and one window of all patches, or
// under window attention the windows of window_tokens x window_tokens tokens (2 x 2 patches each)
// tiling the token grid from the top left (partial at the right and bottom edges), one after
// another, each in raster order inside it.
void VisionEncoder::order_windows() {
  order_.resize(sz(n_));
  slot_.resize(sz(n_));
  windows_.clear();
  if (hp_.n_wa_pattern == 0) {
    for (int64_t p = 0; p < n_; ++p) order_[sz(p)] = static_cast<int32_t>(p);
  } else {
    const int64_t side = hp_.window_tokens * hp_.n_merge;  // a window's side in patches
    int64_t s = 0;
    for (int64_t y0 = 0; y0 < gy_; y0 += side) {
      for (int64_t x0 = 0; x0 < gx_; x0 += side) {
        const int64_t begin = s;
        for (int64_t y = y0; y < std::min(y0 + side, gy_); ++y) {
          for (int64_t x = x0; x < std::min(x0 + side, gx_); ++x) order_[sz(s++)] = static_cast<int32_t>(y * gx_ + x);
        }
        windows_.push_back({begin, s});
      }
    }
  }
  for (int64_t s = 0; s < n_; ++s) slot_[sz(order_[sz(s)])] = static_cast<int32_t>(s);
}

void VisionEncoder::advance(ThreadPool& pool) {
  if (done()) return;
  const int64_t il = block_ / 2;
  const VisionLayer& l = model_.layers[sz(il)];
  if (block_ % 2 == 0) {
    attention_block(l, hp_.windowed(il), pool);
  } else {
    ffn_block(l, pool);
    if (l.deepstack.present()) deepstack_.push_back(merge_blocks(l.deepstack, pool));  // (n_tok, T)
  }
  ++block_;
}

std::vector<float> VisionEncoder::finish(ThreadPool& pool) {
  if (!done()) throw std::logic_error("vision encoder: finish() before the last block");
  if (!model_.post_ln.empty()) {
    for_rows(n_, pool, [&](int64_t t) {
      float* x = x_.data() + t * hp_.n_embd;
      norm(x, x, model_.post_ln, model_.post_ln_b);
    });
  }
  return project(pool);
}

void VisionEncoder::embed_patches(const EncoderInput& input, ThreadPool& pool) {
  const int64_t W = input.width, H = input.height, P = hp_.patch_size, V = hp_.n_embd;
  // patches[t] = pixels[c, py*P + ky, px*P + kx] over (c, ky, kx), t = py * gx + px   (n, 3 P P)
  const bool centre = traits_.centre_pixels;
  for (int64_t py = 0; py < gy_; ++py) {
    for (int64_t px = 0; px < gx_; ++px) {
      float* dst = patches_.data() + slot_[sz(py * gx_ + px)] * 3 * P * P;
      for (int64_t c = 0; c < 3; ++c) {
        for (int64_t ky = 0; ky < P; ++ky) {
          const float* src = input.pixels.data() + c * W * H + (py * P + ky) * W + px * P;
          float* row = dst + (c * P + ky) * P;
          for (int64_t kx = 0; kx < P; ++kx) row[kx] = centre ? src[kx] * 2.0f - 1.0f : src[kx];
        }
      }
    }
  }
  // x = patches @ W_patch^T + b_patch + positions       (n, 3 P P) -> (n, V)   (the conv, as a product)
  matmul(model_.patch_embd, patches_.data(), n_, x_.data(), pool);
  // qwen3vl: + patches @ W_patch_1^T (the temporal patch's second frame, the same image)
  if (model_.patch_embd_1.rows > 0) matmul(model_.patch_embd_1, patches_.data(), n_, y_.data(), pool);
  // kResizedMrope: the learned (side, side, V) grid resized to (gy, gx, V), rows in stream order
  if (traits_.positions == VitPositions::kResizedMrope) resize_table(model_.pos_embd.data(), xn_.data(), pool);
  const float* tables = model_.pos_embd.data();  // kTablesRope: columns' (pos_size, V), then rows'
  for_rows(n_, pool, [&](int64_t s) {
    float* x = x_.data() + s * V;
    const int64_t t = order_[sz(s)];  // the patch in raster order
    if (model_.patch_embd_1.rows > 0) add(x, y_.data() + s * V, V);
    if (!model_.patch_bias.empty()) add(x, model_.patch_bias.data(), V);
    if (traits_.positions == VitPositions::kResizedMrope) add(x, xn_.data() + s * V, V);
    if (traits_.positions == VitPositions::kLearned) {
      add(x, model_.pos_embd.data() + t * V, V);
    } else if (traits_.positions == VitPositions::kTablesRope) {
      add(x, tables + (t % gx_) * V, V);
      add(x, tables + (hp_.pos_size + t / gx_) * V, V);
    }
    if (!model_.pre_ln.empty()) norm(x, x, model_.pre_ln, {});
  });
}

// out (gy, gx, V) = the table (S, S, V) resized bilinearly with its corners aligned, as ggml's
// interpolate (GGML_SCALE_FLAG_ALIGN_CORNERS): source coordinate i (S - 1) / (n - 1), the two
// neighbours clamped to the table, the weights from the clamped lower one.
void VisionEncoder::resize_table(const float* table, float* out, ThreadPool& pool) const {
  const int64_t S = hp_.table_side, V = hp_.n_embd;
  const auto coord = [S](int64_t i, int64_t n, int64_t& lo, int64_t& hi, float& frac) {
    const float sf = n > 1 && S > 1 ? static_cast<float>(n - 1) / static_cast<float>(S - 1)
                                    : static_cast<float>(n) / static_cast<float>(S);
    const float x = static_cast<float>(i) / sf;
    lo = static_cast<int64_t>(std::floor(x));
    hi = std::max<int64_t>(0, std::min(lo + 1, S - 1));
    lo = std::max<int64_t>(0, std::min(lo, S - 1));
    frac = std::max(0.0f, std::min(x - static_cast<float>(lo), 1.0f));
  };
  for_rows(n_, pool, [&](int64_t s) {
    const int64_t t = order_[sz(s)];
    int64_t y0, y1, x0, x1;
    float dy, dx;
    coord(t / gx_, gy_, y0, y1, dy);
    coord(t % gx_, gx_, x0, x1, dx);
    const float *a = table + (y0 * S + x0) * V, *b = table + (y0 * S + x1) * V;
    const float *c = table + (y1 * S + x0) * V, *d = table + (y1 * S + x1) * V;
    float* o = out + s * V;
    for (int64_t i = 0; i < V; ++i) {
      o[i] = a[i] * (1 - dx) * (1 - dy) + b[i] * dx * (1 - dy) + c[i] * (1 - dx) * dy + d[i] * dx * dy;
    }
  });
}

void VisionEncoder::norm(float* out, const float* x, const std::vector<float>& w, const std::vector<float>& b) const {
  if (traits_.norm == VitNorm::kLayerNorm) {
    layernorm(out, x, w.data(), b.empty() ? nullptr : b.data(), hp_.n_embd, hp_.eps);
  } else {
    rmsnorm(out, x, w.empty() ? nullptr : w.data(), hp_.n_embd, hp_.eps);
  }
}

void VisionEncoder::linear(const Linear& l, const float* x, int64_t n, float* out, ThreadPool& pool) {
  const Clamp& c = l.clamp;
  const int64_t cols = l.w.cols, rows = l.w.rows;
  if (c.clamps_input()) {
    for_rows(n, pool, [&](int64_t t) {
      std::copy_n(x + t * cols, cols, clamped_.data() + t * cols);
      clamp_row(clamped_.data() + t * cols, cols, c.in_lo, c.in_hi);
    });
    x = clamped_.data();
  }
  matmul(l.w, x, n, out, pool);
  if (c.clamps_output()) for_rows(n, pool, [&](int64_t t) { clamp_row(out + t * rows, rows, c.out_lo, c.out_hi); });
}

void VisionEncoder::attention_block(const VisionLayer& l, bool windowed, ThreadPool& pool) {
  const int64_t V = hp_.n_embd, D = hp_.head_dim(), H = hp_.n_head;
  // xn = norm(x) * ln1 (+ ln1_b)                       (n, V)
  for_rows(n_, pool, [&](int64_t t) { norm(xn_.data() + t * V, x_.data() + t * V, l.ln1, l.ln1_b); });
  // q, k, v = xn @ W^T + b                             (n, V) each
  if (l.wq.clamp.clamps() || l.wk.clamp.clamps() || l.wv.clamp.clamps()) {
    linear(l.wq, xn_.data(), n_, q_.data(), pool);
    linear(l.wk, xn_.data(), n_, k_.data(), pool);
    linear(l.wv, xn_.data(), n_, v_.data(), pool);
  } else {
    const MatmulJob qkv[] = {{&l.wq.w, xn_.data(), n_, q_.data()}, {&l.wk.w, xn_.data(), n_, k_.data()},
                             {&l.wv.w, xn_.data(), n_, v_.data()}};
    matmul_group(qkv, pool);
  }
  const bool neox = traits_.positions == VitPositions::kTablesRope;
  const RopeStyle style = neox ? RopeStyle::kNeox : RopeStyle::kNormal;
  for_rows(n_, pool, [&](int64_t s) {
    float *q = q_.data() + s * V, *k = k_.data() + s * V, *v = v_.data() + s * V;
    if (!l.bq.empty()) add(q, l.bq.data(), V);
    if (!l.bk.empty()) add(k, l.bk.data(), V);
    if (!l.bv.empty()) add(v, l.bv.data(), V);
    if (traits_.positions == VitPositions::kLearned) return;
    // per head: (gemma4v) q, k RMS-normed with their weights, v without; then 2-D RoPE of each
    // half: gemma4v first half by the patch's column, second by its row (NeoX pairs in each half);
    // pixtral first by its row, second by its column (adjacent pairs)
    const int64_t t = order_[sz(s)], col = t % gx_, row = t / gx_;
    if (traits_.positions == VitPositions::kResizedMrope || traits_.positions == VitPositions::kMrope) {
      // M-RoPE, vision kind: NeoX pairs (i, i + D/2) over the whole head; pairs [0, D/4) at the
      // row's angles, [D/4, D/2) at the column's (the same frequencies)   angles (D/2, 2)
      float angles[512];
      std::copy_n(rope_first_.data() + row * D / 2, D / 2, angles);
      std::copy_n(rope_first_.data() + col * D / 2, D / 2, angles + D / 2);
      for (int64_t h = 0; h < H; ++h) {
        rope(q + h * D, angles, static_cast<int>(D), RopeStyle::kNeox);
        rope(k + h * D, angles, static_cast<int>(D), RopeStyle::kNeox);
      }
      return;
    }
    const float* first = rope_first_.data() + (neox ? col : row) * D / 2;
    const float* second = rope_second_.data() + (neox ? row : col) * D / 2;
    for (int64_t h = 0; h < H; ++h) {
      float *qh = q + h * D, *kh = k + h * D, *vh = v + h * D;
      if (!l.q_norm.empty()) rmsnorm(qh, qh, l.q_norm.data(), D, hp_.eps);
      if (!l.k_norm.empty()) rmsnorm(kh, kh, l.k_norm.data(), D, hp_.eps);
      if (traits_.v_norm) rmsnorm(vh, vh, nullptr, D, hp_.eps);
      for (float* x : {qh, kh}) {
        rope(x, first, static_cast<int>(D / 2), style);
        rope(x + D / 2, second, static_cast<int>(D / 2), style);
      }
    }
  });
  attend(windowed, pool);
  // x += post_norm(att @ Wo^T + bo)                    (n, V)
  linear(l.wo, att_.data(), n_, y_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    float* y = y_.data() + t * V;
    if (!l.bo.empty()) add(y, l.bo.data(), V);
    if (!l.attn_post_norm.empty()) rmsnorm(y, y, l.attn_post_norm.data(), V, hp_.eps);
    add(x_.data() + t * V, y, V);
  });
}

// att[t, h] = softmax(q[t, h] . k[:, h] * scale) @ v[:, h]     (n, H, D): every patch sees all (or,
// windowed, those of its window), in tiles of up to kFlashRows patches of one head and one window;
// keys without positions (no mask)
void VisionEncoder::attend(bool windowed, ThreadPool& pool) {
  const int64_t V = hp_.n_embd, D = hp_.head_dim(), H = hp_.n_head;
  const std::pair<int64_t, int64_t> all[] = {{0, n_}};
  const std::pair<int64_t, int64_t>* wins = windowed ? windows_.data() : all;
  const int64_t n_wins = windowed ? static_cast<int64_t>(windows_.size()) : 1;
  // the tiles: (window, first row) for each window's rows in steps of kFlashRows
  tiles_.clear();
  for (int64_t w = 0; w < n_wins; ++w) {
    for (int64_t r0 = wins[w].first; r0 < wins[w].second; r0 += kernels::kFlashRows) tiles_.push_back({w, r0});
  }
  const auto n_tiles = static_cast<int64_t>(tiles_.size());
  const kernels::FlashFn flash = kernels::dispatch().flash;
  std::atomic<int64_t> next{0};
  pool.run([&](int ith, int) {
    FlashWorker& w = workers_[sz(ith)];
    for (int64_t i; (i = next.fetch_add(1, std::memory_order_relaxed)) < H * n_tiles;) {
      const int64_t h = i / n_tiles;
      const auto [win, r0] = tiles_[sz(i % n_tiles)];
      const int64_t k0 = wins[win].first, k1 = wins[win].second;
      const int rows = static_cast<int>(std::min<int64_t>(kernels::kFlashRows, k1 - r0));
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
      flash(flash_params_, w.query(rows), kv, k0, k1, st, w.scratch);
      kernels::flash_finish(st, rows, D, nullptr, w.out_rows.data());
    }
  });
}

void VisionEncoder::ffn_block(const VisionLayer& l, ThreadPool& pool) {
  const int64_t V = hp_.n_embd, F = hp_.n_ff;
  const bool gated = l.ffn_gate.w.rows > 0;
  // xn = norm(x) * ln2 (+ ln2_b); hb = act(xn @ Wup^T + b_up), or act(xn @ Wgate^T) * (xn @ Wup^T),
  // act GELU, SiLU or quick GELU
  for_rows(n_, pool, [&](int64_t t) { norm(xn_.data() + t * V, x_.data() + t * V, l.ln2, l.ln2_b); });
  linear(l.ffn_up, xn_.data(), n_, hb_.data(), pool);
  if (gated) linear(l.ffn_gate, xn_.data(), n_, hg_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    float* h = hb_.data() + t * F;
    if (!l.ffn_up_b.empty()) add(h, l.ffn_up_b.data(), F);
    if (gated) {
      float* g = hg_.data() + t * F;
      if (!l.ffn_gate_b.empty()) add(g, l.ffn_gate_b.data(), F);
      switch (hp_.act) {
        case VisionHParams::Act::kGelu: gelu_mul(g, h, F); break;
        case VisionHParams::Act::kSilu: silu_mul(g, h, F); break;
        case VisionHParams::Act::kGeluQuick: gelu_quick_mul(g, h, F); break;
      }
      std::copy_n(g, F, h);
      return;
    }
    switch (hp_.act) {
      case VisionHParams::Act::kGelu: gelu(h, F); break;
      case VisionHParams::Act::kSilu:
        for (int64_t i = 0; i < F; ++i) h[i] *= sigmoid(h[i]);
        break;
      case VisionHParams::Act::kGeluQuick: gelu_quick(h, F); break;
    }
  });
  // x = (x + post_norm(hb @ Wdown^T + b_down)) * out_scale
  linear(l.ffn_down, hb_.data(), n_, y_.data(), pool);
  for_rows(n_, pool, [&](int64_t t) {
    float *y = y_.data() + t * V, *x = x_.data() + t * V;
    if (!l.ffn_down_b.empty()) add(y, l.ffn_down_b.data(), V);
    if (!l.ffn_post_norm.empty()) rmsnorm(y, y, l.ffn_post_norm.data(), V, hp_.eps);
    add(x, y, V);
    if (!l.out_scale.empty()) scale(x, l.out_scale[0], V);
  });
}

}  // namespace engine
