// The architecture table: what sets each supported architecture apart, in one place. Loading
// (model.cpp), hyperparameters (hparams.cpp) and the forward pass read it; nothing else switches
// on the architecture's name.
#pragma once

#include <string>
#include <string_view>

#include "engine/model/model.h"

namespace engine {

// How an encoder's tokens know their positions.
enum class EncoderPositions {
  kTable,  // a learned table position_embd added to the input embeddings (bert)
  kRope,   // RoPE on Q and K in every layer, in the table's rope style (nomic-bert)
  kAlibi,  // ALiBi: head h's scores get -slope(h) * |i - j| (jina-bert-v2; HParams::alibi_max_bias)
};

// What rank pooling (rerankers, /v1/rerank) reads, as llama.cpp's build_pooling does.
enum class RankHead {
  kNone,         // rank pooling is not supported: the file's cls.output is not loaded
  kFirst,        // the first token's state through cls / cls.output, raw (BERT cross-encoders)
  kLastSoftmax,  // the last token's state through cls.output, softmaxed (Qwen3-Reranker's yes/no)
};

struct ArchTraits {
  Arch arch;
  std::string_view name;  // general.architecture
  RopeStyle rope;
  FfnAct act;
  bool qkv_bias;    // attn_{q,k,v}.bias required; with moe also attn_output.bias and the router's
                    // and experts' biases (gpt-oss)
  bool qk_norm;     // attn_{q,k}_norm required (per-head RMSNorm of Q and K)
  bool post_norms;  // post_attention_norm and post_ffw_norm required (gemma)
  bool moe;         // a mixture of experts required in every layer (past leading_dense_block_count)
  bool sinks;       // attn_sinks required (a per-head logit added to the softmax: gpt-oss)
  bool shexp;       // a shared expert beside the routed ones required, sigmoid-gated (qwen2moe)
  std::string_view ffn_norm;  // the pre-FFN norm's tensor (gpt-oss names it post_attention_norm)
  bool encoder = false;       // BERT-style encoder (engine/model/encoder.h), not the decoder forward pass
  EncoderPositions positions = EncoderPositions::kTable;  // encoders only
  RankHead rank = RankHead::kNone;
  // A hybrid stack (hybrid.h): recurrent layers (recurrent_layer: Gated DeltaNet, or lfm2's short
  // convolutions) beside attention layers.
  bool hybrid = false;
  // How the router's logits weight the experts (moe); lfm2moe's expert_gating_func may choose another.
  ExpertGating gating = ExpertGating::kSoftmax;
};

inline constexpr ArchTraits kArchTraits[] = {
    //  arch             name        rope               ffn act             bias   qk_n   post   moe    sinks  shexp  ffn norm
    {Arch::kLlama,     "llama",    RopeStyle::kNormal, FfnAct::kSilu,     false, false, false, false, false, false, "ffn_norm"},
    {Arch::kQwen2,     "qwen2",    RopeStyle::kNeox,   FfnAct::kSilu,     true,  false, false, false, false, false, "ffn_norm"},
    {Arch::kQwen3,     "qwen3",    RopeStyle::kNeox,   FfnAct::kSilu,     false, true,  false, false, false, false, "ffn_norm",
     false, EncoderPositions::kTable, RankHead::kLastSoftmax},
    {Arch::kQwen3Moe,  "qwen3moe", RopeStyle::kNeox,   FfnAct::kSilu,     false, true,  false, true,  false, false, "ffn_norm"},
    // (IMRoPE from rope.dimension_sections, deepstack: n_deepstack_layers)
    {Arch::kQwen3Vl,   "qwen3vl",  RopeStyle::kNeox,   FfnAct::kSilu,     false, true,  false, false, false, false, "ffn_norm"},
    {Arch::kQwen3VlMoe, "qwen3vlmoe", RopeStyle::kNeox, FfnAct::kSilu,    false, true,  false, true,  false, false, "ffn_norm"},
    // (M-RoPE from rope.dimension_sections)
    {Arch::kQwen2Vl,   "qwen2vl",  RopeStyle::kNeox,   FfnAct::kSilu,     true,  false, false, false, false, false, "ffn_norm"},
    {Arch::kQwen2Moe,  "qwen2moe", RopeStyle::kNeox,   FfnAct::kSilu,     false, false, false, true,  false, true,  "ffn_norm"},
    {Arch::kGemma2,    "gemma2",   RopeStyle::kNeox,   FfnAct::kGeluTanh, false, false, true,  false, false, false, "ffn_norm"},
    {Arch::kGemma3,    "gemma3",   RopeStyle::kNeox,   FfnAct::kGeluTanh, false, true,  true,  false, false, false, "ffn_norm"},
    // (experts optional: beside the dense FFN, in the layers with a router)
    {Arch::kGemma4,    "gemma4",   RopeStyle::kNeox,   FfnAct::kGeluTanh, false, true,  true,  false, false, false, "ffn_norm"},
    {Arch::kPhi3,      "phi3",     RopeStyle::kNeox,   FfnAct::kSilu,     false, false, false, false, false, false, "ffn_norm"},
    {Arch::kGranite,   "granite",  RopeStyle::kNormal, FfnAct::kSilu,     false, false, false, false, false, false, "ffn_norm"},
    {Arch::kSmolLM3,   "smollm3",  RopeStyle::kNormal, FfnAct::kSilu,     false, false, false, false, false, false, "ffn_norm"},
    {Arch::kMistral3,  "mistral3", RopeStyle::kNormal, FfnAct::kSilu,     false, false, false, false, false, false, "ffn_norm"},
    {Arch::kGptOss,    "gpt-oss",  RopeStyle::kNeox,   FfnAct::kSwigluOai, true,  false, false, true,  true,  false, "post_attention_norm",
     false, EncoderPositions::kTable, RankHead::kNone, false, ExpertGating::kSoftmaxTopK},
    // encoders: qkv_bias means required attn_{q,k,v}.bias; the FFN is gated when the file has ffn_gate
    //                                                                                         ffn norm  encoder
    {Arch::kBert,      "bert",     RopeStyle::kNormal, FfnAct::kGeluTanh, true,  false, false, false, false, false, "",       true,
     EncoderPositions::kTable, RankHead::kFirst},
    {Arch::kNomicBert, "nomic-bert", RopeStyle::kNeox, FfnAct::kSilu,     false, false, false, false, false, false, "",       true,
     EncoderPositions::kRope, RankHead::kNone},
    {Arch::kJinaBertV2, "jina-bert-v2", RopeStyle::kNormal, FfnAct::kGeluTanh, false, false, false, false, false, false, "", true,
     EncoderPositions::kAlibi, RankHead::kFirst},
    // hybrid stacks: qk norms, experts and shared expert apply to their attention / FFN blocks
    {Arch::kQwen35,    "qwen35",   RopeStyle::kNeox,   FfnAct::kSilu,     false, true,  false, false, false, false, "post_attention_norm",
     false, EncoderPositions::kTable, RankHead::kNone, true},
    {Arch::kQwen35Moe, "qwen35moe", RopeStyle::kNeox,  FfnAct::kSilu,     false, true,  false, true,  false, true,  "post_attention_norm",
     false, EncoderPositions::kTable, RankHead::kNone, true},
    {Arch::kQwen3Next, "qwen3next", RopeStyle::kNeox,  FfnAct::kSilu,     false, true,  false, true,  false, true,  "post_attention_norm",
     false, EncoderPositions::kTable, RankHead::kNone, true},
    {Arch::kLfm2,      "lfm2",     RopeStyle::kNeox,   FfnAct::kSilu,     false, true,  false, false, false, false, "ffn_norm",
     false, EncoderPositions::kTable, RankHead::kNone, true},
    // (experts past leading_dense_block_count, with a selection bias exp_probs_b)
    {Arch::kLfm2Moe,   "lfm2moe",  RopeStyle::kNeox,   FfnAct::kSilu,     false, true,  false, true,  false, false, "ffn_norm",
     false, EncoderPositions::kTable, RankHead::kNone, true, ExpertGating::kSigmoid},
};

// The row of `arch` (every Arch has one).
const ArchTraits& arch_traits(Arch arch);

// The row named `name`, or null.
const ArchTraits* find_arch(std::string_view name);

// "llama, qwen2, ..." for error messages.
std::string supported_arch_names();

}  // namespace engine
