#include "engine/model/model.h"

#include <sys/mman.h>

#include <cstring>
#include <stdexcept>
#include <string_view>

namespace engine {

namespace {

[[noreturn]] void fail(const gguf::File& file, const std::string& what) {
  throw std::runtime_error(file.name() + ": " + what);
}

std::string shape_string(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (int i = 0; i < t.n_dims; ++i) s += (i ? ", " : "") + std::to_string(t.ne[i]);
  return s + "]";
}

// Reads the tensors of `file`, checking each one's presence, shape and type as it goes.
class Loader {
 public:
  explicit Loader(const gguf::File& file) : file_(file) {}

  // A 2-D weight W (rows, cols): GGUF shape [cols, rows].
  Matrix matrix(const std::string& name, int64_t rows, int64_t cols) const {
    const gguf::TensorInfo& t = get(name);
    if (t.n_dims != 2 || static_cast<int64_t>(t.ne[0]) != cols ||
        static_cast<int64_t>(t.ne[1]) != rows) {
      fail(file_, "tensor '" + name + "' has shape " + shape_string(t) + ", expected [" +
                      std::to_string(cols) + ", " + std::to_string(rows) + "]");
    }
    check_type(t);
    return view(t);
  }

  // A 1-D vector (n,) as f32; empty when absent and !required.
  std::vector<float> vector(const std::string& name, int64_t n, bool required) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) {
      if (required) get(name);  // throws "missing"
      return {};
    }
    if (t->n_dims != 1 || static_cast<int64_t>(t->ne[0]) != n) {
      fail(file_, "tensor '" + name + "' has shape " + shape_string(*t) + ", expected [" +
                      std::to_string(n) + "]");
    }
    std::vector<float> out(static_cast<size_t>(n));
    if (t->type == gguf::TensorType::F32) {
      std::memcpy(out.data(), t->data.data(), out.size() * sizeof(float));
    } else {
      check_type(*t);
      dequantize_row(view(*t), 0, out.data());
    }
    return out;
  }

  const gguf::TensorInfo& get(const std::string& name) const {
    const gguf::TensorInfo* t = file_.find_tensor(name);
    if (!t) fail(file_, "tensor '" + name + "' is missing (architecture " + arch() + ")");
    return *t;
  }

  static Matrix view(const gguf::TensorInfo& t) {
    return Matrix{t.type, static_cast<int64_t>(t.n_rows()), static_cast<int64_t>(t.ne[0]),
                  static_cast<size_t>(t.row_bytes()), t.data.data()};
  }

 private:
  void check_type(const gguf::TensorInfo& t) const {
    if (!supports(t.type)) {
      fail(file_, "tensor '" + std::string(t.name) + "' has type " +
                      std::string(gguf::type_info(t.type).name) + ", which is not supported");
    }
  }
  std::string arch() const { return std::string(file_.find_string("general.architecture").value_or("?")); }

  const gguf::File& file_;
};

Arch parse_arch(const gguf::File& file, std::string_view name) {
  if (name == "llama") return Arch::kLlama;
  if (name == "qwen2") return Arch::kQwen2;
  if (name == "qwen3") return Arch::kQwen3;
  fail(file, "architecture '" + std::string(name) +
                 "' is not supported (supported: llama, qwen2, qwen3)");
}

// rope.scaling.type / factor, or the older rope.scale_linear -> freq_scale.
float read_rope_freq_scale(const gguf::File& file, const std::string& p) {
  const std::string type(file.find_string(p + "rope.scaling.type").value_or("linear"));
  if (type == "none") return 1.0f;
  if (type != "linear") {
    fail(file, "rope scaling type '" + type + "' (" + p + "rope.scaling.type) is not supported "
               "(supported: none, linear)");
  }
  double factor = file.find_f64(p + "rope.scaling.factor").value_or(0.0);
  if (factor == 0.0) factor = file.find_f64(p + "rope.scale_linear").value_or(0.0);
  if (factor < 0.0) fail(file, p + "rope.scaling.factor must be positive");
  return factor == 0.0 ? 1.0f : static_cast<float>(1.0 / factor);
}

int64_t positive(const gguf::File& file, const std::string& key, uint64_t v) {
  if (v == 0 || v > (1ull << 31)) fail(file, key + " = " + std::to_string(v) + " is out of range");
  return static_cast<int64_t>(v);
}

}  // namespace

HParams read_hparams(const gguf::File& file) {
  if (file.big_endian()) {
    fail(file, "big-endian GGUF files are not supported (convert the model to little-endian)");
  }
  HParams hp;
  hp.arch_name = std::string(file.get_string("general.architecture"));
  hp.arch = parse_arch(file, hp.arch_name);
  const std::string p = hp.arch_name + ".";
  auto req = [&](const std::string& key) { return positive(file, p + key, file.get_u64(p + key)); };
  auto opt = [&](const std::string& key, int64_t dflt) {
    const auto v = file.find_u64(p + key);
    return v ? positive(file, p + key, *v) : dflt;
  };
  hp.n_ctx_train = req("context_length");
  hp.n_embd = req("embedding_length");
  hp.n_layer = req("block_count");
  hp.n_ff = req("feed_forward_length");
  hp.n_head = req("attention.head_count");
  hp.n_head_kv = opt("attention.head_count_kv", hp.n_head);
  if (hp.n_head % hp.n_head_kv != 0) {
    fail(file, p + "attention.head_count (" + std::to_string(hp.n_head) +
                   ") is not a multiple of head_count_kv (" + std::to_string(hp.n_head_kv) + ")");
  }
  hp.head_dim_k = opt("attention.key_length", hp.n_embd / hp.n_head);
  hp.head_dim_v = opt("attention.value_length", hp.n_embd / hp.n_head);
  hp.n_rot = static_cast<int>(opt("rope.dimension_count", hp.head_dim_k));
  if (hp.n_rot % 2 != 0 || hp.n_rot > hp.head_dim_k) {
    fail(file, p + "rope.dimension_count (" + std::to_string(hp.n_rot) +
                   ") must be even and at most the head size (" + std::to_string(hp.head_dim_k) + ")");
  }
  hp.rms_eps = static_cast<float>(file.get_f64(p + "attention.layer_norm_rms_epsilon"));
  hp.rope_freq_base = static_cast<float>(file.find_f64(p + "rope.freq_base").value_or(10000.0));
  hp.rope_freq_scale = read_rope_freq_scale(file, p);
  hp.rope_style = hp.arch == Arch::kLlama ? RopeStyle::kNormal : RopeStyle::kNeox;
  return hp;
}

Model Model::load(const std::string& path, bool repack) { return from_file(gguf::File::open(path), repack); }

uint64_t Model::weight_bytes() const { return file_.file_size() - file_.data_offset(); }

// output, then each layer's projections: &matrix of every matrix matmul reads.
template <class M, class Layers>
std::vector<M*> matmul_weights_of(M& output, Layers& layers) {
  std::vector<M*> mats{&output};
  for (auto& l : layers) {
    for (M* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.ffn_gate, &l.ffn_up, &l.ffn_down}) mats.push_back(m);
  }
  return mats;
}

std::vector<const Matrix*> Model::matmul_weights() const { return matmul_weights_of<const Matrix>(output, layers); }

namespace {

// The rows of m that matmul reads from the file mapping: those past the packed ones.
std::span<const uint8_t> file_rows(const Matrix& m) {
  const auto packed = static_cast<size_t>(m.packed_rows) * m.row_bytes;
  return {static_cast<const uint8_t*>(m.data) + packed, static_cast<size_t>(m.rows - m.packed_rows) * m.row_bytes};
}

}  // namespace

std::vector<std::span<const uint8_t>> Model::matmul_ranges() const {
  std::vector<std::span<const uint8_t>> ranges;
  for (const Matrix* m : matmul_weights()) {
    const auto packed = static_cast<size_t>(m->packed_rows) * m->row_bytes;
    if (packed > 0) ranges.emplace_back(static_cast<const uint8_t*>(m->packed), packed);
    if (const auto rows = file_rows(*m); !rows.empty()) ranges.push_back(rows);
  }
  return ranges;
}

void Model::page_in(const std::function<void(uint64_t, uint64_t)>& progress) const {
  std::vector<std::span<const uint8_t>> ranges;
  uint64_t total = 0;
  for (const Matrix* m : matmul_weights()) {
    if (const auto rows = file_rows(*m); !rows.empty()) {
      ranges.push_back(rows);
      total += rows.size();
    }
  }
  constexpr uint64_t kPage = 4096, kReport = uint64_t{64} << 20;
  for (const std::span<const uint8_t> r : ranges) {
    // Ask for read-ahead of the whole range, then touch each page (the reads are what wait).
    const auto base = reinterpret_cast<uintptr_t>(r.data()) & ~(kPage - 1);
    ::madvise(reinterpret_cast<void*>(base), r.size() + (reinterpret_cast<uintptr_t>(r.data()) - base), MADV_WILLNEED);
  }
  uint8_t sum = 0;
  uint64_t done = 0, next_report = kReport;
  for (const std::span<const uint8_t> r : ranges) {
    for (uint64_t off = 0; off < r.size(); off += kPage) sum = static_cast<uint8_t>(sum + r[off]);
    done += r.size();
    if (done >= next_report) {
      progress(done, total);
      next_report = done + kReport;
    }
  }
  volatile uint8_t keep = sum;  // the reads must happen
  (void)keep;
  progress(total, total);
}

Model Model::from_file(gguf::File file, bool repack) {
  Model m(std::move(file));
  const gguf::File& f = m.file_;
  m.hp_ = read_hparams(f);
  HParams& hp = m.hp_;
  Loader ld(f);

  const gguf::TensorInfo& embd = ld.get("token_embd.weight");
  hp.n_vocab = embd.n_dims == 2 ? static_cast<int64_t>(embd.ne[1]) : 0;
  if (const auto v = f.find_u64(hp.arch_name + ".vocab_size"); v && static_cast<int64_t>(*v) != hp.n_vocab) {
    fail(f, hp.arch_name + ".vocab_size (" + std::to_string(*v) +
                ") does not match token_embd.weight's " + std::to_string(hp.n_vocab) + " rows");
  }
  m.tok_embd = ld.matrix("token_embd.weight", hp.n_vocab, hp.n_embd);
  m.output_norm = ld.vector("output_norm.weight", hp.n_embd, true);
  m.output = f.find_tensor("output.weight") ? ld.matrix("output.weight", hp.n_vocab, hp.n_embd)
                                            : m.tok_embd;
  m.rope_freqs = ld.vector("rope_freqs.weight", hp.n_rot / 2, false);

  const bool qwen2 = hp.arch == Arch::kQwen2, qwen3 = hp.arch == Arch::kQwen3;
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const std::string b = "blk." + std::to_string(il) + ".";
    LayerWeights l;
    l.attn_norm = ld.vector(b + "attn_norm.weight", hp.n_embd, true);
    l.wq = ld.matrix(b + "attn_q.weight", hp.q_dim(), hp.n_embd);
    l.wk = ld.matrix(b + "attn_k.weight", hp.k_dim(), hp.n_embd);
    l.wv = ld.matrix(b + "attn_v.weight", hp.v_dim(), hp.n_embd);
    l.wo = ld.matrix(b + "attn_output.weight", hp.n_embd, hp.n_head * hp.head_dim_v);
    l.bq = ld.vector(b + "attn_q.bias", hp.q_dim(), qwen2);
    l.bk = ld.vector(b + "attn_k.bias", hp.k_dim(), qwen2);
    l.bv = ld.vector(b + "attn_v.bias", hp.v_dim(), qwen2);
    l.bo = ld.vector(b + "attn_output.bias", hp.n_embd, false);
    l.q_norm = ld.vector(b + "attn_q_norm.weight", hp.head_dim_k, qwen3);
    l.k_norm = ld.vector(b + "attn_k_norm.weight", hp.head_dim_k, qwen3);
    l.ffn_norm = ld.vector(b + "ffn_norm.weight", hp.n_embd, true);
    l.ffn_gate = ld.matrix(b + "ffn_gate.weight", hp.n_ff, hp.n_embd);
    l.ffn_up = ld.matrix(b + "ffn_up.weight", hp.n_ff, hp.n_embd);
    l.ffn_down = ld.matrix(b + "ffn_down.weight", hp.n_embd, hp.n_ff);
    m.layers.push_back(std::move(l));
  }
  if (repack) {
    m.packed_ = PackedWeights::pack(matmul_weights_of<Matrix>(m.output, m.layers), f.owns_mapping());
    if (m.output.data == m.tok_embd.data) m.tok_embd = m.output;  // tied: look rows up in the copy
  }
  return m;
}

}  // namespace engine
