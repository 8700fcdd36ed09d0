// The vision encoder: an image's pixels in, its rows of the text model's embedding space out.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/attention.h"
#include "engine/vision/projector.h"

namespace engine {

// Runs a VisionModel's ViT and projector over one image at a time.
//
// encode() takes the planar pixels fit_image() makes and returns (n_tokens, n_embd_text) rows,
// ready to stand in for token embeddings in the decoder's batch. Every weight product runs on the
// pool with the decoder's kernels; attention is bidirectional over the image's patches.
// Ownership: borrows the VisionModel (must outlive it); owns its scratch, sized at construction.
// Thread-safety: none; one VisionEncoder per thread driving a ThreadPool.
class VisionEncoder {
 public:
  explicit VisionEncoder(const VisionModel& model);

  // pixels (3, image_size, image_size) -> (n_tokens, n_embd_text). Throws std::invalid_argument
  // when pixels has the wrong size.
  std::vector<float> encode(const std::vector<float>& pixels, ThreadPool& pool);

  // The same in steps, so that a server can interleave an image's seconds of work with its other
  // requests: begin() embeds the patches, each advance() runs one block (a layer's attention or
  // its FFN) until done(), finish() gives the rows. A new begin() drops an unfinished image.
  void begin(const std::vector<float>& pixels, ThreadPool& pool);
  bool done() const { return block_ >= 2 * hp_.n_layer; }
  void advance(ThreadPool& pool);
  std::vector<float> finish(ThreadPool& pool);
  int64_t blocks_left() const { return 2 * hp_.n_layer - block_; }

 private:
  void embed_patches(const std::vector<float>& pixels, ThreadPool& pool);
  void attention_block(const VisionLayer& l, ThreadPool& pool);
  void ffn_block(const VisionLayer& l, ThreadPool& pool);
  std::vector<float> project(ThreadPool& pool);

  const VisionModel& model_;
  const VisionHParams& hp_;
  int64_t n_;  // patches
  int64_t block_ = 0;  // blocks run of the image begun (2 per layer)
  kernels::FlashParams flash_params_{};
  std::vector<FlashWorker> workers_;  // one per thread

  // Scratch, row t belongs to patch t (row-major over the patch grid).
  std::vector<float> patches_;  // (n, 3 * patch * patch) each patch's pixels, (c, ky, kx)
  std::vector<float> x_;        // (n, n_embd) residual stream
  std::vector<float> xn_;       // (n, n_embd) normed input of a block
  std::vector<float> q_, k_, v_;  // (n, n_embd)
  std::vector<float> att_;      // (n, n_embd)
  std::vector<float> y_;        // (n, n_embd) a block's output
  std::vector<float> hb_;       // (n, n_ff)
};

}  // namespace engine
