// A transformer (llama-family decoder or BERT-family encoder): hyperparameters read from GGUF metadata and weights viewed in place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <functional>
#include <optional>
#include <string_view>
#include <span>
#include <vector>

#include "engine/kernels/matmul.h"
#include "engine/model/hybrid.h"
#include "engine/model/ops.h"
#include "engine/model/repack.h"
#include "gguf/file.h"
#include "gguf/file_set.h"

namespace engine {

// The architectures the forward pass implements (general.architecture). What sets each apart is
// listed once, in the architecture table of model.cpp.
enum class Arch {
  kLlama,     // RMSNorm, normal RoPE, GQA, SwiGLU; optional biases, rope_freqs, experts (mixtral)
  kQwen2,     // llama + q/k/v biases, NeoX RoPE
  kQwen3,     // llama + per-head q/k RMSNorm, NeoX RoPE, head size from attention.key_length
  kQwen3Moe,  // qwen3 with a mixture of experts in place of the FFN
  kQwen2Moe,  // qwen2 (optional q/k/v biases) with experts plus a sigmoid-gated shared expert
  kGemma2,    // sliding window on alternate layers, soft-capped attention and logits, GELU, post-norms
  kGemma3,    // gemma2's block with q/k norms, 5-of-6 sliding layers with their own RoPE base
  kPhi3,      // fused QKV and gate+up matrices, partial rotary, LongRoPE factors
  kGranite,   // llama with embedding, residual, attention and logit multipliers
  kSmolLM3,   // llama without RoPE on the layers no_rope_layers marks
  kMistral3,  // llama with YaRN and a position-dependent attention temperature (Ministral 3)
  kGptOss,    // MoE with biases everywhere, attention sinks, alternate 128-token windows, clamped SwiGLU
  kBert,      // encoder: absolute positions, LayerNorm after each residual, GELU FFN, bidirectional
  kNomicBert, // bert's block with fused QKV, NeoX RoPE in place of the position table, SwiGLU FFN, no biases
  kJinaBertV2,// bert's block with ALiBi in place of the position table, GeGLU FFN, optional Q/K LayerNorms
  kQwen35,    // hybrid: Gated DeltaNet layers, every 4th gated full attention with q/k norms and IMRoPE
  kQwen35Moe, // qwen35 with qwen3moe's experts plus a sigmoid-gated shared expert
  kQwen3Next, // qwen35moe's stack with NeoX RoPE, grouped key heads and fused beta/alpha projections
  kGemma4,    // gemma3's block with per-kind head sizes, V norm, per-layer inputs, K/V shared by the
              // last layers, optional experts beside the dense FFN
  kLfm2,      // hybrid: gated short convolutions, the layers with K/V heads attention with q/k norms
  kLfm2Moe,   // lfm2's stack, experts (sigmoid-gated, selection bias) past the leading dense layers
  kQwen3Vl,   // Qwen3-VL's text model: qwen3 with IMRoPE, an image row's deepstack slices added after
              // the first layers
  kQwen3VlMoe,// qwen3vl with qwen3moe's experts
  kQwen2Vl,   // Qwen2-VL's and Qwen2.5-VL's text model: qwen2 with M-RoPE (sections side by side)
};

// How a sequence's final hidden states become one vector (pooling_type; llama.cpp's numbering).
enum class PoolingType {
  kNone = 0,  // none: the model gives no sequence embedding (a generation model)
  kMean = 1,  // the mean of every token's hidden state
  kCls = 2,   // the first token's ([CLS])
  kLast = 3,  // the last token's (decoder embedders: Qwen3-Embedding)
  kRank = 4,  // the first token's (bert) / the last's (qwen3) through the classification head: a
              // relevance score (rerankers; ArchTraits::rank says which architectures have one)
};
const char* pooling_name(PoolingType p);  // "none", "mean", "cls", "last", "rank"
// The pooling type named `name` ("mean", ...), or nullopt.
std::optional<PoolingType> find_pooling(std::string_view name);

// The FFN's gate activation.
enum class FfnAct {
  kSilu,      // silu(gate) * up (SwiGLU)
  kGeluTanh,  // gelu(gate) * up with GELU's tanh approximation (GeGLU), as ggml tabulates it
  kSwigluOai, // gpt-oss: clamped silu(1.702 gate) * (up + 1) (ops.h swiglu_oai_mul)
};

// How the router's logits become the chosen experts' weights.
enum class ExpertGating {
  kSoftmax,      // softmax over all experts, the top k's probabilities (renormalized if asked)
  kSoftmaxTopK,  // the top k logits, softmax over just those (gpt-oss)
  kSigmoid,      // sigmoid of each logit; the top k of sigmoid + the layer's selection bias
                 // (ffn_exp_probs_b, when it has one) are chosen, weighted by their sigmoid without
                 // the bias (renormalized if asked): lfm2moe's expert_gating_func 2, DeepSeek V3's
};
const char* gating_name(ExpertGating g);  // "softmax", "softmax over the top-k logits", "sigmoid"

// Hyperparameters, named after the GGUF keys they come from ("[arch]." prefix omitted).
struct HParams {
  Arch arch = Arch::kLlama;
  std::string arch_name;     // general.architecture
  int64_t n_vocab = 0;       // rows of token_embd.weight
  int64_t n_ctx_train = 0;   // context_length
  int64_t n_embd = 0;        // embedding_length
  int64_t n_layer = 0;       // block_count
  int64_t n_ff = 0;          // feed_forward_length
  int64_t n_head = 0;        // attention.head_count
  int64_t n_head_kv = 0;     // attention.head_count_kv (defaults to n_head)
  int64_t head_dim_k = 0;    // attention.key_length (defaults to n_embd / n_head)
  int64_t head_dim_v = 0;    // attention.value_length (defaults to n_embd / n_head)
  int n_rot = 0;             // rope.dimension_count (defaults to head_dim_k)
  float rms_eps = 1e-5f;     // attention.layer_norm_rms_epsilon
  float rope_freq_base = 10000.0f;  // rope.freq_base
  float rope_freq_scale = 1.0f;     // 1 / rope.scaling.factor (linear), or 1 / rope.scale_linear
  RopeStyle rope_style = RopeStyle::kNormal;
  float rope_attn_factor = 1.0f;    // multiplies cos and sin: rope.scaling.attn_factor (LongRoPE), YaRN's
  int64_t n_ctx_orig = 0;           // rope.scaling.original_context_length: LongRoPE's short/long switch, YaRN's
  // YaRN (rope.scaling.type yarn): ext_factor 1, and the correction range's beta_fast / beta_slow.
  float yarn_ext_factor = 0.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
  // Attention temperature (mistral3): Q at position p is multiplied by
  // 1 + attn_temp_scale * ln(floor(p / attn_temp_floor) + 1).
  float attn_temp_scale = 0.0f;     // attention.temperature_scale (0: none)
  int64_t attn_temp_floor = 0;      // n_ctx_orig

  // Per layer (n_layer,): 1 where the layer attends through a sliding window / applies RoPE.
  std::vector<uint8_t> swa_layer;
  std::vector<uint8_t> rope_layer;
  int64_t n_swa = 0;                    // attention.sliding_window: a query at p sees (p - n_swa, p]
  float rope_freq_base_swa = 10000.0f;  // rope.freq_base_swa: RoPE base of the sliding layers
  float rope_freq_scale_swa = 1.0f;

  // Attention: scores = q_scale * kq_scale * (q . k), soft-capped to +-attn_softcap when nonzero.
  // q_scale multiplies Q itself before the (f16) attention, as gemma's and phi3's graphs do.
  float q_scale = 1.0f;
  float kq_scale = 0.0f;        // attention.scale, else 1/sqrt(head_dim_k)
  float attn_softcap = 0.0f;    // attn_logit_softcapping
  float final_softcap = 0.0f;   // final_logit_softcapping: logits = c * tanh(logits / c)
  float embd_scale = 1.0f;      // embedding_scale (granite) or sqrt(n_embd) (gemma)
  float residual_scale = 1.0f;  // residual_scale: multiplies each block's output (granite)
  float logit_scale = 1.0f;     // logit_scale: logits are divided by it (granite)
  FfnAct ffn_act = FfnAct::kSilu;

  // Mixture of experts (n_expert 0: a dense FFN).
  int64_t n_expert = 0;           // expert_count
  int64_t n_layer_dense_lead = 0; // leading_dense_block_count: layers below it have the dense FFN
  int64_t n_expert_used = 0;      // expert_used_count: experts per token (top-k of the router)
  int64_t n_ff_exp = 0;           // expert_feed_forward_length
  int64_t n_ff_shexp = 0;         // expert_shared_feed_forward_length (0: no shared expert)
  ExpertGating expert_gating = ExpertGating::kSoftmax;
  bool expert_selection_bias = false; // every MoE layer has exp_probs_b (lfm2moe)
  bool expert_weights_norm = false;  // top-k weights renormalized to sum 1
  float expert_weights_scale = 0.0f; // expert_weights_scale: multiplies them when not 0 or 1

  // Encoders and embedders.
  bool causal = true;          // attention.causal: false for encoders, whose tokens see the whole sequence
  PoolingType pooling = PoolingType::kNone;  // pooling_type
  float norm_eps = 1e-12f;     // attention.layer_norm_epsilon (LayerNorm: bert)
  float alibi_max_bias = 0.0f; // ALiBi's maximum bias (jina-bert-v2: 8, as llama.cpp fixes it); 0: none
  int64_t n_cls_out = 0;       // rows of cls.output: the classification head's outputs (0: none)

  // Hybrid stacks (qwen35, qwen35moe, qwen3next, lfm2).
  DeltaNetParams ssm;                    // ssm.* (lfm2: shortconv.*): the recurrent layers' sizes (none: !enabled())
  std::vector<uint8_t> recurrent_layer;  // (n_layer,) 1: a recurrent layer, which keeps no K/V
  bool attn_out_gate = false;   // attn_q's rows are per head query then gate: out *= sigmoid(gate)
  bool imrope = false;          // IMRoPE: rope_sections interleaved over the rotated pairs (qwen35)
  int rope_sections[4] = {0, 0, 0, 0};   // rope.dimension_sections
  int64_t n_layer_nextn = 0;    // nextn_predict_layers: MTP blocks after the n_layer of the stack

  // Sliding layers' own head sizes and rotary dims (gemma4: attention.key_length_swa,
  // value_length_swa, rope.dimension_count_swa); read_hparams() sets them equal to the global
  // ones otherwise (0, in HParams made by hand: the same). The per-layer accessors pick the layer's.
  int64_t head_dim_k_swa = 0;
  int64_t head_dim_v_swa = 0;
  int n_rot_swa = 0;
  bool rope_factors_swa = true;  // the sliding layers use rope_freqs too (gemma4: the global ones only)
  // (n_layer,) the layer whose K/V layer il attends to: il itself, or an earlier layer of the same
  // kind whose cache rows it reuses and which keeps none of its own (gemma4's
  // attention.shared_kv_layers). Empty: every layer its own.
  std::vector<int32_t> kv_layer;
  bool v_norm = false;           // V is RMS-normed per head, without a weight (gemma4)
  int64_t n_deepstack = 0;   // n_deepstack_layers (qwen3vl): an image's rows are n_embd x (1 + this)
                             // wide, and layer il < this adds slice il + 1 to its output
  int64_t n_embd_per_layer = 0;  // embedding_length_per_layer_input: gemma4's per-layer inputs (0: none)
  // Every layer has the dense FFN; a layer with a router (ffn_gate_inp) adds experts beside it,
  // each branch post-normed, the sum post-normed again (gemma4's MoE).
  bool experts_beside_ffn = false;

  // Per-layer facts past the stack (il >= n_layer: the NextN block) are those of a global
  // full-attention layer with RoPE and its own K/V.
  bool recurrent(int64_t il) const {
    return static_cast<size_t>(il) < recurrent_layer.size() && recurrent_layer[static_cast<size_t>(il)] != 0;
  }
  bool uses_rope(int64_t il) const {
    return static_cast<size_t>(il) >= rope_layer.size() || rope_layer[static_cast<size_t>(il)] != 0;
  }
  int64_t n_recurrent() const {
    int64_t n = 0;
    for (uint8_t r : recurrent_layer) n += r;
    return n;
  }

  int64_t q_dim() const { return n_head * head_dim_k; }      // width of Q rows (global layers)
  int64_t k_dim() const { return n_head_kv * head_dim_k; }   // width of K rows (one cache row)
  int64_t v_dim() const { return n_head_kv * head_dim_v; }   // width of V rows (one cache row)
  // The same for layer il (its kind's head sizes), and the widest over all layers.
  bool swa(int64_t il) const {  // (false past the stack: NextN blocks attend globally)
    return static_cast<size_t>(il) < swa_layer.size() && swa_layer[static_cast<size_t>(il)] != 0;
  }
  int64_t head_k(int64_t il) const { return swa(il) && head_dim_k_swa > 0 ? head_dim_k_swa : head_dim_k; }
  int64_t head_v(int64_t il) const { return swa(il) && head_dim_v_swa > 0 ? head_dim_v_swa : head_dim_v; }
  int rot_swa() const { return n_rot_swa > 0 ? n_rot_swa : n_rot; }
  int rot(int64_t il) const { return swa(il) ? rot_swa() : n_rot; }
  int64_t q_dim(int64_t il) const { return n_head * head_k(il); }
  int64_t k_dim(int64_t il) const { return n_head_kv * head_k(il); }
  int64_t v_dim(int64_t il) const { return n_head_kv * head_v(il); }
  int64_t max_head_k() const { return std::max(head_dim_k, head_dim_k_swa); }
  int64_t max_head_v() const { return std::max(head_dim_v, head_dim_v_swa); }
  // Whether layer il computes and stores K/V (else it reads kv_layer[il]'s).
  bool own_kv(int64_t il) const {
    return static_cast<size_t>(il) >= kv_layer.size() || kv_layer[static_cast<size_t>(il)] == il;
  }
};

// One transformer block's weights. Matrices are views into the model file; the small vectors
// (norm weights, biases) are f32 copies owned by the Model. Optional vectors are empty when the
// file has no such tensor.
struct LayerWeights {
  std::vector<float> attn_norm;  // (n_embd,)
  Matrix wq;                     // (q_dim, n_embd)
  Matrix wk;                     // (k_dim, n_embd)
  Matrix wv;                     // (v_dim, n_embd)
  Matrix wo;                     // (n_embd, n_head * head_dim_v)
  std::vector<float> bq, bk, bv, bo;      // (q_dim,) (k_dim,) (v_dim,) (n_embd,): qwen2, optional
  std::vector<float> q_norm, k_norm;      // (head_dim_k,) each: qwen3, gemma3
  std::vector<float> attn_sinks;          // (n_head,) each head's sink logit: gpt-oss
  std::vector<float> post_attn_norm;      // (n_embd,) on the attention output: gemma2/3
  std::vector<float> ffn_norm;   // (n_embd,)
  Matrix ffn_gate;               // (n_ff, n_embd)    dense FFN
  Matrix ffn_up;                 // (n_ff, n_embd)
  Matrix ffn_down;               // (n_embd, n_ff)
  std::vector<float> post_ffn_norm;       // (n_embd,) on the FFN output: gemma2/3
  // Mixture of experts, in place of the dense FFN: one view per expert into the 3-D tensors.
  Matrix ffn_gate_inp;                    // (n_expert, n_embd) router
  std::vector<Matrix> gate_exps, up_exps;  // n_expert x (n_ff_exp, n_embd)
  std::vector<Matrix> down_exps;           // n_expert x (n_embd, n_ff_exp)
  // Router and expert biases (gpt-oss), empty when absent.
  std::vector<float> ffn_gate_inp_b;       // (n_expert,)
  std::vector<float> gate_exps_b, up_exps_b;  // (n_expert, n_ff_exp)
  std::vector<float> down_exps_b;          // (n_expert, n_embd)
  // The selection bias (HParams::expert_selection_bias): added to the router's probabilities
  // (sigmoids) to choose the top k, not to weight them (exp_probs_b.bias; lfm2moe), empty when absent.
  std::vector<float> ffn_exp_probs_b;      // (n_expert,)
  // The shared expert (qwen2moe): every token's FFN output adds sigmoid(gate_inp_shexp . x) times it.
  std::vector<float> ffn_gate_inp_shexp;   // (n_embd,)
  Matrix gate_shexp, up_shexp;             // (n_ff_shexp, n_embd)
  Matrix down_shexp;                       // (n_embd, n_ff_shexp)
  // Encoders: FFN biases (bert's gate-less FFN: ffn_up, GELU, ffn_down; nomic-bert's SwiGLU uses
  // ffn_gate, without biases) and the LayerNorms after each residual add, weight and bias.
  std::vector<float> ffn_up_b, ffn_down_b;                  // (ffn_up.rows,) (n_embd,)
  // jina-bert-v2, optional: LayerNorms over a token's whole Q and K rows, and a second LayerNorm
  // after attention, of x + the layer's input. ffn_up of 2 * n_ff rows is a fused GeGLU (gate
  // rows first).
  std::vector<float> attn_q_ln, attn_q_ln_b;                // (q_dim,)
  std::vector<float> attn_k_ln, attn_k_ln_b;                // (k_dim,)
  std::vector<float> attn_norm_2, attn_norm_2_b;            // (n_embd,)
  std::vector<float> attn_out_norm, attn_out_norm_b;        // (n_embd,) after attention + residual
  std::vector<float> layer_out_norm, layer_out_norm_b;      // (n_embd,) after FFN + residual
  // A recurrent layer (hybrid stacks) in place of attention: attn_norm, then dn (Gated DeltaNet)
  // or sc (lfm2's short convolution), then the FFN.
  DeltaNetWeights dn;
  ShortConvWeights sc;
  // gemma4. Experts beside the dense FFN (HParams::experts_beside_ffn): the router reads
  // rmsnorm(x) / sqrt(n_embd) * ffn_gate_inp_scale, the experts rmsnorm(x) * pre_ffn_norm_2; the
  // dense branch is post-normed by post_ffn_norm_1, the experts' by post_ffn_norm_2.
  std::vector<float> ffn_gate_inp_scale;                // (n_embd,)
  std::vector<float> pre_ffn_norm_2, post_ffn_norm_1, post_ffn_norm_2;  // (n_embd,) each
  std::vector<float> down_exps_scale;                   // (n_expert,) each expert's output scale, optional
  // Per-layer input (HParams::n_embd_per_layer = P): after the FFN, x += rmsnorm(per_layer_proj @
  // (gelu(per_layer_inp_gate @ x) * the token's input for this layer)) * per_layer_post_norm.
  Matrix per_layer_inp_gate;                            // (P, n_embd)
  Matrix per_layer_proj;                                // (n_embd, P)
  std::vector<float> per_layer_post_norm;               // (n_embd,)
  std::vector<float> out_scale;                         // (1,) multiplies the layer's output, optional
};

// A loaded model: validated hyperparameters and weight views.
//
// load() checks everything the forward pass relies on (architecture, every tensor's presence,
// shape and type) and throws std::runtime_error naming the file and exactly what is missing or
// wrong. Unless told not to, it then repacks the weight matrices the kernels have a faster
// layout for (engine/model/repack.h). Ownership: holds the gguf::FileSet (and so its memory
// mappings) and the packed copies; every Matrix points into them.
// Thread-safety: immutable after construction; share one Model across threads freely.
class Model {
 public:
  // `path`: a GGUF file, or any part of a split set "<name>-00001-of-0000N.gguf", which loads the
  // whole set (gguf/file_set.h says what is checked).
  static Model load(const std::string& path, bool repack = true);
  static Model from_file(gguf::File file, bool repack = true);
  static Model from_files(gguf::FileSet files, bool repack = true);

  const HParams& hparams() const { return hp_; }
  // The metadata (tokenizer, chat template, hyperparameters): the file, or a split set's first
  // part. Its tensors() are that part's only: the model's tensors are in files().
  const gguf::File& file() const { return files_.first(); }
  // Every file of the model: tensors over all parts, sizes.
  const gguf::FileSet& files() const { return files_; }
  // Bytes of tensor data (the weights as mapped), over all parts.
  uint64_t weight_bytes() const;

  // Bytes of weights held in the packed layout (0 when none were repacked).
  uint64_t packed_bytes() const { return packed_.bytes(); }

  // Every matrix matmul reads: output and each layer's projections.
  std::vector<const Matrix*> matmul_weights() const;

  // The memory a decode step streams once: each matrix's packed copy and its rows still in the
  // file mapping, and of each MoE layer's experts n_expert_used (a token's share; which ones
  // differs by token, their size does not).
  std::vector<std::span<const uint8_t>> matmul_ranges() const;

  // Reads once every page of the file that matmul reads (not the repacked ranges: packing read
  // them), so the first requests don't pay the page faults of a cold mapping (seconds for a
  // large model on a slow disk). Embedding rows are left to fault in when looked up. `progress(done, total)` is called
  // every ~64 MiB and at the end. Thread-safety: const; may run while nothing else uses the model.
  void page_in(const std::function<void(uint64_t done, uint64_t total)>& progress) const;

  Matrix tok_embd;                 // (n_vocab, n_embd): rows are looked up with dequantize_row
  std::vector<LayerWeights> layers;
  std::vector<float> output_norm;  // (n_embd,)
  Matrix output;                   // (n_vocab, n_embd): token_embd itself when tied
  std::vector<float> rope_freqs;   // (n_rot/2,) frequency divisors (llama3 scaling), optional
  std::vector<float> rope_short, rope_long;  // (n_rot/2,) LongRoPE divisors (phi3), optional
  // NextN / MTP blocks (qwen35 with nextn_predict_layers): block n_layer + i is nextn_layers[i]
  // with nextn[i]. Block 0 drafts tokens (`--spec mtp`: Forward::eval_nextn); the others, if a
  // file has any, are loaded and checked, not run (as llama.cpp).
  std::vector<LayerWeights> nextn_layers;
  std::vector<NextNWeights> nextn;
  // gemma4's per-layer inputs (HParams::n_embd_per_layer = P > 0): token t's input to layer il is
  // (rmsnorm(per_layer_model_proj @ x0 / sqrt(n_embd)) * per_layer_proj_norm + per_layer_tok_embd[t]
  // * sqrt(P)) / sqrt(2), slice il of P, x0 the scaled token embedding.
  Matrix per_layer_tok_embd;               // (n_vocab, n_layer * P): rows looked up with dequantize_row
  Matrix per_layer_model_proj;             // (n_layer * P, n_embd)
  std::vector<float> per_layer_proj_norm;  // (P,)

  // The frequency divisors RoPE uses for sequences of up to n_ctx_seq tokens: rope_freqs, else
  // LongRoPE's long factors beyond the original context and its short ones within it; null when
  // the model has none.
  const float* rope_factors(int64_t n_ctx_seq) const;

  // Encoders: input embeddings are token + position (bert's table) + token type 0, then a LayerNorm.
  Matrix pos_embd;                          // (n_ctx_train, n_embd); none with RoPE (nomic-bert)
  std::vector<float> type_embd0;            // (n_embd,) token type 0 (every token is "sentence A")
  std::vector<float> tok_norm, tok_norm_b;  // (n_embd,)
  // Classification head of rank pooling, optional: score = cls_out @ tanh(cls @ x + cls_b) + cls_out_b
  // (without cls: cls_out @ x + cls_out_b; without cls_out: tanh(cls @ x + cls_b), jina-reranker;
  // qwen3: softmax(cls_out @ x)).
  Matrix cls;                               // (n_embd, n_embd), or (n_cls_out, n_embd) alone; optional
  std::vector<float> cls_b;                 // (n_embd,)
  Matrix cls_out;                           // (n_cls_out, n_embd)
  std::vector<float> cls_out_b;             // (n_cls_out,)

 private:
  explicit Model(gguf::FileSet files) : files_(std::move(files)) {}
  gguf::FileSet files_;
  HParams hp_;
  PackedWeights packed_;  // after files_: Matrices point into both
};

// Reads and checks the hyperparameters of `file` (no tensors). `n_tensors`: the model's tensor
// count (a split set's, over all parts), a bound on block_count; file.tensors().size() without
// it. Throws std::runtime_error.
HParams read_hparams(const gguf::File& file);
HParams read_hparams(const gguf::File& file, uint64_t n_tensors);

// One interpreted hyperparameter, for people: `ggufd inspect`, the metadata endpoint, the log.
struct HParamField {
  std::string name;   // e.g. "sliding_window"
  std::string value;  // e.g. "512" or "layers 0-4, 6-10 of 12"
  bool numeric;       // value is a JSON number
};

// The architecture and what sets this model apart (only the features it uses).
std::vector<HParamField> describe_hparams(const HParams& hp);

}  // namespace engine
