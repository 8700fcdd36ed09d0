// The vision encoder: an image's pixels in, its rows of the text model's embedding space out.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/attention.h"
#include "engine/vision/image.h"
#include "engine/vision/projector.h"

namespace engine {

// Why the projector cannot feed a decoder of these hyperparameters ("" when it can): its rows'
// width is not the decoder's, or its images take M-RoPE positions the decoder has no sections for.
std::string pairing_error(const VisionModel& vision, const HParams& decoder);

// Runs a VisionModel's ViT and projector over one image at a time.
//
// encode() takes the input fit_image() makes and returns (n_tokens, n_embd_text) rows, ready to
// stand in for token embeddings in the decoder's batch. Every weight product runs on the pool
// with the decoder's kernels; attention is bidirectional over the image's patches.
// Ownership: borrows the VisionModel (must outlive it); owns its scratch, sized at construction.
// Thread-safety: none; one VisionEncoder per thread driving a ThreadPool.
class VisionEncoder {
 public:
  explicit VisionEncoder(const VisionModel& model);

  // input (3, height, width) -> (hp.n_tokens(width, height), hp.row_width()). Throws
  // std::invalid_argument for a size the encoder does not take (hp.accepts) or pixels that do not fit it.
  std::vector<float> encode(const EncoderInput& input, ThreadPool& pool);

  // The same in steps, so that a server can interleave an image's seconds of work with its other
  // requests: begin() embeds the patches, each advance() runs one block (a layer's attention or
  // its FFN) until done(), finish() gives the rows. A new begin() drops an unfinished image.
  void begin(const EncoderInput& input, ThreadPool& pool);
  bool done() const { return block_ >= 2 * hp_.n_layer; }
  void advance(ThreadPool& pool);
  std::vector<float> finish(ThreadPool& pool);
  int64_t blocks_left() const { return 2 * hp_.n_layer - block_; }

 private:
  void embed_patches(const EncoderInput& input, ThreadPool& pool);
  void order_windows();
  void attention_block(const VisionLayer& l, bool windowed, ThreadPool& pool);
  void attend(bool windowed, ThreadPool& pool);
  void ffn_block(const VisionLayer& l, ThreadPool& pool);
  void norm(float* out, const float* x, const std::vector<float>& w, const std::vector<float>& b) const;
  // out (n, rows) = clamp(x (n, cols)) @ W^T, clamped as l says
  void linear(const Linear& l, const float* x, int64_t n, float* out, ThreadPool& pool);
  std::vector<float> project(ThreadPool& pool);
  std::vector<float> project_pooled(ThreadPool& pool);
  std::vector<float> project_pixtral(ThreadPool& pool);
  std::vector<float> project_shuffled(ThreadPool& pool);
  std::vector<float> merge_blocks(const BlockMerger& m, ThreadPool& pool);
  std::vector<float> with_deepstack(std::vector<float> rows) const;
  void reserve(int64_t n);
  void resize_table(const float* table, float* out, ThreadPool& pool) const;

  const VisionModel& model_;
  const VisionHParams& hp_;
  const ProjectorTraits& traits_;
  int64_t gx_ = 0, gy_ = 0;  // the image's patch grid: columns, rows
  int64_t n_ = 0;            // patches (gx * gy)
  int64_t block_ = 0;  // blocks run of the image begun (2 per layer)
  // Row s of the residual stream holds patch order_[s] (raster index); patch p sits in row slot_[p].
  // The identity without window attention; with it, each window's patches are rows
  // [windows_[w].first, windows_[w].second). Only kBlockMerger projections read rows through slot_.
  std::vector<int32_t> order_, slot_;          // (n,) each
  std::vector<std::pair<int64_t, int64_t>> windows_;
  std::vector<std::pair<int64_t, int64_t>> tiles_;  // attend(): (window, first row) of each tile
  int64_t capacity_ = 0;  // patches the scratch holds
  std::vector<std::vector<float>> deepstack_;  // per deepstack layer run so far: (n_tok, T)
  kernels::FlashParams flash_params_{};
  std::vector<FlashWorker> workers_;  // one per thread

  // 2-D RoPE: the angles of a head's first and second half at each row or column position
  // (max_side_patches, head_dim/4, 2) each; which half takes the row is the projector's
  std::vector<float> rope_first_, rope_second_;

  // Scratch for the patches of the largest image so far (reserve()), row t belongs to patch t
  // (row-major over the patch grid).
  std::vector<float> patches_;  // (n, 3 * patch * patch) each patch's pixels, (c, ky, kx)
  std::vector<float> x_;        // (n, n_embd) residual stream
  std::vector<float> xn_;       // (n, n_embd) normed input of a block
  std::vector<float> q_, k_, v_;  // (n, n_embd)
  std::vector<float> att_;      // (n, n_embd)
  std::vector<float> y_;        // (n, n_embd) a block's output
  std::vector<float> hb_, hg_;  // (n, n_ff) up, gate
  std::vector<float> clamped_;  // (n, max(n_embd, n_ff)) a clamped linear's input
};

}  // namespace engine
