// A vision projector file (an "mmproj" GGUF, general.architecture "clip"): the vision transformer
// that turns an image's patches into hidden states and the projector that turns those into rows
// of the text model's embedding space. What sets each kind apart is one row of the projector
// table (projector.cpp); its keys and tensors are those llama.cpp's tools/mtmd reads.
#pragma once

#include <array>
#include <cmath>
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
  kGemma3,   // SigLIP ViT (LayerNorm, GELU, learned positions), k x k average pooling, RMS norm,
             // one projection to the text width: 256 tokens for 896 x 896 (gemma 3 4B-27B)
  kGemma4v,  // Gemma 4's ViT (RMS norms before and after each block, q/k norms, 2-D RoPE beside
             // learned column and row tables, gated GELU, clamped linears), k x k average pooling,
             // standardization, one projection: any aspect, 40 to 280 tokens (gemma 4)
  kPixtral,  // Pixtral / Mistral Small 3.1 / Ministral 3: RMS-normed ViT with 2-D RoPE, gated SiLU,
             // an optional k x k patch merger, a two-layer GELU projector and an [IMG_BREAK] row
             // after each row of tokens but the last: any aspect, 8 to 1024 tokens
  kQwen3vl,  // Qwen3-VL / Qwen3.5: LayerNorm ViT with a resized learned table and M-RoPE, GELU FFN,
             // each 2 x 2 block of patches concatenated through a two-layer GELU merger: any aspect,
             // 8 to 4096 tokens, which take 2-D M-RoPE positions in the decoder
  kQwen2vl,  // Qwen2-VL: as kQwen3vl without learned positions, quick GELU FFN, separate q / k / v
  kQwen25vl, // Qwen2.5-VL: as kQwen2vl with RMS norms, a gated SiLU FFN and window attention (every
             // n_wa_pattern-th layer full, the others within windows of 112 pixels a side)
  kIdefics3, // Idefics3 / SmolVLM: SigLIP ViT over square tiles of the image and an overview, each
             // tile's k x k patches pixel-shuffled into one token through one linear
};

// What turns the ViT's output into the decoder's rows.
enum class Projection {
  kPooled,        // k x k average pooling, a norm and one linear (gemma3, gemma4v)
  kPatchMerger,   // (a k x k patch merger,) two GELU layers and row breaks (pixtral)
  kBlockMerger,   // each 2 x 2 block of patches concatenated through two GELU layers (qwen-vl)
  kPixelShuffle,  // each k x k block of patches concatenated through one linear (idefics3)
};

// How an image is fitted to the encoder's input.
enum class ImageFit {
  kLetterbox,  // scaled (bilinear) to fit a square of image_size, centred on black (gemma3)
  kKeepAspect, // scaled to sides that are multiples of patch x merge, keeping the aspect, with
               // min_tokens <= tokens <= max_tokens ("smart resize"; gemma4v)
  kTiles,      // image_parts(): cut into squares of image_size after scaling its longer side to
               // longest_edge, then the whole image stretched to one more square (idefics3)
};

// An image's tokens in a prompt, for M-RoPE: where they start, how many, and their grid.
struct ImageSpan {
  int64_t at = 0, n_tokens = 0, rows = 0, cols = 0;
};

// Prompt position i's M-RoPE positions (temporal, height, width, extra) among `images` (in order,
// kMrope2d): a token (row, col) of an image starting at rope position p has (p, p + row, p + col,
// 0), as llama.cpp's mtmd gives it; text has its rope position in all four, which each image
// before it moves back by n_tokens - max(rows, cols) (the text after an image continues at
// p + max(rows, cols)).
std::array<int32_t, 4> mrope_positions(const std::vector<ImageSpan>& images, int64_t i);

// How the ViT is built (one set per projector row).
enum class VitNorm { kLayerNorm, kRmsNorm };
enum class VitPositions {
  kLearned,     // position_embd (n_patches, n_embd) added to the patches of the fixed square
  kTablesRope,  // position_embd (2, pos_size, n_embd): column and row tables added, and 2-D NeoX
                // RoPE in attention: a head's first half turns with the column, the second with the row
  kRope2d,      // no learned positions; 2-D RoPE of adjacent pairs: a head's first half turns with the
                // row, the second with the column at the odd frequencies (llama.cpp's build_rope_2d)
  kResizedMrope,  // position_embd (side^2, n_embd) resized bilinearly (corners aligned) to the patch
                  // grid and added; M-RoPE of the vision kind in attention: NeoX pairs (i, i + D/2),
                  // the first D/4 pairs turned by the row, the next D/4 by the column (ggml's
                  // GGML_ROPE_TYPE_VISION with sections D/4 each)
  kMrope,         // kResizedMrope without the learned table (qwen2vl, qwen2.5vl)
};

// Where an image's tokens sit in the decoder's RoPE.
enum class ImagePositions {
  kSequential,  // one position per token, as text
  kMrope2d,     // M-RoPE: all at the image's start p in the temporal section, p + row and p + column
                // in the height and width sections; the text after it continues at p + max(rows, cols)
};

// One row of the projector table.
struct ProjectorTraits {
  ProjectorKind kind;
  const char* name;          // clip.projector_type
  ImageFit fit;
  bool non_causal;           // the image's tokens see each other both ways in the decoder
  const char* image_begin;   // text put before the image's tokens (tokenized as text), or ""
  const char* image_end;     // text put after them
  VitNorm norm;
  VitPositions positions;
  const char* merge_key;     // the key that says how many patches a side merge into a token
  int64_t default_merge;     // when the file has none
  int64_t min_tokens, max_tokens;  // kKeepAspect: the image's tokens
  float rope_theta;          // kTablesRope
  bool attn_scaled;          // attention scores times 1/sqrt(head_dim) (false: times 1, q/k normed)
  bool v_norm;               // v RMS-normed per head, without a weight
  bool centre_pixels;        // the encoder takes 2 x pixel - 1 (after the file's mean and std)
  ImagePositions image_positions;
  Projection projection;
};
const ProjectorTraits& projector_traits(ProjectorKind kind);

// Hyperparameters (clip.vision.*).
struct VisionHParams {
  int64_t image_size = 0;   // image_size: the encoder's square input, in pixels (kLetterbox)
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
  int64_t pos_size = 0;     // kTablesRope: rows of each position table (patches per side at most)
  int64_t table_side = 0;   // kResizedMrope: the learned table's side (any grid is resized from it)
  ImageFit fit = ImageFit::kLetterbox;
  int64_t min_tokens = 0, max_tokens = 0;  // kKeepAspect
  // The FFN's activation: clip.use_gelu GELU (tanh), clip.use_silu SiLU, neither quick GELU
  // (x sigmoid(1.702 x): what llama.cpp runs for a file that says nothing, as Gemma 4's do).
  enum class Act { kGelu, kSilu, kGeluQuick } act = Act::kGelu;
  bool row_breaks = false;  // pixtral: an [IMG_BREAK] row after each row of tokens but the last
  int64_t n_deepstack = 0;  // qwen3vl: layers whose outputs are merged too (Qwen3-VL's deepstack)
  // qwen2.5vl's window attention (clip.vision.n_wa_pattern): layer il attends to all patches when
  // (il + 1) % n_wa_pattern == 0, else only to those of its window: squares of window_tokens x
  // window_tokens merged tokens (112 pixels) tiling the token grid from its top left. 0: none.
  int64_t n_wa_pattern = 0, window_tokens = 0;
  int64_t longest_edge = 0;  // kTiles: clip.vision.preproc_image_size (0: the overview alone)
  bool windowed(int64_t il) const { return n_wa_pattern > 0 && (il + 1) % n_wa_pattern != 0; }

  // The width of a row the encoder gives: the projection, then each deepstack layer's merge.
  int64_t row_width() const { return n_embd_text * (1 + n_deepstack); }

  int64_t head_dim() const { return n_embd / n_head; }
  int64_t align() const { return patch_size * n_merge; }  // input sides are multiples of this
  // The image's tokens in the decoder for an input of width x height pixels: (patches / merge)^2.
  int64_t n_tokens(int64_t width, int64_t height) const {
    const int64_t cols = width / align(), rows = height / align();
    return cols * rows + (row_breaks ? rows - 1 : 0);
  }
  // The span of such an input's tokens starting at prompt position `at` (M-RoPE's grid).
  ImageSpan span(int64_t at, int64_t width, int64_t height) const {
    return {at, n_tokens(width, height), height / align(), width / align()};
  }
  // The most patches a side may have (fit_image keeps to it).
  int64_t max_side_patches() const { return pos_size > 0 ? pos_size : max_tokens * n_merge; }
  // The most patches an input may have (scratch sizes).
  int64_t max_patches() const {
    return fit != ImageFit::kKeepAspect ? (image_size / patch_size) * (image_size / patch_size)
                                       : max_tokens * n_merge * n_merge;
  }
  // Whether width x height pixels is an input this encoder takes (fit_image's output sizes).
  bool accepts(int64_t width, int64_t height) const;
};

// A linear of Gemma 4's vision tower may clamp what goes in and what comes out (its
// .input_min/.input_max/.output_min/.output_max scalars); infinite bounds when the file has none.
struct Clamp {
  float in_lo = -INFINITY, in_hi = INFINITY, out_lo = -INFINITY, out_hi = INFINITY;
  bool clamps_input() const { return in_lo > -INFINITY || in_hi < INFINITY; }
  bool clamps_output() const { return out_lo > -INFINITY || out_hi < INFINITY; }
  bool clamps() const { return clamps_input() || clamps_output(); }
};

struct Linear {
  Matrix w;
  Clamp clamp;
};

// qwen3vl's merger of 2 x 2 blocks of patches (the projector's, and each deepstack layer's):
// blocks (n_tok, 4 n_embd), (LayerNorm * norm + norm_b), fc2(gelu(fc1 x + fc1_b)) + fc2_b.
struct BlockMerger {
  std::vector<float> norm, norm_b;  // (4 n_embd,) or empty: no norm here (the projector's is v.post_ln)
  Linear fc1, fc2;                  // (H, 4 n_embd), (n_embd_text, H)
  std::vector<float> fc1_b, fc2_b;  // (H,), (n_embd_text,)
  bool present() const { return fc1.w.rows > 0; }
};

struct VisionLayer {
  std::vector<float> ln1, ln1_b;  // (n_embd,) pre-attention norm (bias: LayerNorm only)
  Linear wq, wk, wv, wo;          // (n_embd, n_embd)
  std::vector<float> bq, bk, bv, bo;         // (n_embd,) or empty
  std::vector<float> q_norm, k_norm;         // (head_dim,) per-head RMS norms, or empty
  std::vector<float> attn_post_norm;         // (n_embd,) RMS norm of the attention's output, or empty
  std::vector<float> ln2, ln2_b;  // (n_embd,) pre-FFN norm
  Linear ffn_up;                  // (n_ff, n_embd)
  Linear ffn_gate;                // (n_ff, n_embd): act(gate + b) * up, or no rows (act(up))
  std::vector<float> ffn_gate_b;  // (n_ff,) or empty
  Linear ffn_down;                // (n_embd, n_ff)
  std::vector<float> ffn_up_b, ffn_down_b;
  std::vector<float> ffn_post_norm;          // (n_embd,) or empty
  std::vector<float> out_scale;              // (1,) the layer's output times this, or empty
  BlockMerger deepstack;                     // qwen3vl (Qwen3-VL): the layer's output merged too, or none
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
  std::vector<float> pos_embd;                // kLearned (n_patches, n_embd); kTablesRope (2, pos_size, n_embd)
  std::vector<VisionLayer> layers;
  std::vector<float> post_ln, post_ln_b;      // (n_embd,)
  std::vector<float> soft_emb_norm;           // (n_embd,) gemma3: RMS norm before the projection
  std::vector<float> std_bias, std_scale;     // (n_embd,) gemma4v: (x - bias) * scale after pooling
  Linear input_proj;                          // (n_embd_text, n_embd) (gemma3: over input_proj_rows_)
  std::vector<float> pre_ln;                  // (n_embd,) pixtral: RMS norm of the patches, or empty
  std::vector<float> merger_norm;             // (n_embd,) pixtral: RMS norm before the patch merger
  Linear merger;                              // (n_embd, n_embd * merge^2) pixtral, or no rows
  Linear shuffle_proj;                        // (n_embd_text, n_embd * merge^2) idefics3: mm.model.fc
  Linear mm1, mm2;                            // pixtral: (T, n_embd), (T, T): mm2(gelu(mm1 x + b1)) + b2
  std::vector<float> mm1_b, mm2_b;            // (T,) or empty
  std::vector<float> img_break;               // (T,) pixtral's [IMG_BREAK] row
  Matrix patch_embd_1;                        // (n_embd, 3 * patch * patch) qwen-vl: the temporal patch's
                                              // second frame (the image again), or no rows
  BlockMerger block_merger;                   // kBlockMerger: mm.0 and mm.2 (after v.post_ln)
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
