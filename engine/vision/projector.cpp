#include "engine/vision/projector.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include "engine/model/loader.h"

namespace engine {

namespace {

// The projector table: one row per kind ggufd runs.
constexpr const char* kScaleFactor = "clip.vision.projector.scale_factor";
constexpr const char* kSpatialMerge = "clip.vision.spatial_merge_size";
constexpr ProjectorTraits kProjectors[] = {
    // kind, name, fit, non_causal, begin, end,
    // norm, positions, merge key and default, min / max tokens (kKeepAspect), rope theta, attention scaled,
    // v normed, pixels centred, the image's positions in the decoder, the projection
    {ProjectorKind::kGemma3, "gemma3", ImageFit::kLetterbox, true, "<start_of_image>", "<end_of_image>",
     VitNorm::kLayerNorm, VitPositions::kLearned, kScaleFactor, 4, 0, 0, 0.0f, true, false, false,
     ImagePositions::kSequential, Projection::kPooled},
    {ProjectorKind::kGemma4v, "gemma4v", ImageFit::kKeepAspect, true, "<|image>", "<image|>",
     VitNorm::kRmsNorm, VitPositions::kTablesRope, kScaleFactor, 3, 40, 280, 100.0f, false, true, true,
     ImagePositions::kSequential, Projection::kPooled},
    {ProjectorKind::kPixtral, "pixtral", ImageFit::kKeepAspect, false, "", "[IMG_END]",
     VitNorm::kRmsNorm, VitPositions::kRope2d, kSpatialMerge, 1, 8, 1024, 10000.0f, true, false, false,
     ImagePositions::kSequential, Projection::kPatchMerger},
    {ProjectorKind::kQwen3vl, "qwen3vl_merger", ImageFit::kKeepAspect, false, "<|vision_start|>", "<|vision_end|>",
     VitNorm::kLayerNorm, VitPositions::kResizedMrope, kSpatialMerge, 2, 8, 4096, 10000.0f, true, false, false,
     ImagePositions::kMrope2d, Projection::kBlockMerger},
    {ProjectorKind::kQwen2vl, "qwen2vl_merger", ImageFit::kKeepAspect, false, "<|vision_start|>", "<|vision_end|>",
     VitNorm::kLayerNorm, VitPositions::kMrope, kSpatialMerge, 2, 8, 4096, 10000.0f, true, false, false,
     ImagePositions::kMrope2d, Projection::kBlockMerger},
    {ProjectorKind::kQwen25vl, "qwen2.5vl_merger", ImageFit::kKeepAspect, false, "<|vision_start|>", "<|vision_end|>",
     VitNorm::kRmsNorm, VitPositions::kMrope, kSpatialMerge, 2, 8, 4096, 10000.0f, true, false, false,
     ImagePositions::kMrope2d, Projection::kBlockMerger},
    {ProjectorKind::kIdefics3, "idefics3", ImageFit::kTiles, false, "", "",
     VitNorm::kLayerNorm, VitPositions::kLearned, kScaleFactor, 1, 0, 0, 0.0f, true, false, false,
     ImagePositions::kSequential, Projection::kPixelShuffle},
};

// Kinds llama.cpp's mtmd knows that ggufd does not run (yet): named in the load error, so a user
// learns the file is fine and what is missing.
constexpr const char* kKnownElsewhere[] = {
    "gemma4uv", "mlp", "mlp_norm",
    "ldp", "ldpv2", "resampler", "glm_edge", "lfm2", "internvl", "llama4", "kimivl", "ultravox", "qwen2a",
    "voxtral", "gemma3nv", "lightonocr", "cogvlm", "janus_pro"};

const ProjectorTraits* find_projector(std::string_view name) {
  for (const ProjectorTraits& t : kProjectors) {
    if (name == t.name) return &t;
  }
  return nullptr;
}

int64_t positive_u64(const gguf::File& f, const std::string& key) {
  const uint64_t v = f.get_u64(key);
  if (v == 0 || v > (1u << 20)) fail(f, "metadata '" + key + "' is " + std::to_string(v) + ", expected 1 .. 1048576");
  return static_cast<int64_t>(v);
}

void read_triple(const gguf::File& f, const std::string& key, float out[3]) {
  const gguf::Value* a = f.find_array(key);
  if (a == nullptr) return;  // the defaults (0.5: SigLIP's)
  if (a->size() != 3) fail(f, "metadata '" + key + "' has " + std::to_string(a->size()) + " values, expected 3");
  for (uint64_t i = 0; i < 3; ++i) out[i] = static_cast<float>(a->f64_at(i));
}

VisionHParams read_hparams(const gguf::File& f, const ProjectorTraits& traits) {
  VisionHParams hp;
  hp.fit = traits.fit;
  hp.image_size = positive_u64(f, "clip.vision.image_size");
  hp.patch_size = positive_u64(f, "clip.vision.patch_size");
  hp.n_embd = positive_u64(f, "clip.vision.embedding_length");
  hp.n_ff = positive_u64(f, "clip.vision.feed_forward_length");
  hp.n_head = positive_u64(f, "clip.vision.attention.head_count");
  hp.n_layer = positive_u64(f, "clip.vision.block_count");
  hp.n_embd_text = positive_u64(f, "clip.vision.projection_dim");
  hp.eps = static_cast<float>(f.find_f64("clip.vision.attention.layer_norm_epsilon").value_or(1e-6));
  hp.n_merge = traits.default_merge;  // llama.cpp's default; small test files say otherwise
  if (f.find_u64(traits.merge_key)) hp.n_merge = positive_u64(f, traits.merge_key);
  hp.min_tokens = traits.min_tokens;
  hp.max_tokens = traits.max_tokens;
  const bool gelu = f.find_bool("clip.use_gelu").value_or(false), silu = f.find_bool("clip.use_silu").value_or(false);
  if (gelu && silu) fail(f, "both clip.use_gelu and clip.use_silu are true");
  hp.act = gelu ? VisionHParams::Act::kGelu : silu ? VisionHParams::Act::kSilu : VisionHParams::Act::kGeluQuick;
  hp.row_breaks = traits.kind == ProjectorKind::kPixtral;
  read_triple(f, "clip.vision.image_mean", hp.mean);
  read_triple(f, "clip.vision.image_std", hp.std);
  for (float s : hp.std) {
    if (!(s > 0.0f)) fail(f, "metadata 'clip.vision.image_std' holds " + std::to_string(s) + ", expected > 0");
  }
  if (hp.n_merge > 64 || hp.patch_size > 1024) fail(f, "patch size or scale factor out of range");
  if (traits.fit == ImageFit::kTiles) {
    hp.longest_edge = static_cast<int64_t>(f.find_u64("clip.vision.preproc_image_size").value_or(0));
    // (the image is scaled to about this size before it is cut: bounded so that a file cannot make a
    // request allocate gigabytes; real ones are 1536 or 2048, 3 or 4 tiles a side)
    if (hp.longest_edge > 4096 || hp.longest_edge / hp.image_size + 1 > 16) {
      fail(f, "metadata 'clip.vision.preproc_image_size' is " + std::to_string(hp.longest_edge) +
                  ", expected at most 4096 pixels and 16 tiles of " + std::to_string(hp.image_size) + " a side");
    }
  }
  if (hp.fit == ImageFit::kTiles && (hp.image_size / hp.patch_size) % hp.n_merge != 0) {
    // (SmolVLM2's 384-pixel tiles of 14-pixel patches: 27 a side, the last 6 pixels unread, as a strided conv)
    fail(f, "image size " + std::to_string(hp.image_size) + " makes " + std::to_string(hp.image_size / hp.patch_size) +
                " patches a side, not a multiple of the scale factor " + std::to_string(hp.n_merge));
  }
  if (hp.fit == ImageFit::kLetterbox && hp.image_size % hp.align() != 0) {
    fail(f, "image size " + std::to_string(hp.image_size) + " is not a multiple of the patch size " +
                std::to_string(hp.patch_size) + " times the pooling " + std::to_string(hp.n_merge));
  }
  if (hp.n_embd % hp.n_head != 0) {
    fail(f, "embedding length " + std::to_string(hp.n_embd) + " is not a multiple of the head count " +
                std::to_string(hp.n_head));
  }
  if (hp.image_size > 4096 || hp.n_layer > 256) fail(f, "image size or block count out of range");
  if (traits.kind == ProjectorKind::kQwen25vl) {
    // llama.cpp requires n_wa_pattern here (0: no windows); the windows are Qwen2.5-VL's 112 pixels a
    // side (llama.cpp reads no key for them), in merged tokens
    hp.n_wa_pattern = static_cast<int64_t>(f.get_u64("clip.vision.n_wa_pattern"));
    hp.window_tokens = 112 / hp.align();
    if (hp.n_wa_pattern > 0 && hp.window_tokens == 0) {
      fail(f, "patch size x merge is " + std::to_string(hp.align()) + " pixels, over the 112-pixel attention window");
    }
  }
  if ((traits.positions == VitPositions::kResizedMrope || traits.positions == VitPositions::kMrope) &&
      hp.head_dim() > 512) {
    fail(f, "head size " + std::to_string(hp.head_dim()) + " is over 512");
  }
  if (traits.positions != VitPositions::kLearned && hp.head_dim() % 4 != 0) {
    fail(f, "head size " + std::to_string(hp.head_dim()) + " does not split into two rotary halves");
  }
  return hp;
}

// W (rows, cols) from a tensor of any rank whose last dimension is `rows` and whose others
// multiply to `cols` (the patch embedding's [patch, patch, 3, n_embd]).
Matrix flat_matrix(const Loader& ld, const gguf::File& f, const std::string& name, int64_t rows, int64_t cols) {
  const gguf::TensorInfo& t = ld.get(name);
  int64_t inner = 1;
  for (int i = 0; i + 1 < t.n_dims; ++i) inner *= static_cast<int64_t>(t.ne[static_cast<size_t>(i)]);
  if (t.n_dims < 2 || inner != cols || static_cast<int64_t>(t.ne[static_cast<size_t>(t.n_dims - 1)]) != rows) {
    fail(f, "tensor '" + name + "' has shape " + shape_string(t) + ", expected " + std::to_string(cols) +
                " values per row and " + std::to_string(rows) + " rows");
  }
  if (!supports(t.type)) fail(f, "tensor '" + name + "' has an unsupported type");
  return Matrix{t.type, rows, cols, static_cast<size_t>(t.row_bytes()) * (cols / static_cast<int64_t>(t.ne[0])),
                t.data.data()};
}

void read_clamp(const Loader& ld, const std::string& name, Clamp& c);

// A linear and the clamps Gemma 4's vision tower may give it (scalars beside the weight).
Linear linear(const Loader& ld, const std::string& name, int64_t rows, int64_t cols) {
  Linear l{ld.matrix(name + ".weight", rows, cols), {}};
  read_clamp(ld, name, l.clamp);
  return l;
}

void read_clamp(const Loader& ld, const std::string& name, Clamp& c) {
  const auto scalar = [&](const char* what, float& out) {
    const std::vector<float> v = ld.vector(name + what, 1, false);
    if (!v.empty()) out = v[0];
  };
  scalar(".input_min", c.in_lo);
  scalar(".input_max", c.in_hi);
  scalar(".output_min", c.out_lo);
  scalar(".output_max", c.out_hi);
}

// gemma4v's position tables: GGUF [n_embd, pos_size, 2] (columns' table, then rows'), f32.
std::vector<float> position_tables(const gguf::FileSet& files, const gguf::File& f, int64_t V, int64_t& pos_size) {
  const gguf::TensorInfo* t = files.find_tensor("v.position_embd.weight");
  if (t == nullptr) fail(f, "tensor 'v.position_embd.weight' is missing");
  if (t->n_dims != 3 || static_cast<int64_t>(t->ne[0]) != V || t->ne[2] != 2 || t->ne[1] == 0 || t->ne[1] > 65536) {
    fail(f, "tensor 'v.position_embd.weight' has shape " + shape_string(*t) + ", expected [" + std::to_string(V) +
                ", positions, 2]");
  }
  if (t->type != gguf::TensorType::F32) fail(f, "tensor 'v.position_embd.weight' is not F32");
  pos_size = static_cast<int64_t>(t->ne[1]);
  std::vector<float> out(static_cast<size_t>(2 * pos_size * V));
  std::memcpy(out.data(), t->data.data(), out.size() * sizeof(float));
  return out;
}

// qwen3vl's learned positions: GGUF [n_embd, side * side], f32 (a square grid of patches).
std::vector<float> square_table(const Loader& ld, const gguf::File& f, int64_t V, int64_t& side) {
  const gguf::TensorInfo& t = ld.get("v.position_embd.weight");
  const auto n = t.n_dims == 2 ? static_cast<int64_t>(t.ne[1]) : 0;
  side = static_cast<int64_t>(std::llround(std::sqrt(static_cast<double>(n))));
  if (n == 0 || side * side != n || side > 4096) {
    fail(f, "tensor 'v.position_embd.weight' has shape " + shape_string(t) + ", expected [" + std::to_string(V) +
                ", side * side]");
  }
  return ld.vectors("v.position_embd.weight", V, n, true);
}

// Rows of a matrix with `cols` values per row, as the file has it (at most 1 << 16).
int64_t rows_of(const Loader& ld, const gguf::File& f, const std::string& name, int64_t cols) {
  const gguf::TensorInfo& t = ld.get(name);
  if (t.n_dims != 2 || static_cast<int64_t>(t.ne[0]) != cols || t.ne[1] == 0 || t.ne[1] > (1u << 16)) {
    fail(f, "tensor '" + name + "' has shape " + shape_string(t) + ", expected [" + std::to_string(cols) + ", rows]");
  }
  return static_cast<int64_t>(t.ne[1]);
}

bool has_deepstack(const gguf::FileSet& files) {
  for (const gguf::TensorInfo* t : files.tensors()) {
    if (t->name.rfind("v.deepstack.", 0) == 0) return true;
  }
  return false;
}

// fc1 (H, 4V) and fc2 (T, H) with their biases, H as the file has it.
BlockMerger read_block_merger(const Loader& ld, const gguf::File& f, const std::string& fc1, const std::string& fc2,
                         int64_t V, int64_t T) {
  BlockMerger m;
  const int64_t H = rows_of(ld, f, fc1 + ".weight", 4 * V);
  m.fc1 = linear(ld, fc1, H, 4 * V);
  m.fc1_b = ld.vector(fc1 + ".bias", H, true);
  m.fc2 = linear(ld, fc2, T, H);
  m.fc2_b = ld.vector(fc2 + ".bias", T, true);
  return m;
}

// A fused attn_qkv (3V, V) and its bias (3V): q, k and v are views of its row thirds.
void split_qkv(const Loader& ld, const std::string& name, int64_t V, VisionLayer& l) {
  const Matrix qkv = ld.matrix(name + ".weight", 3 * V, V);
  Linear* parts[] = {&l.wq, &l.wk, &l.wv};
  for (int i = 0; i < 3; ++i) {
    parts[i]->w = Matrix{qkv.type, V, V, qkv.row_bytes,
                         static_cast<const uint8_t*>(qkv.data) + static_cast<size_t>(i * V) * qkv.row_bytes};
  }
  const std::vector<float> b = ld.vector(name + ".bias", 3 * V, false);
  if (b.empty()) return;
  l.bq.assign(b.begin(), b.begin() + V);
  l.bk.assign(b.begin() + V, b.begin() + 2 * V);
  l.bv.assign(b.begin() + 2 * V, b.end());
}

}  // namespace

bool VisionHParams::accepts(int64_t width, int64_t height) const {
  if (fit != ImageFit::kKeepAspect) return width == image_size && height == image_size;  // (a square, or tiles)
  if (width <= 0 || height <= 0 || width % align() != 0 || height % align() != 0) return false;
  if (width / patch_size > max_side_patches() || height / patch_size > max_side_patches()) return false;
  return (width / align()) * (height / align()) <= max_tokens;
}

std::array<int32_t, 4> mrope_positions(const std::vector<ImageSpan>& images, int64_t i) {
  int64_t shift = 0;
  for (const ImageSpan& im : images) {
    if (i < im.at) break;
    if (i < im.at + im.n_tokens) {
      const auto p = static_cast<int32_t>(im.at - shift);
      const int64_t k = i - im.at;
      return {p, p + static_cast<int32_t>(k / im.cols), p + static_cast<int32_t>(k % im.cols), 0};
    }
    shift += im.n_tokens - std::max(im.rows, im.cols);
  }
  const auto p = static_cast<int32_t>(i - shift);
  return {p, p, p, p};
}

const ProjectorTraits& projector_traits(ProjectorKind kind) {
  for (const ProjectorTraits& t : kProjectors) {
    if (t.kind == kind) return t;
  }
  throw std::logic_error("projector kind missing from the table");
}

std::string supported_projectors() {
  std::string s;
  for (const ProjectorTraits& t : kProjectors) s += (s.empty() ? "" : ", ") + std::string(t.name);
  return s;
}

VisionModel VisionModel::load(const std::string& path) { return from_files(gguf::FileSet::open(path)); }

VisionModel VisionModel::from_files(gguf::FileSet files) {
  VisionModel m(std::move(files));
  const gguf::File& f = m.files_.first();
  const std::string arch(f.find_string("general.architecture").value_or(""));
  if (arch != "clip") fail(f, "general.architecture is '" + arch + "', expected 'clip' (a vision projector file)");
  if (!f.find_bool("clip.has_vision_encoder").value_or(false)) fail(f, "the file has no vision encoder");
  const std::string kind(f.find_string("clip.projector_type").value_or(f.find_string("clip.vision.projector_type").value_or("")));
  m.traits_ = find_projector(kind);
  if (m.traits_ == nullptr) {
    bool known = false;
    for (const char* k : kKnownElsewhere) known |= kind == k;
    fail(f, "vision projector type '" + kind + "' is " + (known ? "not supported yet" : "unknown") +
                " (supported: " + supported_projectors() + ")");
  }
  m.hp_ = read_hparams(f, *m.traits_);
  const ProjectorTraits& tr = *m.traits_;
  const bool layer_norm = tr.norm == VitNorm::kLayerNorm;
  const int64_t V = m.hp_.n_embd, P = m.hp_.patch_size, D = m.hp_.head_dim(), F = m.hp_.n_ff;
  const Loader ld(m.files_);
  m.patch_embd = flat_matrix(ld, f, "v.patch_embd.weight", V, 3 * P * P);
  m.patch_bias = ld.vector("v.patch_embd.bias", V, false);
  m.pre_ln = ld.vector("v.pre_ln.weight", V, false);
  if (tr.positions == VitPositions::kLearned) {
    m.pos_embd = ld.vectors("v.position_embd.weight", V, m.hp_.max_patches(), true);
  } else if (tr.positions == VitPositions::kTablesRope) {
    m.pos_embd = position_tables(m.files_, f, V, m.hp_.pos_size);
  } else if (tr.positions == VitPositions::kResizedMrope) {
    m.pos_embd = square_table(ld, f, V, m.hp_.table_side);
  }
  if (ld.has("v.patch_embd.weight.1")) m.patch_embd_1 = flat_matrix(ld, f, "v.patch_embd.weight.1", V, 3 * P * P);
  for (int64_t il = 0; il < m.hp_.n_layer; ++il) {
    const std::string b = "v.blk." + std::to_string(il) + ".";
    VisionLayer l;
    l.ln1 = ld.vector(b + "ln1.weight", V, true);
    l.ln1_b = ld.vector(b + "ln1.bias", V, layer_norm);
    if (ld.has(b + "attn_qkv.weight")) {
      split_qkv(ld, b + "attn_qkv", V, l);
    } else {
      l.wq = linear(ld, b + "attn_q", V, V);
      l.wk = linear(ld, b + "attn_k", V, V);
      l.wv = linear(ld, b + "attn_v", V, V);
      l.bq = ld.vector(b + "attn_q.bias", V, false);
      l.bk = ld.vector(b + "attn_k.bias", V, false);
      l.bv = ld.vector(b + "attn_v.bias", V, false);
    }
    l.wo = linear(ld, b + "attn_out", V, V);
    l.bo = ld.vector(b + "attn_out.bias", V, false);
    l.q_norm = ld.vector(b + "attn_q_norm.weight", D, false);
    l.k_norm = ld.vector(b + "attn_k_norm.weight", D, false);
    l.attn_post_norm = ld.vector(b + "attn_post_norm.weight", V, false);
    l.ln2 = ld.vector(b + "ln2.weight", V, true);
    l.ln2_b = ld.vector(b + "ln2.bias", V, layer_norm);
    l.ffn_up = linear(ld, b + "ffn_up", F, V);
    if (ld.has(b + "ffn_gate.weight")) {
      l.ffn_gate = linear(ld, b + "ffn_gate", F, V);
      l.ffn_gate_b = ld.vector(b + "ffn_gate.bias", F, false);
    }
    l.ffn_down = linear(ld, b + "ffn_down", V, F);
    l.ffn_up_b = ld.vector(b + "ffn_up.bias", F, false);
    l.ffn_down_b = ld.vector(b + "ffn_down.bias", V, false);
    l.ffn_post_norm = ld.vector(b + "ffn_post_norm.weight", V, false);
    l.out_scale = ld.vector(b + "out_scale.weight", 1, false);
    m.layers.push_back(std::move(l));
  }
  m.post_ln = ld.vector("v.post_ln.weight", V, false);
  m.post_ln_b = ld.vector("v.post_ln.bias", V, false);
  const int64_t T = m.hp_.n_embd_text;
  if (tr.projection == Projection::kBlockMerger) {
    // qwen-vl: (norm v.post_ln), 2 x 2 patches concatenated, mm.0 + b, GELU, mm.2 + b
    const int64_t M = m.hp_.n_merge;
    if (M != 2) fail(f, "spatial_merge_size is " + std::to_string(M) + ", expected 2 (" + tr.name + " merges 2 x 2)");
    if (tr.kind != ProjectorKind::kQwen3vl && !m.patch_bias.empty()) {
      fail(f, std::string("tensor 'v.patch_embd.bias' is present; ") + tr.name + " has none (llama.cpp refuses it)");
    }
    if (tr.kind != ProjectorKind::kQwen3vl && m.patch_embd_1.rows == 0) {
      fail(f, std::string("tensor 'v.patch_embd.weight.1' (the temporal patch's second frame) is missing; ") + tr.name +
                  " has two patch embeddings");
    }
    for (int64_t il = 0; il < m.hp_.n_layer; ++il) {  // deepstack (Qwen3-VL): a merger of the layer's output
      const std::string b = "v.deepstack." + std::to_string(il) + ".";
      if (!ld.has(b + "fc1.weight")) continue;
      BlockMerger& d = m.layers[static_cast<size_t>(il)].deepstack;
      d = read_block_merger(ld, f, b + "fc1", b + "fc2", V, T);
      d.norm = ld.vector(b + "norm.weight", 4 * V, true);
      d.norm_b = ld.vector(b + "norm.bias", 4 * V, true);
      ++m.hp_.n_deepstack;
    }
    if (has_deepstack(m.files_) && (m.hp_.n_deepstack == 0 || tr.kind != ProjectorKind::kQwen3vl)) {
      fail(f, std::string("v.deepstack.* tensors ") +
                  (tr.kind == ProjectorKind::kQwen3vl ? "name no layer's fc1" : "in a projector without deepstack"));
    }
    if (tr.kind == ProjectorKind::kQwen3vl && m.post_ln.empty()) {
      fail(f, "tensor 'v.post_ln.weight' (the merger's norm) is missing");
    }
    m.block_merger = read_block_merger(ld, f, "mm.0", "mm.2", V, T);
    return m;
  }
  if (tr.projection == Projection::kPixelShuffle) {
    // idefics3: each k x k block of patches concatenated, @ mm.model.fc (no bias)
    const int64_t M = m.hp_.n_merge;
    m.shuffle_proj = linear(ld, "mm.model.fc", T, V * M * M);
    return m;
  }
  if (tr.kind == ProjectorKind::kPixtral) {
    // pixtral: [RMS norm, patch merger (Mistral Small 3.1)], mm.1 + b, GELU, mm.2 + b; [IMG_BREAK]
    const int64_t M = m.hp_.n_merge;
    if (ld.has("mm.patch_merger.weight")) {
      m.merger_norm = ld.vector("mm.input_norm.weight", V, true);
      m.merger = linear(ld, "mm.patch_merger", V, V * M * M);
    } else if (M != 1) {
      fail(f, "spatial_merge_size is " + std::to_string(M) + " but the file has no 'mm.patch_merger.weight'");
    }
    m.mm1 = linear(ld, "mm.1", T, V);
    m.mm1_b = ld.vector("mm.1.bias", T, false);
    m.mm2 = linear(ld, "mm.2", T, T);
    m.mm2_b = ld.vector("mm.2.bias", T, false);
    m.img_break = ld.vector("v.token_embd.img_break", T, true);
    return m;
  }
  if (tr.kind == ProjectorKind::kGemma4v) {
    // gemma4v: standardize, RMS norm (no weight), then input_projection @ x: GGUF [V, T]
    m.std_bias = ld.vector("v.std_bias", V, false);
    m.std_scale = ld.vector("v.std_scale", V, false);
    m.input_proj = linear(ld, "mm.input_projection", T, V);
    return m;
  }
  // gemma3: RMS norm, then x @ input_projection, stored (n_embd, n_embd_text) as llama.cpp
  // multiplies by its transpose: kept here as (n_embd_text, n_embd) rows for matmul.
  m.soft_emb_norm = ld.vector("mm.soft_emb_norm.weight", V, true);
  const std::vector<float> proj = ld.vectors("mm.input_projection.weight", T, V, true);  // (V, T)
  m.input_proj_rows_.resize(proj.size());
  for (int64_t v = 0; v < V; ++v) {
    for (int64_t t = 0; t < T; ++t) {
      m.input_proj_rows_[static_cast<size_t>(t * V + v)] = proj[static_cast<size_t>(v * T + t)];
    }
  }
  m.input_proj.w = Matrix{gguf::TensorType::F32, T, V, static_cast<size_t>(V) * sizeof(float), m.input_proj_rows_.data()};
  return m;
}

}  // namespace engine
