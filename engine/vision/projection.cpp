// The projectors after the ViT (vit.cpp), one per ProjectorTraits::projection, read top to bottom:
//   kPooled (gemma3, gemma4v): the mean of each k x k block of patches, then per token
//     gemma3: RMS norm * soft_emb_norm, @ input_projection                        (n_tokens, T)
//     gemma4v: * sqrt(V), (x - std_bias) * std_scale, RMS norm, @ input_projection (clamped)
//   kPatchMerger (pixtral): (RMS norm, k x k patches unfolded, @ patch_merger), mm2(gelu(mm1 x + b1)) + b2,
//     an [IMG_BREAK] row after each row of tokens but the last
//   kPixelShuffle (idefics3): each k x k block of patches concatenated (rows dy, then dx), @ mm.model.fc
//   kBlockMerger (qwen-vl): each 2 x 2 block of patches concatenated, mm.2(gelu(mm.0 x + b0)) + b2; (qwen3vl)
//     each deepstack layer's output merged the same way by its own merger (after a LayerNorm), appended
#include <cmath>
#include <stdexcept>

#include "engine/kernels/matmul.h"
#include "engine/model/ops.h"
#include "engine/vision/rows.h"
#include "engine/vision/vit.h"

namespace engine {

namespace {

using vision_rows::for_rows;
using vision_rows::sz;

}  // namespace

std::vector<float> VisionEncoder::project(ThreadPool& pool) {
  switch (traits_.projection) {
    case Projection::kPooled: return project_pooled(pool);
    case Projection::kPatchMerger: return project_pixtral(pool);
    case Projection::kBlockMerger: return with_deepstack(merge_blocks(model_.block_merger, pool));
    case Projection::kPixelShuffle: return project_shuffled(pool);
  }
  throw std::logic_error("vision encoder: a projector kind without a projection");
}

namespace {

// pooled (gx/k * gy/k, V) = the mean of each k x k block of x (gy, gx, V), row-major
void average_pool(const float* x, int64_t gx, int64_t gy, int64_t k, int64_t V, float* pooled) {
  const int64_t ox = gx / k, oy = gy / k;
  const float inv = 1.0f / static_cast<float>(k * k);
  for (int64_t ty = 0; ty < oy; ++ty) {
    for (int64_t tx = 0; tx < ox; ++tx) {
      float* dst = pooled + (ty * ox + tx) * V;
      std::fill_n(dst, V, 0.0f);
      for (int64_t dy = 0; dy < k; ++dy) {
        for (int64_t dx = 0; dx < k; ++dx) add(dst, x + ((ty * k + dy) * gx + tx * k + dx) * V, V);
      }
      scale(dst, inv, V);
    }
  }
}

}  // namespace

// gemma3 and gemma4v: the mean of each k x k block of patches, normed, then one projection.
std::vector<float> VisionEncoder::project_pooled(ThreadPool& pool) {
  const int64_t V = hp_.n_embd, T = hp_.n_embd_text, n_tok = (gx_ / hp_.n_merge) * (gy_ / hp_.n_merge);
  // pooled = mean of k x k patches, then per token                                (n_tok, V)
  //   gemma3:  rmsnorm(pooled) * soft_emb_norm
  //   gemma4v: rmsnorm((pooled * sqrt(V) - std_bias) * std_scale)
  std::vector<float>& pooled = xn_;
  average_pool(x_.data(), gx_, gy_, hp_.n_merge, V, pooled.data());
  const bool gemma3 = traits_.kind == ProjectorKind::kGemma3;
  const float root = std::sqrt(static_cast<float>(V));
  for_rows(n_tok, pool, [&](int64_t t) {
    float* p = pooled.data() + t * V;
    if (gemma3) {
      rmsnorm(p, p, model_.soft_emb_norm.data(), V, hp_.eps);
      return;
    }
    scale(p, root, V);
    if (!model_.std_bias.empty() && !model_.std_scale.empty()) {  // (both or neither, as llama.cpp)
      for (int64_t i = 0; i < V; ++i) p[i] -= model_.std_bias[sz(i)];
      mul(p, model_.std_scale.data(), V);
    }
    rmsnorm(p, p, nullptr, V, hp_.eps);
  });
  // out = clamp(pooled) @ input_projection^T, clamped (gemma4v's bounds)      (n_tok, V) -> (n_tok, T)
  std::vector<float> out(sz(n_tok * T));
  linear(model_.input_proj, pooled.data(), n_tok, out.data(), pool);
  return out;
}

// idefics3: blocks[t] = x of patches (k ty + dy, k tx + dx) over (dy, dx), row-major, as llama.cpp's
// build_patch_merge_permute lays them; out = blocks @ mm.model.fc^T        (n_tok, V k k) -> (n_tok, T)
std::vector<float> VisionEncoder::project_shuffled(ThreadPool& pool) {
  const int64_t V = hp_.n_embd, T = hp_.n_embd_text, k = hp_.n_merge, ox = gx_ / k, n_tok = ox * (gy_ / k);
  float* blocks = hb_.data();  // (n_tok, V k k) = (n, V) values: fits the (n, max(F, ...)) buffer
  for_rows(n_tok, pool, [&](int64_t t) {
    const int64_t ty = t / ox, tx = t % ox;
    for (int64_t j = 0; j < k * k; ++j) {
      const int64_t p = (k * ty + j / k) * gx_ + k * tx + j % k;
      std::copy_n(x_.data() + p * V, V, blocks + (t * k * k + j) * V);
    }
  });
  std::vector<float> out(sz(n_tok * T));
  linear(model_.shuffle_proj, blocks, n_tok, out.data(), pool);
  return out;
}

std::vector<float> VisionEncoder::project_pixtral(ThreadPool& pool) {
  const int64_t V = hp_.n_embd, T = hp_.n_embd_text, k = hp_.n_merge, ox = gx_ / k, oy = gy_ / k, n_tok = ox * oy;
  const float* in = x_.data();  // (n_tok, V) after the merger, (n, V) without one
  if (model_.merger.w.rows > 0) {
    // xn = rmsnorm(x) * merger_norm                                          (n, V)
    for_rows(n_, pool, [&](int64_t t) {
      rmsnorm(xn_.data() + t * V, x_.data() + t * V, model_.merger_norm.data(), V, hp_.eps);
    });
    // unfolded[ty * ox + tx][c k k + dy k + dx] = xn[(ty k + dy) gx + tx k + dx][c]    (n_tok, V k k)
    float* unfolded = q_.data();
    for_rows(n_tok, pool, [&](int64_t t) {
      const int64_t ty = t / ox, tx = t % ox;
      float* dst = unfolded + t * V * k * k;
      for (int64_t dy = 0; dy < k; ++dy) {
        for (int64_t dx = 0; dx < k; ++dx) {
          const float* src = xn_.data() + ((ty * k + dy) * gx_ + tx * k + dx) * V;
          for (int64_t c = 0; c < V; ++c) dst[c * k * k + dy * k + dx] = src[c];
        }
      }
    });
    // merged = unfolded @ W_merger^T                                          (n_tok, V)
    linear(model_.merger, unfolded, n_tok, k_.data(), pool);
    in = k_.data();
  }
  // h = gelu(in @ W1^T + b1); rows = h @ W2^T + b2                           (n_tok, T)
  std::vector<float> h(sz(n_tok * T)), rows(sz(n_tok * T));
  linear(model_.mm1, in, n_tok, h.data(), pool);
  for_rows(n_tok, pool, [&](int64_t t) {
    if (!model_.mm1_b.empty()) add(h.data() + t * T, model_.mm1_b.data(), T);
    gelu(h.data() + t * T, T);
  });
  linear(model_.mm2, h.data(), n_tok, rows.data(), pool);
  // out: each row of ox tokens, then [IMG_BREAK] after every row but the last     (n_tok + oy - 1, T)
  std::vector<float> out;
  out.reserve(sz((n_tok + oy - 1) * T));
  for (int64_t ty = 0; ty < oy; ++ty) {
    for (int64_t tx = 0; tx < ox; ++tx) {
      float* r = rows.data() + (ty * ox + tx) * T;
      if (!model_.mm2_b.empty()) add(r, model_.mm2_b.data(), T);
      out.insert(out.end(), r, r + T);
    }
    if (ty + 1 < oy) out.insert(out.end(), model_.img_break.begin(), model_.img_break.end());
  }
  return out;
}

// qwen-vl's mergers: each 2 x 2 block of x (gy, gx, V) concatenated, (LayerNorm,) two GELU layers.
//   blocks (n_tok, 4V) -> h = gelu(blocks @ fc1^T + b1) (n_tok, H) -> out = h @ fc2^T + b2 (n_tok, T)
// The projector merges the last layer's output after v.post_ln; a deepstack layer its own output.
std::vector<float> VisionEncoder::merge_blocks(const BlockMerger& m, ThreadPool& pool) {
  const int64_t V = hp_.n_embd, V4 = 4 * V, T = hp_.n_embd_text, H = m.fc1.w.rows;
  const int64_t ox = gx_ / 2, n_tok = ox * (gy_ / 2);
  // blocks[t] = patches (2ty, 2tx), (2ty, 2tx + 1), (2ty + 1, 2tx), (2ty + 1, 2tx + 1) of token t =
  // (ty, tx), as llama.cpp's reshapes order them
  float* blocks = q_.data();
  for_rows(n_tok, pool, [&](int64_t t) {
    const int64_t ty = t / ox, tx = t % ox;
    float* b = blocks + t * V4;
    for (int64_t j = 0; j < 4; ++j) {
      const int64_t p = (2 * ty + j / 2) * gx_ + 2 * tx + j % 2;  // in raster order; its row is slot_[p]
      std::copy_n(x_.data() + slot_[sz(p)] * V, V, b + j * V);
    }
    if (!m.norm.empty()) layernorm(b, b, m.norm.data(), m.norm_b.data(), V4, hp_.eps);
  });
  float* h = hb_.data();
  linear(m.fc1, blocks, n_tok, h, pool);
  for_rows(n_tok, pool, [&](int64_t t) {
    add(h + t * H, m.fc1_b.data(), H);
    gelu(h + t * H, H);
  });
  std::vector<float> out(sz(n_tok * T));
  linear(m.fc2, h, n_tok, out.data(), pool);
  for_rows(n_tok, pool, [&](int64_t t) { add(out.data() + t * T, m.fc2_b.data(), T); });
  return out;
}

// rows (n_tok, T) -> (n_tok, T (1 + deepstack layers)): each token's row, then its deepstack rows.
std::vector<float> VisionEncoder::with_deepstack(std::vector<float> rows) const {
  if (deepstack_.empty()) return rows;
  const int64_t T = hp_.n_embd_text, n_tok = static_cast<int64_t>(rows.size()) / T, W = hp_.row_width();
  std::vector<float> out(sz(n_tok * W));
  for (int64_t t = 0; t < n_tok; ++t) {
    std::copy_n(rows.data() + t * T, T, out.data() + t * W);
    for (size_t k = 0; k < deepstack_.size(); ++k) {
      std::copy_n(deepstack_[k].data() + t * T, T, out.data() + t * W + (1 + static_cast<int64_t>(k)) * T);
    }
  }
  return out;
}

}  // namespace engine
