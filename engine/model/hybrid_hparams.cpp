// Hybrid stacks' hyperparameters (see hybrid_hparams.h).
#include "engine/model/hybrid_hparams.h"

#include "engine/model/recurrent_cache.h"

#include <cstdio>
#include <stdexcept>

namespace engine {

namespace {

[[noreturn]] void fail(const gguf::File& file, const std::string& what) {
  throw std::runtime_error(file.name() + ": " + what);
}

// A required size key in [1, max].
int64_t size_key(const gguf::File& file, const std::string& key, uint64_t max) {
  const auto v = file.find_u64(key);
  if (!v) fail(file, key + " is missing (needed by the Gated DeltaNet layers)");
  if (*v == 0 || *v > max) fail(file, key + " = " + std::to_string(*v) + " is out of range [1, " + std::to_string(max) + "]");
  return static_cast<int64_t>(*v);
}

bool array_flag(const gguf::Value& a, uint64_t i) {
  return a.element_type() == gguf::ValueType::kBool ? a.bool_at(i) : a.i64_at(i) != 0;
}

// Which of the stack's layers are Gated DeltaNet: attention.recurrent_layers (one flag per block,
// NextN blocks included), else every layer but each full_attention_interval-th (default 4).
void read_recurrent_layers(const gguf::File& file, const std::string& p, int64_t n_layer_all, HParams& hp) {
  hp.recurrent_layer.assign(static_cast<size_t>(hp.n_layer), 0);
  if (const gguf::Value* a = file.find_array(p + "attention.recurrent_layers")) {
    if (a->size() != static_cast<uint64_t>(n_layer_all)) {
      fail(file, p + "attention.recurrent_layers has " + std::to_string(a->size()) + " entries, expected " +
                     std::to_string(n_layer_all) + " (one per block)");
    }
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.recurrent_layer[static_cast<size_t>(il)] = array_flag(*a, static_cast<uint64_t>(il));
    return;
  }
  const uint64_t interval = file.find_u64(p + "full_attention_interval").value_or(4);
  if (interval == 0 || interval > static_cast<uint64_t>(INT32_MAX)) {
    fail(file, p + "full_attention_interval = " + std::to_string(interval) + " is out of range");
  }
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    hp.recurrent_layer[static_cast<size_t>(il)] = (static_cast<uint64_t>(il) + 1) % interval != 0;
  }
}

}  // namespace

// rope.dimension_sections: four section sizes (an array of 4, or one number for all four).
void read_rope_sections(const gguf::File& file, const std::string& p, HParams& hp, bool interleaved) {
  const std::string key = p + "rope.dimension_sections";
  if (const gguf::Value* a = file.find_array(key)) {
    if (a->size() != 4) fail(file, key + " has " + std::to_string(a->size()) + " entries, expected 4");
    for (uint64_t i = 0; i < 4; ++i) {
      const int64_t v = a->i64_at(i);
      if (v < 0 || v > hp.n_rot) fail(file, key + " entry " + std::to_string(v) + " is out of range");
      hp.rope_sections[i] = static_cast<int>(v);
    }
  } else if (const auto v = file.find_u64(key)) {
    if (*v > static_cast<uint64_t>(hp.n_rot)) fail(file, key + " = " + std::to_string(*v) + " is out of range");
    for (int& s : hp.rope_sections) s = static_cast<int>(*v);
  } else {
    fail(file, key + " is missing (multi-section RoPE)");
  }
  if (hp.rope_sections[0] + hp.rope_sections[1] + hp.rope_sections[2] == 0) {
    fail(file, key + ": the t, h and w sections are all 0");
  }
  hp.imrope = interleaved;
}

void read_hybrid_hparams(const gguf::File& file, const std::string& p, HParams& hp) {
  DeltaNetParams& s = hp.ssm;
  s.d_conv = size_key(file, p + "ssm.conv_kernel", 64);
  s.d_inner = size_key(file, p + "ssm.inner_size", 1 << 20);
  s.d_state = size_key(file, p + "ssm.state_size", 4096);
  s.n_v_heads = size_key(file, p + "ssm.time_step_rank", 4096);
  s.n_k_heads = size_key(file, p + "ssm.group_count", 4096);
  s.grouped_heads = hp.arch == Arch::kQwen3Next;
  if (s.d_inner != s.n_v_heads * s.d_state) {
    fail(file, p + "ssm.inner_size (" + std::to_string(s.d_inner) + ") must be ssm.time_step_rank x ssm.state_size (" +
                   std::to_string(s.n_v_heads * s.d_state) + "): value heads of the state size");
  }
  if (s.n_v_heads % s.n_k_heads != 0) {
    fail(file, p + "ssm.time_step_rank (" + std::to_string(s.n_v_heads) + ") must be a multiple of ssm.group_count (" +
                   std::to_string(s.n_k_heads) + ")");
  }
  const int64_t n_layer_all = hp.n_layer;
  const uint64_t nextn = file.find_u64(p + "nextn_predict_layers").value_or(0);
  if (nextn >= static_cast<uint64_t>(n_layer_all)) {
    fail(file, p + "nextn_predict_layers (" + std::to_string(nextn) + ") must be below block_count (" +
                   std::to_string(n_layer_all) + ")");
  }
  hp.n_layer_nextn = static_cast<int64_t>(nextn);
  hp.n_layer = n_layer_all - hp.n_layer_nextn;
  hp.swa_layer.resize(static_cast<size_t>(hp.n_layer));
  hp.rope_layer.resize(static_cast<size_t>(hp.n_layer));
  read_recurrent_layers(file, p, n_layer_all, hp);
  if (hp.head_dim_k != hp.head_dim_v) {
    fail(file, p + "attention.key_length (" + std::to_string(hp.head_dim_k) + ") and value_length (" +
                   std::to_string(hp.head_dim_v) + ") differ; the gated attention needs them equal");
  }
  hp.attn_out_gate = true;
  if (hp.arch != Arch::kQwen3Next) read_rope_sections(file, p, hp);
}

void read_short_conv_hparams(const gguf::File& file, const std::string& p, HParams& hp) {
  const std::string key = p + "shortconv.l_cache";
  const auto taps = file.find_u64(key);
  if (!taps) fail(file, key + " is missing (needed by the short convolution layers)");
  if (*taps < 2 || *taps > 64) fail(file, key + " = " + std::to_string(*taps) + " is out of range [2, 64]");
  if (hp.n_recurrent() > 0) {
    hp.ssm.short_conv = true;
    hp.ssm.d_conv = static_cast<int64_t>(*taps);
    hp.ssm.d_inner = hp.n_embd;  // (conv_channels(): no key heads)
  }
  if (hp.arch != Arch::kLfm2) return;  // (llama.cpp's lfm2moe reads no sliding window)
  if (const auto w = file.find_u64(p + "attention.sliding_window"); w && *w > 0) {
    if (*w > static_cast<uint64_t>(INT32_MAX)) fail(file, p + "attention.sliding_window = " + std::to_string(*w) + " is out of range");
    hp.n_swa = static_cast<int64_t>(*w);
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layer[static_cast<size_t>(il)] = !hp.recurrent(il);
    hp.rope_freq_base_swa = hp.rope_freq_base;
    hp.rope_freq_scale_swa = hp.rope_freq_scale;
  }
}

void describe_hybrid(const HParams& hp, std::vector<HParamField>& out) {
  const int* sec = hp.rope_sections;
  if (sec[0] + sec[1] + sec[2] + sec[3] > 0) {  // multi-section RoPE (qwen35, qwen-vl)
    out.push_back({"rope_sections", std::to_string(sec[0]) + "," + std::to_string(sec[1]) + "," + std::to_string(sec[2]) +
                                        "," + std::to_string(sec[3]) + (hp.imrope ? " (imrope)" : " (mrope)"),
                   false});
  }
  if (!hp.ssm.enabled()) return;
  const DeltaNetParams& s = hp.ssm;
  if (s.short_conv) {
    out.push_back({"short_conv", "gated, " + std::to_string(s.d_conv) + " taps over " + std::to_string(s.d_inner) + " channels", false});
  } else {
    out.push_back({"delta_net", "conv " + std::to_string(s.d_conv) + ", state " + std::to_string(s.d_state) + ", " +
                                    std::to_string(s.n_k_heads) + " key / " + std::to_string(s.n_v_heads) + " value heads" +
                                    (s.grouped_heads ? " (grouped)" : ""),
                   false});
  }
  // what a sequence's state takes in the cache (RecurrentCache: two chunks' matrices and rows, f32)
  const double mib = static_cast<double>(RecurrentCache::seq_bytes(hp)) / (1 << 20);
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f MiB per sequence", mib);
  out.push_back({"recurrent_state", buf, false});
  if (hp.n_layer_nextn > 0) out.push_back({"nextn_predict_layers", std::to_string(hp.n_layer_nextn), true});
}

}  // namespace engine
