// gemma4's hyperparameters (see gemma4_hparams.h).
#include "engine/model/gemma4_hparams.h"

#include <cmath>
#include <stdexcept>

namespace engine {

namespace {

[[noreturn]] void fail(const gguf::File& file, const std::string& what) {
  throw std::runtime_error(file.name() + ": " + what);
}

// A required size key in [1, 2^20].
int64_t size_key(const gguf::File& file, const std::string& key) {
  const auto v = file.find_u64(key);
  if (!v) fail(file, key + " is missing (architecture gemma4)");
  if (*v == 0 || *v > (1u << 20)) fail(file, key + " = " + std::to_string(*v) + " is out of range");
  return static_cast<int64_t>(*v);
}

// attention.sliding_window_pattern: an array of one flag per layer, or one value every layer
// takes (llama.cpp's get_key_or_arr).
void read_swa_layers(const gguf::File& file, const std::string& p, HParams& hp) {
  const std::string key = p + "attention.sliding_window_pattern";
  const gguf::Value* v = file.find(key);
  if (!v) fail(file, key + " is missing (architecture gemma4)");
  auto flag = [&](uint64_t i) {
    const gguf::ValueType t = v->is_array() ? v->element_type() : v->type();
    if (t == gguf::ValueType::kBool) return v->is_array() ? v->bool_at(i) : v->as_bool();
    return (v->is_array() ? v->i64_at(i) : v->as_i64()) != 0;
  };
  if (v->is_array() && v->size() != static_cast<uint64_t>(hp.n_layer)) {
    fail(file, key + " has " + std::to_string(v->size()) + " entries, expected " + std::to_string(hp.n_layer) +
                   " (one per layer)");
  }
  for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layer[static_cast<size_t>(il)] = flag(static_cast<uint64_t>(il));
}

// attention.shared_kv_layers = s: the last s layers keep no K/V; each reads that of the last
// layer of its kind before them (llama.cpp: n_kv_from_start - 2 for sliding layers, - 1 for
// global ones, which must be of the same kind).
void read_shared_kv(const gguf::File& file, const std::string& p, HParams& hp) {
  const std::string key = p + "attention.shared_kv_layers";
  const uint64_t shared = file.find_u64(key).value_or(0);
  hp.kv_layer.resize(static_cast<size_t>(hp.n_layer));
  for (int64_t il = 0; il < hp.n_layer; ++il) hp.kv_layer[static_cast<size_t>(il)] = static_cast<int32_t>(il);
  if (shared == 0) return;
  if (shared + 2 > static_cast<uint64_t>(hp.n_layer)) {
    fail(file, key + " = " + std::to_string(shared) + " leaves fewer than 2 of the " + std::to_string(hp.n_layer) +
                   " layers with K/V of their own");
  }
  const int64_t from = hp.n_layer - static_cast<int64_t>(shared);
  for (int64_t il = from; il < hp.n_layer; ++il) {
    const int64_t src = from - (hp.swa(il) ? 2 : 1);
    if (hp.swa(src) != hp.swa(il)) {
      fail(file, key + ": layer " + std::to_string(il) + " would reuse the K/V of layer " + std::to_string(src) +
                     ", which is not of its kind (sliding / global)");
    }
    hp.kv_layer[static_cast<size_t>(il)] = static_cast<int32_t>(src);
  }
}

}  // namespace

void read_gemma4_hparams(const gguf::File& file, const std::string& p, HParams& hp) {
  read_swa_layers(file, p, hp);
  hp.n_swa = size_key(file, p + "attention.sliding_window");
  if (const auto b = file.find_f64(p + "rope.freq_base_swa")) {
    if (!std::isfinite(*b) || *b <= 0.0) fail(file, p + "rope.freq_base_swa is out of range");
    hp.rope_freq_base_swa = static_cast<float>(*b);
  }
  hp.head_dim_k_swa = size_key(file, p + "attention.key_length_swa");
  hp.head_dim_v_swa = size_key(file, p + "attention.value_length_swa");
  if (hp.head_dim_k != hp.head_dim_v || hp.head_dim_k_swa != hp.head_dim_v_swa) {
    fail(file, p + "attention.key_length and value_length (and their _swa) must be equal for gemma4");
  }
  hp.n_rot_swa = static_cast<int>(file.find_u64(p + "rope.dimension_count_swa").value_or(static_cast<uint64_t>(hp.n_rot)));
  if (hp.n_rot_swa <= 0 || hp.n_rot_swa % 2 != 0 || hp.n_rot_swa > hp.head_dim_k_swa) {
    fail(file, p + "rope.dimension_count_swa (" + std::to_string(hp.n_rot_swa) +
                   ") must be even and at most the sliding layers' head size (" + std::to_string(hp.head_dim_k_swa) + ")");
  }
  hp.rope_factors_swa = false;  // rope_freqs: proportional RoPE of the global layers
  hp.n_embd_per_layer = size_key(file, p + "embedding_length_per_layer_input");
  read_shared_kv(file, p, hp);
  const double cap = file.find_f64(p + "final_logit_softcapping").value_or(0.0);
  if (!std::isfinite(cap) || cap < 0.0) fail(file, p + "final_logit_softcapping is out of range");
  hp.final_softcap = static_cast<float>(cap);
  hp.v_norm = true;
  hp.experts_beside_ffn = true;
  // scores = q . k, unscaled (its self.scaling = 1); embeddings * sqrt(n_embd)
  hp.q_scale = 1.0f;
  hp.kq_scale = 1.0f;
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
}

void describe_gemma4(const HParams& hp, std::vector<HParamField>& out) {
  if (hp.head_dim_k_swa != hp.head_dim_k || hp.n_rot_swa != hp.n_rot) {
    out.push_back({"head_dim_swa", std::to_string(hp.head_dim_k_swa) + " (" + std::to_string(hp.n_rot_swa) + " rotary dims)",
                   false});
  }
  std::string shared;
  for (int64_t il = 0; il < static_cast<int64_t>(hp.kv_layer.size()); ++il) {
    if (hp.own_kv(il)) continue;
    if (!shared.empty()) shared += ", ";
    shared += std::to_string(il) + " <- " + std::to_string(hp.kv_layer[static_cast<size_t>(il)]);
  }
  if (!shared.empty()) out.push_back({"shared_kv_layers", shared, false});
  if (hp.v_norm) out.push_back({"v_norm", "rms", false});
  if (hp.experts_beside_ffn && hp.n_expert > 0) out.push_back({"experts", "beside the dense FFN, in the layers with a router", false});
  if (hp.n_embd_per_layer > 0) {
    out.push_back({"embedding_length_per_layer_input", std::to_string(hp.n_embd_per_layer), true});
  }
}

}  // namespace engine
