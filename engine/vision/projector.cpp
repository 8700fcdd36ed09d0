#include "engine/vision/projector.h"

#include <stdexcept>

#include "engine/model/loader.h"

namespace engine {

namespace {

// The projector table: one row per kind ggufd runs.
constexpr ProjectorTraits kProjectors[] = {
    // kind                   name      fit                   non_causal begin               end
    {ProjectorKind::kGemma3, "gemma3", ImageFit::kLetterbox, true,      "<start_of_image>", "<end_of_image>"},
};

// Kinds llama.cpp's mtmd knows that ggufd does not run (yet): named in the load error, so a user
// learns the file is fine and what is missing.
constexpr const char* kKnownElsewhere[] = {
    "gemma4v", "qwen2vl_merger", "qwen2.5vl_merger", "qwen3vl_merger", "pixtral", "idefics3", "mlp", "mlp_norm",
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

VisionHParams read_hparams(const gguf::File& f) {
  VisionHParams hp;
  hp.image_size = positive_u64(f, "clip.vision.image_size");
  hp.patch_size = positive_u64(f, "clip.vision.patch_size");
  hp.n_embd = positive_u64(f, "clip.vision.embedding_length");
  hp.n_ff = positive_u64(f, "clip.vision.feed_forward_length");
  hp.n_head = positive_u64(f, "clip.vision.attention.head_count");
  hp.n_layer = positive_u64(f, "clip.vision.block_count");
  hp.n_embd_text = positive_u64(f, "clip.vision.projection_dim");
  hp.eps = static_cast<float>(f.find_f64("clip.vision.attention.layer_norm_epsilon").value_or(1e-6));
  hp.n_merge = 4;  // gemma 3's pooling (llama.cpp's default; small test files say otherwise)
  if (f.find_u64("clip.vision.projector.scale_factor")) hp.n_merge = positive_u64(f, "clip.vision.projector.scale_factor");
  read_triple(f, "clip.vision.image_mean", hp.mean);
  read_triple(f, "clip.vision.image_std", hp.std);
  for (float s : hp.std) {
    if (!(s > 0.0f)) fail(f, "metadata 'clip.vision.image_std' holds " + std::to_string(s) + ", expected > 0");
  }
  if (hp.image_size % hp.patch_size != 0) {
    fail(f, "image size " + std::to_string(hp.image_size) + " is not a multiple of the patch size " +
                std::to_string(hp.patch_size));
  }
  if (hp.patches_per_side() % hp.n_merge != 0) {
    fail(f, std::to_string(hp.patches_per_side()) + " patches per side do not pool by " + std::to_string(hp.n_merge));
  }
  if (hp.n_embd % hp.n_head != 0) {
    fail(f, "embedding length " + std::to_string(hp.n_embd) + " is not a multiple of the head count " +
                std::to_string(hp.n_head));
  }
  if (hp.image_size > 4096 || hp.n_layer > 256) fail(f, "image size or block count out of range");
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

}  // namespace

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
  m.hp_ = read_hparams(f);
  const VisionHParams& hp = m.hp_;
  const int64_t V = hp.n_embd, P = hp.patch_size;
  const Loader ld(m.files_);
  m.patch_embd = flat_matrix(ld, f, "v.patch_embd.weight", V, 3 * P * P);
  m.patch_bias = ld.vector("v.patch_embd.bias", V, false);
  m.pos_embd = ld.vectors("v.position_embd.weight", V, hp.n_patches(), true);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string b = "v.blk." + std::to_string(il) + ".";
    VisionLayer l;
    l.ln1 = ld.vector(b + "ln1.weight", V, true);
    l.ln1_b = ld.vector(b + "ln1.bias", V, true);
    l.wq = ld.matrix(b + "attn_q.weight", V, V);
    l.wk = ld.matrix(b + "attn_k.weight", V, V);
    l.wv = ld.matrix(b + "attn_v.weight", V, V);
    l.wo = ld.matrix(b + "attn_out.weight", V, V);
    l.bq = ld.vector(b + "attn_q.bias", V, false);
    l.bk = ld.vector(b + "attn_k.bias", V, false);
    l.bv = ld.vector(b + "attn_v.bias", V, false);
    l.bo = ld.vector(b + "attn_out.bias", V, false);
    l.ln2 = ld.vector(b + "ln2.weight", V, true);
    l.ln2_b = ld.vector(b + "ln2.bias", V, true);
    l.ffn_up = ld.matrix(b + "ffn_up.weight", hp.n_ff, V);
    l.ffn_up_b = ld.vector(b + "ffn_up.bias", hp.n_ff, false);
    l.ffn_down = ld.matrix(b + "ffn_down.weight", V, hp.n_ff);
    l.ffn_down_b = ld.vector(b + "ffn_down.bias", V, false);
    m.layers.push_back(std::move(l));
  }
  m.post_ln = ld.vector("v.post_ln.weight", V, false);
  m.post_ln_b = ld.vector("v.post_ln.bias", V, false);
  // gemma3: RMS norm, then x @ input_projection, stored (n_embd, n_embd_text) as llama.cpp
  // multiplies by its transpose: kept here as (n_embd_text, n_embd) rows for matmul.
  m.soft_emb_norm = ld.vector("mm.soft_emb_norm.weight", V, true);
  const std::vector<float> proj = ld.vectors("mm.input_projection.weight", hp.n_embd_text, V, true);  // (V, T)
  m.input_proj_rows_.resize(proj.size());
  for (int64_t v = 0; v < V; ++v) {
    for (int64_t t = 0; t < hp.n_embd_text; ++t) {
      m.input_proj_rows_[static_cast<size_t>(t * V + v)] = proj[static_cast<size_t>(v * hp.n_embd_text + t)];
    }
  }
  m.input_proj = Matrix{gguf::TensorType::F32, hp.n_embd_text, V, static_cast<size_t>(V) * sizeof(float),
                        m.input_proj_rows_.data()};
  return m;
}

}  // namespace engine
