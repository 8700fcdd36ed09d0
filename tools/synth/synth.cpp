// Synthetic models: the streaming GGUF writer and the random weights. Shapes, tensor plans and
// metadata are in synth_arch.cpp, the built-in BPE vocabulary in synth_vocab.cpp.
#include "tools/synth/synth.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>

#include <unistd.h>

#include "gguf/file.h"
#include "tools/quantize/quantize.h"
#include "tools/synth/synth_plan.h"

namespace engine::synth {

using gguf::OwnedValue;

Metadata vocabulary_from(const std::string& path) {
  const gguf::File file = gguf::File::open(path);
  Metadata out;
  for (const gguf::KeyValue& kv : file.metadata()) {
    if (kv.key.starts_with("tokenizer.")) out.emplace_back(std::string(kv.key), OwnedValue::from(kv.value));
  }
  if (!file.find_array("tokenizer.ggml.tokens")) {
    throw std::runtime_error(path + ": has no tokenizer.ggml.tokens to copy");
  }
  return out;
}

namespace {

uint64_t token_count(const Metadata& vocab) {
  for (const auto& [key, v] : vocab) {
    if (key == "tokenizer.ggml.tokens") return v.items.size();
  }
  throw std::runtime_error("vocabulary has no tokenizer.ggml.tokens");
}

// ---------------------------------------------------------------------------------------------
// Streaming GGUF v3 writer (little-endian). gguf::Writer keeps all tensor data in memory; this
// one writes the header from the plan and then each tensor's bytes as they are produced.

class Sink {
 public:
  explicit Sink(std::string path) : path_(std::move(path)), f_(std::fopen(path_.c_str(), "wb")) {
    if (!f_) fail("cannot create");
    std::setvbuf(f_, nullptr, _IOFBF, 1 << 20);
  }
  ~Sink() {
    if (f_) std::fclose(f_);
  }
  Sink(const Sink&) = delete;
  Sink& operator=(const Sink&) = delete;

  void bytes(const void* p, size_t n) {
    if (n && std::fwrite(p, 1, n, f_) != n) fail("write failed");
    pos_ += n;
  }
  void number(uint64_t v, size_t size) {
    uint8_t b[8];
    for (size_t i = 0; i < size; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    bytes(b, size);
  }
  void string(std::string_view s) {
    number(s.size(), 8);
    bytes(s.data(), s.size());
  }
  void value(const OwnedValue& v) {
    if (v.type == gguf::ValueType::kString) {
      string(v.str);
    } else if (v.type == gguf::ValueType::kArray) {
      number(static_cast<uint32_t>(v.elem), 4);
      number(v.items.size(), 8);
      for (const OwnedValue& item : v.items) value(item);
    } else {
      number(v.bits, gguf::value_type_size(v.type));
    }
  }
  void pad(uint64_t align) {
    static const uint8_t zeros[64] = {};
    bytes(zeros, (align - pos_ % align) % align);
  }
  void close() {
    const int rc = std::fclose(f_);
    f_ = nullptr;
    if (rc != 0) fail("close failed");
  }
  uint64_t pos() const { return pos_; }

 private:
  [[noreturn]] void fail(const char* what) {
    throw std::runtime_error(path_ + ": " + what + ": " + std::strerror(errno));
  }
  std::string path_;
  std::FILE* f_;
  uint64_t pos_ = 0;
};

constexpr uint64_t kAlign = 32;
constexpr size_t kBatchBytes = 32u << 20;  // output bytes quantized per parallel batch

void write_header(Sink& out, const Metadata& meta, const std::vector<TensorPlan>& plan) {
  out.bytes("GGUF", 4);
  out.number(3, 4);
  out.number(plan.size(), 8);
  out.number(meta.size(), 8);
  for (const auto& [key, v] : meta) {
    out.string(key);
    out.number(static_cast<uint32_t>(v.type), 4);
    out.value(v);
  }
  uint64_t offset = 0;
  for (const TensorPlan& t : plan) {
    out.string(t.name);
    out.number(t.ne.size(), 4);
    for (uint64_t d : t.ne) out.number(d, 8);
    out.number(static_cast<uint32_t>(t.type), 4);
    out.number(offset, 8);
    offset += (t.n_bytes() + kAlign - 1) / kAlign * kAlign;
  }
  out.pad(kAlign);
}

// ---------------------------------------------------------------------------------------------
// Random weights: every row has its own generator, seeded from (seed, tensor name, row), so the
// values do not depend on how rows are spread over threads.

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 0x100000001b3ull;
  return h;
}

// Normal deviates by Marsaglia & Tsang's ziggurat (128 layers): one 64-bit draw per value on the
// fast path (~99%), exact N(0, 1) including the tails. The layer comes from bits independent of
// the magnitude.
class Ziggurat {
 public:
  Ziggurat() {
    const double m1 = 2147483648.0, vn = 9.91256303526217e-3;
    double dn = kR, tn = dn;
    const double q = vn / std::exp(-0.5 * dn * dn);
    kn_[0] = static_cast<uint32_t>((dn / q) * m1);
    kn_[1] = 0;
    wn_[0] = static_cast<float>(q / m1);
    wn_[127] = static_cast<float>(dn / m1);
    fn_[0] = 1.0f;
    fn_[127] = static_cast<float>(std::exp(-0.5 * dn * dn));
    for (int i = 126; i >= 1; --i) {
      dn = std::sqrt(-2.0 * std::log(vn / dn + std::exp(-0.5 * dn * dn)));
      kn_[i + 1] = static_cast<uint32_t>((dn / tn) * m1);
      tn = dn;
      fn_[i] = static_cast<float>(std::exp(-0.5 * dn * dn));
      wn_[i] = static_cast<float>(dn / m1);
    }
  }

  float operator()(uint64_t& state) const {
    for (;;) {
      const uint64_t r = splitmix64(state);
      const auto hz = static_cast<int32_t>(static_cast<uint32_t>(r >> 32));
      const int iz = static_cast<int>(r & 127);
      const float x = static_cast<float>(hz) * wn_[iz];
      if (static_cast<uint64_t>(std::llabs(hz)) < kn_[iz]) return x;  // inside the layer
      if (iz == 0) return tail(state, hz > 0);
      // Wedge: accept x with the density's probability.
      const float y = fn_[iz] + uniform(state) * (fn_[iz - 1] - fn_[iz]);
      if (y < std::exp(-0.5f * x * x)) return x;
    }
  }

 private:
  static constexpr double kR = 3.442619855899;  // start of the tail
  static float uniform(uint64_t& state) {  // (0, 1)
    return (static_cast<float>(splitmix64(state) >> 40) + 0.5f) * (1.0f / 16777216.0f);
  }
  static float tail(uint64_t& state, bool positive) {
    float x, y;
    do {
      x = -std::log(uniform(state)) / static_cast<float>(kR);
      y = -std::log(uniform(state));
    } while (y + y < x * x);
    const float v = static_cast<float>(kR) + x;
    return positive ? v : -v;
  }
  uint32_t kn_[128];
  float wn_[128], fn_[128];
};

const Ziggurat kNormal;

// x (n,) ~ N(0, sigma), from the generator state `state`.
void fill_normal(uint64_t state, float sigma, float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = sigma * kNormal(state);
}

// Runs fn(begin, end) over [0, n) split into `threads` contiguous ranges.
template <class Fn>
void parallel_for(int threads, int64_t n, const Fn& fn) {
  const int64_t nt = std::max<int64_t>(1, std::min<int64_t>(threads, n));
  std::vector<std::thread> pool;
  std::exception_ptr error;
  std::mutex mu;
  for (int64_t t = 1; t < nt; ++t) {
    pool.emplace_back([&, t] {
      try {
        fn(n * t / nt, n * (t + 1) / nt);
      } catch (...) {
        std::lock_guard lock(mu);
        error = std::current_exception();
      }
    });
  }
  try {
    fn(0, n / nt);
  } catch (...) {
    std::lock_guard lock(mu);
    error = std::current_exception();
  }
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

void write_tensor(Sink& out, const TensorPlan& t, uint64_t seed, int threads) {
  const auto cols = static_cast<int64_t>(t.ne[0]);
  const auto rows = static_cast<int64_t>(t.n_elements() / t.ne[0]);
  const size_t row_bytes = t.n_bytes() / static_cast<uint64_t>(rows);
  const int64_t batch = std::clamp<int64_t>(static_cast<int64_t>(kBatchBytes / row_bytes), 1, rows);
  std::vector<uint8_t> buf(static_cast<size_t>(batch) * row_bytes);
  uint64_t tensor_seed = seed ^ fnv1a(t.name);
  tensor_seed = splitmix64(tensor_seed);
  for (int64_t r0 = 0; r0 < rows; r0 += batch) {
    const int64_t nb = std::min(batch, rows - r0);
    parallel_for(threads, nb, [&](int64_t lo, int64_t hi) {
      std::vector<float> x(static_cast<size_t>(cols));
      for (int64_t r = lo; r < hi; ++r) {
        if (t.init == TensorPlan::Init::kOnes) {
          std::fill(x.begin(), x.end(), 1.0f);
        } else if (t.init == TensorPlan::Init::kPartialRope) {
          for (int64_t i = 0; i < cols; ++i) x[static_cast<size_t>(i)] = i < cols / 4 ? 1.0f : 1e30f;
        } else if (t.init == TensorPlan::Init::kDecay) {  // -exp(u), u = -1 + 1.5 Phi(z) uniform in [-1, 0.5)
          fill_normal(tensor_seed + static_cast<uint64_t>(r0 + r) * 0xD1B54A32D192ED03ull, 1.0f, x.data(), cols);
          for (float& v : x) v = -std::exp(-1.0f + 0.75f * std::erfc(-v / std::sqrt(2.0f)));
        } else {
          const float sigma =
              t.init == TensorPlan::Init::kFanIn ? 1.0f / std::sqrt(static_cast<float>(cols)) : 0.02f;
          fill_normal(tensor_seed + static_cast<uint64_t>(r0 + r) * 0xD1B54A32D192ED03ull, sigma, x.data(), cols);
          if (t.init == TensorPlan::Init::kNearOnes) {
            for (float& v : x) v += 1.0f;
          }
        }
        quantize::quantize_row(t.type, x.data(), buf.data() + static_cast<size_t>(r) * row_bytes, cols);
      }
    });
    out.bytes(buf.data(), static_cast<size_t>(nb) * row_bytes);
  }
  out.pad(kAlign);
}

// Throws std::runtime_error unless `s` describes a model the engines can run.
void check_shape(const Shape& s) {
  const bool dense_ok = s.n_layer >= 1 && s.n_embd >= 1 && s.n_head >= 1 && s.n_head_kv >= 1 &&
                        s.n_head % s.n_head_kv == 0 && (s.n_ff >= 1 || s.n_expert > 0) && s.head_size() % 2 == 0;
  const bool moe_ok = s.n_expert == 0 || (s.n_expert_used >= 1 && s.n_expert_used <= s.n_expert && s.n_ff_exp >= 1);
  const bool swa_ok = s.n_swa == 0 || (s.n_swa > 0 && s.swa_pattern >= 1);
  const bool encoder_ok = !s.is_encoder() || (s.n_ctx >= 1 && s.n_head_kv == s.n_head && s.head_dim == 0 &&
                                              s.n_expert == 0 && s.n_token_types >= 0 && s.n_cls_out >= 0);
  if (!dense_ok || !moe_ok || !swa_ok || !encoder_ok || s.n_expert < 0) {
    throw std::runtime_error("synth: inconsistent shape '" + s.name + "'");
  }
  if (s.is_hybrid()) detail::check_hybrid_shape(s);
}

}  // namespace

Options demo_options() {
  Options o;
  o.shape = *find_shape("demo");
  o.type = *find_file_type("Q8_0");
  o.seed = 20240601;
  return o;
}

Result write_model(const Options& o, const std::string& path) {
  Shape shape = o.shape;
  check_shape(shape);
  Metadata vocab = !o.vocab_from.empty() ? vocabulary_from(o.vocab_from)
                  : shape.is_encoder()    ? builtin_wordpiece_vocabulary(shape.n_vocab)
                                          : builtin_vocabulary(shape.n_vocab);
  shape.n_vocab = static_cast<int64_t>(token_count(vocab));

  // The model's own keys win over a copied vocabulary's (bert: tokenizer.ggml.token_type_count).
  Metadata meta = model_metadata(shape, o.type);
  const size_t n_model_keys = meta.size();
  for (auto& kv : vocab) {
    const auto first = meta.begin(), last = meta.begin() + static_cast<std::ptrdiff_t>(n_model_keys);
    if (std::none_of(first, last, [&kv](const auto& m) { return m.first == kv.first; })) meta.push_back(std::move(kv));
  }
  const std::vector<TensorPlan> plan = plan_tensors(shape, o.type);
  const int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));

  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(counter++);
  Result r;
  try {
    Sink out(tmp);
    write_header(out, meta, plan);
    for (const TensorPlan& t : plan) {
      write_tensor(out, t, o.seed, threads);
      r.n_params += t.n_elements();
    }
    r.bytes = out.pos();
    out.close();
    std::filesystem::rename(tmp, path);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
  r.n_vocab = shape.n_vocab;
  r.n_tensors = plan.size();
  return r;
}

}  // namespace engine::synth
