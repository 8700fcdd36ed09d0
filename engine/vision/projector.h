// A vision projector file (an "mmproj" GGUF, general.architecture "clip"): the vision transformer
// that turns an image's patches into hidden states and the projector that turns those into rows
// of the text model's embedding space. What sets each kind apart is one row of the projector
// table (projector.cpp); its keys and tensors are those llama.cpp's tools/mtmd reads.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/kernels/matmul.h"
#include "gguf/file_set.h"

namespace engine {

// The projectors ggufd runs (clip.projector_type).
enum class ProjectorKind {
  kGemma3,  // SigLIP ViT (LayerNorm, GELU, learned positions), k x k average pooling, RMS norm,
            // one projection to the text width: 256 tokens for 896 x 896 (gemma 3 4B-27B)
};

// How an image is fitted to the encoder's input.
enum class ImageFit {
  kLetterbox,  // scaled (bilinear) to fit a square of image_size, centred on black (gemma3)
};

// One row of the projector table.
struct ProjectorTraits {
  ProjectorKind kind;
  const char* name;          // clip.projector_type
  ImageFit fit;
  bool non_causal;           // the image's tokens see each other both ways in the decoder
  const char* image_begin;   // text put before the image's tokens (tokenized as text), or ""
  const char* image_end;     // text put after them
};
const ProjectorTraits& projector_traits(ProjectorKind kind);

// Hyperparameters (clip.vision.*).
struct VisionHParams {
  int64_t image_size = 0;   // image_size: the encoder's square input, in pixels
  int64_t patch_size = 0;   // patch_size
  int64_t n_embd = 0;       // embedding_length: the ViT's width
  int64_t n_ff = 0;         // feed_forward_length
  int64_t n_head = 0;       // attention.head_count
  int64_t n_layer = 0;      // block_count
  float eps = 1e-6f;        // attention.layer_norm_epsilon
  int64_t n_merge = 1;      // projector.scale_factor: patches pooled per side into one token
  int64_t n_embd_text = 0;  // projection_dim: the text model's embedding width
  float mean[3] = {0.5f, 0.5f, 0.5f};  // image_mean, image_std: per channel of pixels in [0, 1]
  float std[3] = {0.5f, 0.5f, 0.5f};

  int64_t patches_per_side() const { return image_size / patch_size; }
  int64_t n_patches() const { return patches_per_side() * patches_per_side(); }
  int64_t head_dim() const { return n_embd / n_head; }
  // The image's tokens in the decoder (gemma3: (patches / merge)^2).
  int64_t n_tokens() const { return (patches_per_side() / n_merge) * (patches_per_side() / n_merge); }
};

struct VisionLayer {
  std::vector<float> ln1, ln1_b;  // (n_embd,) pre-attention LayerNorm
  Matrix wq, wk, wv, wo;          // (n_embd, n_embd)
  std::vector<float> bq, bk, bv, bo;
  std::vector<float> ln2, ln2_b;  // (n_embd,) pre-FFN LayerNorm
  Matrix ffn_up;                  // (n_ff, n_embd)
  Matrix ffn_down;                // (n_embd, n_ff)
  std::vector<float> ffn_up_b, ffn_down_b;
};

// A loaded projector file: hyperparameters and weights, viewed in place in the mapped file
// (the projection, stored transposed, is copied once).
// Ownership: owns the FileSet its Matrix views point into. Thread-safety: immutable after load;
// share freely.
class VisionModel {
 public:
  // Throws std::runtime_error naming the file and what is wrong: not a clip file, no vision
  // encoder, a projector kind that is unknown or not run here (naming it and the ones that are),
  // a missing tensor, a shape or type that does not fit.
  static VisionModel load(const std::string& path);
  static VisionModel from_files(gguf::FileSet files);
  VisionModel(VisionModel&&) = default;
  VisionModel& operator=(VisionModel&&) = default;
  VisionModel(const VisionModel&) = delete;  // input_proj views input_proj_rows_

  const ProjectorTraits& traits() const { return *traits_; }
  const VisionHParams& hparams() const { return hp_; }
  const gguf::FileSet& files() const { return files_; }

  Matrix patch_embd;                          // (n_embd, 3 * patch * patch), rows (c, ky, kx)
  std::vector<float> patch_bias;              // (n_embd,)
  std::vector<float> pos_embd;                // (n_patches, n_embd)
  std::vector<VisionLayer> layers;
  std::vector<float> post_ln, post_ln_b;      // (n_embd,)
  std::vector<float> soft_emb_norm;           // (n_embd,) gemma3: RMS norm before the projection
  Matrix input_proj;                          // (n_embd_text, n_embd) over input_proj_rows_
 private:
  explicit VisionModel(gguf::FileSet files) : files_(std::move(files)) {}
  gguf::FileSet files_;
  const ProjectorTraits* traits_ = nullptr;
  VisionHParams hp_;
  std::vector<float> input_proj_rows_;        // (n_embd_text, n_embd) f32: the file's transposed
};

// The projector kinds the table knows and runs, for messages ("gemma3").
std::string supported_projectors();

}  // namespace engine
