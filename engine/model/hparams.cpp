// Hyperparameters from GGUF metadata, read as llama.cpp reads them for each architecture, and the
// architecture table's lookups.
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "engine/model/arch.h"
#include "engine/model/gemma4_hparams.h"
#include "engine/model/hybrid_hparams.h"
#include "engine/model/model.h"

namespace engine {

const char* pooling_name(PoolingType p) {
  switch (p) {
    case PoolingType::kNone: return "none";
    case PoolingType::kMean: return "mean";
    case PoolingType::kCls: return "cls";
    case PoolingType::kLast: return "last";
    case PoolingType::kRank: return "rank";
  }
  return "none";
}

std::optional<PoolingType> find_pooling(std::string_view name) {
  for (PoolingType p : {PoolingType::kNone, PoolingType::kMean, PoolingType::kCls, PoolingType::kLast, PoolingType::kRank}) {
    if (name == pooling_name(p)) return p;
  }
  return std::nullopt;
}

const char* gating_name(ExpertGating g) {
  switch (g) {
    case ExpertGating::kSoftmax: return "softmax";
    case ExpertGating::kSoftmaxTopK: return "softmax over the top-k logits";
    case ExpertGating::kSigmoid: return "sigmoid";
  }
  return "softmax";
}

const ArchTraits& arch_traits(Arch arch) {
  for (const ArchTraits& a : kArchTraits) {
    if (a.arch == arch) return a;
  }
  throw std::logic_error("architecture missing from kArchTraits");
}

const ArchTraits* find_arch(std::string_view name) {
  for (const ArchTraits& a : kArchTraits) {
    if (a.name == name) return &a;
  }
  return nullptr;
}

std::string supported_arch_names() {
  std::string s;
  for (const ArchTraits& a : kArchTraits) s += (s.empty() ? "" : ", ") + std::string(a.name);
  return s;
}

namespace {

[[noreturn]] void fail(const gguf::File& file, const std::string& what) {
  throw std::runtime_error(file.name() + ": " + what);
}

int64_t positive(const gguf::File& file, const std::string& key, uint64_t v) {
  if (v == 0 || v > (1ull << 31)) fail(file, key + " = " + std::to_string(v) + " is out of range");
  return static_cast<int64_t>(v);
}

// A float key that must be finite and, when `positive_only`, above zero.
float finite(const gguf::File& file, const std::string& key, double v, bool positive_only) {
  if (!std::isfinite(v) || (positive_only && v <= 0.0)) {
    fail(file, key + " = " + std::to_string(v) + " is out of range");
  }
  return static_cast<float>(v);
}

// rope.scaling.type / factor, or the older rope.scale_linear -> freq_scale; YaRN also sets its
// ext_factor. LongRoPE's factors are tensors (rope_factors_{short,long}); its frequencies are
// otherwise unscaled.
void read_rope_scaling(const gguf::File& file, const std::string& p, HParams& hp) {
  const std::string type(file.find_string(p + "rope.scaling.type").value_or("linear"));
  if (type == "none" || type == "longrope") return;
  if (type != "linear" && type != "yarn") {
    fail(file, "rope scaling type '" + type + "' (" + p + "rope.scaling.type) is not supported "
               "(supported: none, linear, yarn, longrope)");
  }
  double factor = file.find_f64(p + "rope.scaling.factor").value_or(0.0);
  if (factor == 0.0) factor = file.find_f64(p + "rope.scale_linear").value_or(0.0);
  if (factor < 0.0 || !std::isfinite(factor)) fail(file, p + "rope.scaling.factor must be positive");
  hp.rope_freq_scale = factor == 0.0 ? 1.0f : static_cast<float>(1.0 / factor);
  if (type == "yarn") hp.yarn_ext_factor = 1.0f;
}

// YaRN's attention factor, as llama.cpp's context sets it: mscale(f) = 1 + 0.1 ln f (for f > 1),
// divided by mscale(f) * log_mul when the file gives yarn_log_multiplier; then divided by
// 1 + 0.1 ln f, which the RoPE kernel multiplies back in (ggml's rope_yarn). Applied on top of
// rope.scaling.attn_factor.
void set_yarn_attn_factor(HParams& hp, float log_mul) {
  if (hp.yarn_ext_factor == 0.0f) return;
  const float f = 1.0f / hp.rope_freq_scale;
  auto mscale = [&](float m) { return f <= 1.0f ? 1.0f : 0.1f * m * std::log(f) + 1.0f; };
  float attn = log_mul != 0.0f ? mscale(1.0f) / mscale(log_mul) : mscale(1.0f);
  attn *= 1.0f / (1.0f + 0.1f * std::log(f));
  hp.rope_attn_factor *= attn;
}

// Marks every layer il with il % period < period - 1 as sliding-window (llama.cpp's
// set_swa_pattern: the last layer of each period attends globally; period 1 means none slide).
void set_swa_pattern(HParams& hp, int64_t period) {
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    hp.swa_layer[static_cast<size_t>(il)] = (il % period) < (period - 1) ? 1 : 0;
  }
}

// gemma's scales: embeddings by sqrt(n_embd); Q itself by 1/sqrt(head size) -- 1/sqrt(n_embd /
// n_head) for the 27B models, told apart by their layer count -- and scores then left unscaled.
void set_gemma_scales(HParams& hp, int64_t n_layer_27b) {
  const auto d = hp.n_layer == n_layer_27b ? hp.n_embd / hp.n_head : hp.head_dim_k;
  hp.q_scale = 1.0f / std::sqrt(static_cast<float>(d));
  hp.kq_scale = 1.0f;
  hp.embd_scale = std::sqrt(static_cast<float>(hp.n_embd));
}

// What differs per architecture beyond the common keys.
void read_arch_hparams(const gguf::File& file, const std::string& p, HParams& hp) {
  auto f64 = [&](const std::string& key, double dflt) { return file.find_f64(p + key).value_or(dflt); };
  auto u64 = [&](const std::string& key, int64_t dflt) {
    const auto v = file.find_u64(p + key);
    return v ? positive(file, p + key, *v) : dflt;
  };
  switch (hp.arch) {
    case Arch::kGemma2:
      hp.n_swa = u64("attention.sliding_window", 4096);
      set_swa_pattern(hp, u64("attention.sliding_window_pattern", 2));
      hp.rope_freq_base_swa = finite(file, p + "rope.freq_base_swa", f64("rope.freq_base_swa", hp.rope_freq_base), true);
      hp.rope_freq_scale_swa = hp.rope_freq_scale;
      hp.attn_softcap = finite(file, p + "attn_logit_softcapping", f64("attn_logit_softcapping", 50.0), true);
      hp.final_softcap = finite(file, p + "final_logit_softcapping", f64("final_logit_softcapping", 30.0), true);
      set_gemma_scales(hp, 46);
      break;
    case Arch::kGemma3:
      if (const auto swa = file.find_u64(p + "attention.sliding_window"); swa && *swa > 0) {
        hp.n_swa = positive(file, p + "attention.sliding_window", *swa);
        set_swa_pattern(hp, u64("attention.sliding_window_pattern", 6));
        hp.rope_freq_base_swa = finite(file, p + "rope.freq_base_swa", f64("rope.freq_base_swa", 10000.0), true);
      }
      hp.final_softcap = finite(file, p + "final_logit_softcapping", f64("final_logit_softcapping", 0.0), false);
      set_gemma_scales(hp, 62);
      break;
    case Arch::kPhi3:  // (llama.cpp ignores phi3's attention.sliding_window; so do we)
      hp.q_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
      hp.kq_scale = 1.0f;
      break;
    case Arch::kGranite: {
      hp.embd_scale = finite(file, p + "embedding_scale", f64("embedding_scale", 1.0), false);
      hp.residual_scale = finite(file, p + "residual_scale", f64("residual_scale", 1.0), false);
      if (const double s = f64("attention.scale", 0.0); s != 0.0) hp.kq_scale = finite(file, p + "attention.scale", s, true);
      hp.logit_scale = finite(file, p + "logit_scale", file.get_f64(p + "logit_scale"), true);
      if (!file.find_bool(p + "rope.scaling.finetuned").value_or(true)) hp.rope_layer.assign(hp.rope_layer.size(), 0);
      break;
    }
    case Arch::kMistral3:
      hp.attn_temp_scale = finite(file, p + "attention.temperature_scale", f64("attention.temperature_scale", 0.0), false);
      if (hp.attn_temp_scale != 0.0f) hp.attn_temp_floor = hp.n_ctx_orig;
      hp.yarn_beta_fast = finite(file, p + "rope.scaling.yarn_beta_fast", f64("rope.scaling.yarn_beta_fast", 32.0), false);
      hp.yarn_beta_slow = finite(file, p + "rope.scaling.yarn_beta_slow", f64("rope.scaling.yarn_beta_slow", 1.0), false);
      break;
    case Arch::kGptOss:
      hp.n_swa = positive(file, p + "attention.sliding_window", file.get_u64(p + "attention.sliding_window"));
      set_swa_pattern(hp, u64("attention.sliding_window_pattern", 2));
      hp.rope_freq_base_swa = finite(file, p + "rope.freq_base_swa", f64("rope.freq_base_swa", hp.rope_freq_base), true);
      hp.rope_freq_scale_swa = hp.rope_freq_scale;
      hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.n_rot));
      break;
    case Arch::kSmolLM3:
      if (const gguf::Value* a = file.find_array(p + "no_rope_layers")) {  // 1: the layer uses RoPE
        if (a->size() != static_cast<uint64_t>(hp.n_layer)) {
          fail(file, p + "no_rope_layers has " + std::to_string(a->size()) + " entries, expected " +
                         std::to_string(hp.n_layer) + " (one per layer)");
        }
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.rope_layer[static_cast<size_t>(il)] = a->i64_at(il) != 0;
      } else {  // llama.cpp's fixed rule: every 4th layer has no RoPE
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.rope_layer[static_cast<size_t>(il)] = (il + 1) % 4 != 0;
      }
      break;
    case Arch::kQwen35:
    case Arch::kQwen35Moe:
    case Arch::kQwen3Next:
      read_hybrid_hparams(file, p, hp);
      break;
    case Arch::kGemma4:
      read_gemma4_hparams(file, p, hp);
      break;
    case Arch::kLfm2:
    case Arch::kLfm2Moe:
      read_short_conv_hparams(file, p, hp);
      break;
    case Arch::kQwen3Vl:
    case Arch::kQwen3VlMoe:
      read_rope_sections(file, p, hp);
      if (const auto d = file.find_u64(p + "n_deepstack_layers")) {
        if (*d > static_cast<uint64_t>(hp.n_layer)) {
          fail(file, p + "n_deepstack_layers = " + std::to_string(*d) + " is over the block count " + std::to_string(hp.n_layer));
        }
        hp.n_deepstack = static_cast<int64_t>(*d);
      }
      break;
    case Arch::kQwen2Vl:  // M-RoPE: the sections side by side over the rotated pairs
      read_rope_sections(file, p, hp, false);
      break;
    case Arch::kJinaBertV2:  // llama.cpp's fixed value (no key)
      hp.alibi_max_bias = 8.0f;
      break;
    default:
      break;
  }
}

// attention.head_count_kv given per layer (lfm2): 0 marks a layer without attention -- a
// recurrent one, for lfm2 (recurrent_layer) -- and the other layers must agree; returns theirs.
int64_t per_layer_kv_heads(const gguf::File& file, const std::string& p, const gguf::Value& a, HParams& hp) {
  const std::string key = p + "attention.head_count_kv";
  if (a.size() != static_cast<uint64_t>(hp.n_layer)) {
    fail(file, key + " has " + std::to_string(a.size()) + " entries, expected " + std::to_string(hp.n_layer) +
                   " (one per layer)");
  }
  int64_t n_kv = 0;
  hp.recurrent_layer.assign(static_cast<size_t>(hp.n_layer), 0);
  for (int64_t il = 0; il < hp.n_layer; ++il) {
    const int64_t v = a.i64_at(static_cast<uint64_t>(il));
    if (v < 0 || v > hp.n_head) {
      fail(file, key + " entry " + std::to_string(il) + " = " + std::to_string(v) + " is out of range [0, " +
                     std::to_string(hp.n_head) + "]");
    }
    if (v == 0) {
      if (hp.arch != Arch::kLfm2 && hp.arch != Arch::kLfm2Moe) {
        fail(file, key + " entry " + std::to_string(il) + " is 0: layers without attention are supported for lfm2 and lfm2moe only");
      }
      hp.recurrent_layer[static_cast<size_t>(il)] = 1;
    } else if (n_kv != 0 && v != n_kv) {
      fail(file, key + ": layer " + std::to_string(il) + " has " + std::to_string(v) + " K/V heads where earlier ones have " +
                     std::to_string(n_kv) + " (a different count per layer is not supported)");
    } else {
      n_kv = v;
    }
  }
  if (n_kv == 0) fail(file, key + " is 0 for every layer: no attention layer");
  if (hp.n_recurrent() == 0) hp.recurrent_layer.clear();
  return n_kv;
}

// expert_count and friends; a dense model has none.
void read_experts(const gguf::File& file, const std::string& p, const ArchTraits& traits, HParams& hp) {
  const auto n_expert = file.find_u64(p + "expert_count").value_or(0);
  if (n_expert == 0) {
    if (traits.moe) fail(file, p + "expert_count is missing: architecture " + hp.arch_name + " has experts");
    return;
  }
  if (!traits.moe && hp.arch != Arch::kLlama && hp.arch != Arch::kGemma4) {
    fail(file, p + "expert_count is set, but experts are not supported for architecture " + hp.arch_name);
  }
  constexpr uint64_t kMaxExperts = 512;
  if (n_expert > kMaxExperts) {
    fail(file, p + "expert_count = " + std::to_string(n_expert) + " is out of range (at most " +
                   std::to_string(kMaxExperts) + ")");
  }
  hp.n_expert = static_cast<int64_t>(n_expert);
  hp.n_expert_used = positive(file, p + "expert_used_count", file.get_u64(p + "expert_used_count"));
  if (hp.n_expert_used > hp.n_expert) {
    fail(file, p + "expert_used_count (" + std::to_string(hp.n_expert_used) + ") exceeds expert_count (" +
                   std::to_string(hp.n_expert) + ")");
  }
  const auto ff = file.find_u64(p + "expert_feed_forward_length");
  hp.n_ff_exp = ff ? positive(file, p + "expert_feed_forward_length", *ff) : hp.n_ff / hp.n_expert_used;
  if (hp.n_ff_exp == 0) fail(file, p + "expert_feed_forward_length is missing (and so is feed_forward_length)");
  hp.expert_weights_norm = file.find_bool(p + "expert_weights_norm").value_or(true);
  if (traits.shexp) {  // llama.cpp: the dense FFN width when the key is absent
    const auto shff = file.find_u64(p + "expert_shared_feed_forward_length");
    hp.n_ff_shexp = shff ? positive(file, p + "expert_shared_feed_forward_length", *shff) : hp.n_ff;
  }
  hp.expert_weights_scale = finite(file, p + "expert_weights_scale", file.find_f64(p + "expert_weights_scale").value_or(0.0), false);
  hp.expert_gating = traits.gating;
}

// lfm2moe, as llama.cpp's lfm2moe.cpp reads it: leading_dense_block_count (optional; those layers
// have the dense FFN of feed_forward_length), expert_feed_forward_length and expert_gating_func
// (required; 1 softmax, 2 sigmoid); expert_weights_scale is not read (the weights are unscaled).
void read_lfm2moe_experts(const gguf::File& file, const std::string& p, HParams& hp) {
  if (const auto lead = file.find_u64(p + "leading_dense_block_count")) {
    if (*lead > static_cast<uint64_t>(hp.n_layer)) {
      fail(file, p + "leading_dense_block_count = " + std::to_string(*lead) + " exceeds block_count (" +
                     std::to_string(hp.n_layer) + ")");
    }
    hp.n_layer_dense_lead = static_cast<int64_t>(*lead);
  }
  if (hp.n_layer_dense_lead > 0 && hp.n_ff == 0) {
    fail(file, p + "feed_forward_length is missing: the leading dense layers need it");
  }
  if (!file.find_u64(p + "expert_feed_forward_length")) fail(file, p + "expert_feed_forward_length is missing");
  const uint64_t func = file.get_u64(p + "expert_gating_func");
  if (func != 1 && func != 2) {
    fail(file, p + "expert_gating_func = " + std::to_string(func) + " is not supported (1 softmax, 2 sigmoid)");
  }
  hp.expert_gating = func == 1 ? ExpertGating::kSoftmax : ExpertGating::kSigmoid;
  hp.expert_selection_bias = true;
  hp.expert_weights_scale = 0.0f;
}

}  // namespace

HParams read_hparams(const gguf::File& file) { return read_hparams(file, file.tensors().size()); }

HParams read_hparams(const gguf::File& file, uint64_t n_tensors) {
  if (file.big_endian()) {
    fail(file, "big-endian GGUF files are not supported (convert the model to little-endian)");
  }
  HParams hp;
  hp.arch_name = std::string(file.get_string("general.architecture"));
  const ArchTraits* traits = find_arch(hp.arch_name);
  if (!traits) {
    fail(file, "architecture '" + hp.arch_name + "' is not supported (supported: " + supported_arch_names() + ")");
  }
  hp.arch = traits->arch;
  const std::string p = hp.arch_name + ".";
  auto req = [&](const std::string& key) { return positive(file, p + key, file.get_u64(p + key)); };
  auto opt = [&](const std::string& key, int64_t dflt) {
    const auto v = file.find_u64(p + key);
    return v ? positive(file, p + key, *v) : dflt;
  };
  hp.n_ctx_train = req("context_length");
  hp.n_embd = req("embedding_length");
  hp.n_layer = req("block_count");
  if (static_cast<uint64_t>(hp.n_layer) > n_tensors) {  // each layer has tensors
    fail(file, p + "block_count = " + std::to_string(hp.n_layer) + " exceeds the model's " +
                   std::to_string(n_tensors) + " tensors");
  }
  hp.n_ff = traits->moe ? opt("feed_forward_length", 0) : req("feed_forward_length");  // (llama.cpp: optional)
  hp.n_head = req("attention.head_count");
  const gguf::Value* kv_heads = file.find(p + "attention.head_count_kv");
  if (kv_heads && kv_heads->is_array()) {
    hp.n_head_kv = per_layer_kv_heads(file, p, *kv_heads, hp);
  } else {
    hp.n_head_kv = opt("attention.head_count_kv", hp.n_head);
  }
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
  if (traits->encoder) {
    hp.norm_eps = finite(file, p + "attention.layer_norm_epsilon", file.get_f64(p + "attention.layer_norm_epsilon"), true);
  } else {
    hp.rms_eps = static_cast<float>(file.get_f64(p + "attention.layer_norm_rms_epsilon"));
  }
  hp.causal = file.find_bool(p + "attention.causal").value_or(!traits->encoder);
  if (hp.causal == traits->encoder) {
    fail(file, p + "attention.causal = " + (hp.causal ? "true" : "false") + " is not supported for architecture " +
                   hp.arch_name + (traits->encoder ? " (an encoder: bidirectional)" : " (a decoder: causal)"));
  }
  if (const auto pt = file.find_u64(p + "pooling_type")) {
    if (*pt > static_cast<uint64_t>(PoolingType::kRank)) {
      fail(file, p + "pooling_type = " + std::to_string(*pt) + " is out of range (0 none, 1 mean, 2 cls, 3 last, 4 rank)");
    }
    hp.pooling = static_cast<PoolingType>(*pt);
  }
  hp.rope_freq_base = finite(file, p + "rope.freq_base", file.find_f64(p + "rope.freq_base").value_or(10000.0), true);
  read_rope_scaling(file, p, hp);
  hp.rope_attn_factor = finite(file, p + "rope.scaling.attn_factor",
                               file.find_f64(p + "rope.scaling.attn_factor").value_or(1.0), true);
  hp.n_ctx_orig = opt("rope.scaling.original_context_length", hp.n_ctx_train);
  hp.rope_style = traits->rope;
  hp.ffn_act = traits->act;
  hp.kq_scale = 1.0f / std::sqrt(static_cast<float>(hp.head_dim_k));
  hp.swa_layer.assign(static_cast<size_t>(hp.n_layer), 0);
  hp.rope_layer.assign(static_cast<size_t>(hp.n_layer), 1);
  hp.head_dim_k_swa = hp.head_dim_k;  // (gemma4 reads the sliding layers' own)
  hp.head_dim_v_swa = hp.head_dim_v;
  hp.n_rot_swa = hp.n_rot;
  read_arch_hparams(file, p, hp);
  // llama.cpp reads the YaRN multiplier for mistral3 only (and architectures ggufd lacks)
  set_yarn_attn_factor(hp, hp.arch == Arch::kMistral3 ? finite(file, p + "rope.scaling.yarn_log_multiplier",
                                                                file.find_f64(p + "rope.scaling.yarn_log_multiplier").value_or(0.0), false)
                                                      : 0.0f);
  read_experts(file, p, *traits, hp);
  if (hp.arch == Arch::kLfm2Moe) read_lfm2moe_experts(file, p, hp);
  if (hp.arch == Arch::kGptOss) hp.expert_weights_norm = false;  // top-k logits, softmax over those
  if (hp.arch == Arch::kQwen2Moe) hp.expert_weights_norm = false;  // llama.cpp's qwen2moe graph: never
  if (traits->hybrid) hp.expert_weights_norm = true;  // llama.cpp's qwen35moe / qwen3next graphs: always
  if (hp.arch == Arch::kGemma4) {  // llama.cpp's gemma4 graph: renormalized, unscaled, whatever the keys
    hp.expert_weights_norm = true;
    hp.expert_weights_scale = 0.0f;
  }
  return hp;
}

namespace {

std::string number(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

// "0-4, 6-10" for the layers where flags[il] == want.
std::string layer_ranges(const std::vector<uint8_t>& flags, uint8_t want) {
  std::string s;
  for (size_t i = 0; i < flags.size();) {
    if (flags[i] != want) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j + 1 < flags.size() && flags[j + 1] == want) ++j;
    // (appends, not operator+ chains: GCC 12 -O3 warns -Wrestrict on those, a false positive)
    if (!s.empty()) s += ", ";
    s += std::to_string(i);
    if (j > i) s.append("-").append(std::to_string(j));
    i = j + 1;
  }
  return s;
}

}  // namespace

std::vector<HParamField> describe_hparams(const HParams& hp) {
  std::vector<HParamField> f;
  auto num = [&](const std::string& name, double v) { f.push_back({name, number(v), true}); };
  auto text = [&](const std::string& name, std::string v) { f.push_back({name, std::move(v), false}); };
  text("architecture", hp.arch_name);
  num("n_layer", static_cast<double>(hp.n_layer));
  num("n_embd", static_cast<double>(hp.n_embd));
  num("n_head", static_cast<double>(hp.n_head));
  num("n_head_kv", static_cast<double>(hp.n_head_kv));
  num("head_dim", static_cast<double>(hp.head_dim_k));
  num("n_ff", static_cast<double>(hp.n_ff));
  num("n_ctx_train", static_cast<double>(hp.n_ctx_train));
  const ArchTraits& traits = arch_traits(hp.arch);
  if (traits.encoder && traits.positions == EncoderPositions::kTable) {
    text("positions", "learned table");
  } else if (traits.encoder && traits.positions == EncoderPositions::kAlibi) {
    text("positions", "alibi, max bias " + number(hp.alibi_max_bias));
  } else {
    text("rope", std::string(hp.rope_style == RopeStyle::kNeox ? "neox" : "normal") + ", base " +
                     number(hp.rope_freq_base) + (hp.n_rot < hp.head_dim_k ? ", " + std::to_string(hp.n_rot) + " rotary dims" : ""));
  }
  if (hp.rope_freq_scale != 1.0f) num("rope_freq_scale", hp.rope_freq_scale);
  if (hp.yarn_ext_factor != 0.0f) {
    text("rope_scaling", "yarn, original context " + std::to_string(hp.n_ctx_orig) + ", beta " +
                             number(hp.yarn_beta_fast) + "/" + number(hp.yarn_beta_slow));
  }
  if (hp.attn_temp_scale != 0.0f) {
    text("attention_temperature", "1 + " + number(hp.attn_temp_scale) + " ln(floor(pos / " +
                                      std::to_string(hp.attn_temp_floor) + ") + 1)");
  }
  if (hp.rope_attn_factor != 1.0f) num("rope_attn_factor", hp.rope_attn_factor);
  if (const std::string none = layer_ranges(hp.rope_layer, 0); !none.empty()) text("no_rope_layers", none);
  if (!hp.causal) text("attention", "bidirectional (encoder)");
  if (hp.pooling != PoolingType::kNone) text("pooling", pooling_name(hp.pooling));
  if (hp.n_cls_out > 0) num("classifier_outputs", static_cast<double>(hp.n_cls_out));
  text("ffn", hp.arch == Arch::kBert ? "gelu"
             : hp.ffn_act == FfnAct::kGeluTanh    ? "gelu (tanh) gated"
             : hp.ffn_act == FfnAct::kSwigluOai ? "clamped swiglu (gpt-oss)"
                                                : "silu gated");
  if (hp.n_swa > 0) {
    num("sliding_window", static_cast<double>(hp.n_swa));
    text("sliding_window_layers", layer_ranges(hp.swa_layer, 1));
    num("rope_freq_base_swa", hp.rope_freq_base_swa);
  }
  if (traits.sinks) text("attention_sinks", "a learned logit per head");
  if (hp.ssm.enabled()) {
    text(hp.ssm.short_conv ? "short_conv_layers" : "delta_net_layers", layer_ranges(hp.recurrent_layer, 1));
    text("attention_layers", layer_ranges(hp.recurrent_layer, 0) + (hp.attn_out_gate ? " (output-gated)" : ""));
    describe_hybrid(hp, f);
  }
  describe_gemma4(hp, f);
  if (hp.attn_softcap != 0.0f) num("attn_logit_softcapping", hp.attn_softcap);
  if (hp.final_softcap != 0.0f) num("final_logit_softcapping", hp.final_softcap);
  if (hp.embd_scale != 1.0f) num("embedding_scale", hp.embd_scale);
  if (hp.residual_scale != 1.0f) num("residual_scale", hp.residual_scale);
  if (hp.logit_scale != 1.0f) num("logit_scale", hp.logit_scale);
  if (hp.n_expert > 0) {
    num("expert_count", static_cast<double>(hp.n_expert));
    num("expert_used_count", static_cast<double>(hp.n_expert_used));
    num("expert_feed_forward_length", static_cast<double>(hp.n_ff_exp));
    if (hp.n_ff_shexp > 0) num("expert_shared_feed_forward_length", static_cast<double>(hp.n_ff_shexp));
    if (hp.n_layer_dense_lead > 0) num("leading_dense_block_count", static_cast<double>(hp.n_layer_dense_lead));
    text("expert_gating", gating_name(hp.expert_gating));
    text("expert_weights", std::string(gating_name(hp.expert_gating)) +
                               (hp.expert_selection_bias ? ", top-k chosen by it + selection bias (exp_probs_b)" : "") +
                               (hp.expert_weights_norm && hp.expert_gating != ExpertGating::kSoftmaxTopK ? ", top-k renormalized" : ""));
  }
  return f;
}

}  // namespace engine
