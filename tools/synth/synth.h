// Synthetic models: random-weight GGUF files in real model shapes (llama, qwen2, qwen3, qwen3moe,
// gemma3, bert, nomic-bert and jina-bert-v2 encoders, bert, jina and qwen3 rerankers), with our own byte-level BPE or
// WordPiece vocabulary, for benchmarks, tests and the bundled demo (no third-party weights).
//
// Weights and biases are N(0, 0.02) from a seeded PRNG (RMS norm weights 1.0), identical for a
// given seed whatever the thread count. The layer and head matrices of encoders and rerankers are
// N(0, 1 / sqrt(fan in)) and encoders' LayerNorm weights 1 + N(0, 0.02): attention is then far
// from uniform, so outputs (pooled vectors, rerank scores) depend on the whole input and on
// positions, and tests see masking or position mistakes that N(0, 0.02) weights would hide. Files are GGUF v3 with the
// metadata llama.cpp requires (general.architecture / file_type / quantization_version = 2, the
// arch hyperparameters and tokenizer.ggml.*), so llama.cpp loads them too.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gguf/types.h"
#include "gguf/writer.h"

namespace engine::synth {

// A model shape: the hyperparameters of one real model (or the tiny demo).
struct Shape {
  std::string name;        // "llama-1b"
  std::string arch;        // general.architecture: llama, qwen2, qwen3, qwen3moe, gemma3, qwen35, qwen35moe,
                           // gemma4, bert, nomic-bert, jina-bert-v2
  int64_t n_vocab = 0;     // padded to with filler tokens (the built-in vocabulary)
  int64_t n_embd = 0;
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;    // 0: n_embd / n_head (else written as attention.key/value_length)
  int64_t n_ff = 0;        // feed_forward_length (a MoE model's dense size: metadata only)
  int64_t n_ctx = 0;       // context_length
  float rope_base = 10000.0f;
  float rms_eps = 1e-5f;   // the norms' epsilon (bert: LayerNorm's, attention.layer_norm_epsilon)
  bool tied = false;       // no output.weight: token_embd doubles as the output matrix
  bool qkv_bias = false;   // qwen2
  bool qk_norm = false;    // qwen3, qwen3moe, gemma3
  bool post_norms = false; // gemma3: post_attention_norm and post_ffw_norm
  // Mixture of experts (qwen3moe): with n_expert > 0 each layer has a router (ffn_gate_inp) and
  // 3-D expert tensors ffn_{gate,up,down}_exps of n_ff_exp rows each, instead of a dense FFN.
  int64_t n_expert = 0;
  int64_t n_expert_used = 0;
  int64_t n_ff_exp = 0;
  bool expert_weights_norm = false;  // top-k weights renormalized (written for MoE shapes)
  // Sliding window (gemma3): with n_swa > 0 layer il is local when il % swa_pattern <
  // swa_pattern - 1, and local layers use rope_base_swa.
  int64_t n_swa = 0;
  int64_t swa_pattern = 0;
  float rope_base_swa = 10000.0f;
  float rope_linear_factor = 0.0f;   // rope.scaling.factor of linear scaling; 0: none
  // Encoders (bert): learned position (n_ctx rows) and token-type embeddings, LayerNorm with biases
  // after the embeddings and after each sublayer, biases on every matrix, a GELU FFN (up, down),
  // bidirectional attention, no output matrix. nomic-bert: no position table (NeoX RoPE, base
  // rope_base), fused attn_qkv, a SwiGLU FFN (gate, up, down), no biases on matrices.
  // jina-bert-v2: no position table (ALiBi), bert's biases, a fused GeGLU ffn_up of 2 * n_ff rows.
  bool jina_norms = false;    // jina-bert-v2's optional LayerNorms: attn_{q,k}_norm, attn_norm_2
  int64_t n_token_types = 0;  // rows of token_types (tokenizer.ggml.token_type_count)
  uint32_t pooling_type = 0;  // {arch}.pooling_type: 1 mean, 2 cls, 3 last, 4 rank; 0: not written
  // Classification head (pooling rank). bert cross-encoder: cls (n_embd x n_embd) and cls.output
  // (n_cls_out x n_embd), with biases; llama.cpp scores the [CLS] row x as
  // cls.output @ tanh(cls @ x + cls.bias) + cls.output.bias. jina-bert-v2 (jina-reranker-v1): cls
  // (n_cls_out x n_embd) and its bias alone, scored tanh(cls @ x + cls.bias). qwen3
  // (Qwen3-Reranker as llama.cpp converts it): cls.output alone, 2 rows (labels "yes", "no"),
  // softmaxed over the last token's row, and the rerank prompt as tokenizer.chat_template.rerank.
  // 0: no head.
  int64_t n_cls_out = 0;
  // Hybrid stacks (qwen35, qwen35moe: synth_hybrid.cpp). n_nextn NextN / MTP blocks follow the
  // n_layer of the stack (block_count = n_layer + n_nextn, nextn_predict_layers): full-attention
  // blocks with nextn.{eh_proj, enorm, hnorm, shared_head_norm}, as llama.cpp's converter writes
  // Qwen3.5's mtp.* weights. Every full_attn_interval-th layer is gated attention (attn_q of
  // 2 x n_head x head rows: queries and their gates; q/k norms), the others Gated DeltaNet:
  // attn_qkv (2 x ssm_k_heads + ssm_v_heads heads of ssm_state), attn_gate, ssm_conv1d of
  // ssm_conv taps (F32), ssm_a, ssm_dt.bias, ssm_alpha, ssm_beta, ssm_norm, ssm_out. RoPE turns
  // n_rot dims (rope.dimension_count; 0: the head size) in IMRoPE rope_sections. The FFN norm is
  // post_attention_norm.
  int64_t n_nextn = 0;
  int64_t n_rot = 0;
  int64_t full_attn_interval = 0;
  int64_t ssm_state = 0;
  int64_t ssm_k_heads = 0;
  int64_t ssm_v_heads = 0;
  int64_t ssm_conv = 0;
  std::array<int32_t, 4> rope_sections{};
  // Shared expert (qwen35moe): ffn_{gate,up,down}_shexp of n_ff_shexp rows beside the routed
  // experts, scaled by sigmoid(ffn_gate_inp_shexp . x) (an F32 vector).
  int64_t n_ff_shexp = 0;
  // gemma4: sliding layers (as gemma3's pattern) have heads of head_dim_swa and full RoPE, global
  // ones heads of head_dim and proportional RoPE turning a quarter of the pairs (rope_freqs:
  // 1, then 1e30); every layer has per-layer inputs of n_embd_per_layer (per_layer_token_embd,
  // per_layer_model_proj, per_layer_proj_norm; per layer inp_gate, proj, post_norm); the last
  // n_kv_shared layers have no attn_k / attn_v / attn_k_norm (they read the K/V of the last
  // earlier layer of their kind); the logits are soft-capped at final_softcap.
  int64_t head_dim_swa = 0;
  int64_t n_embd_per_layer = 0;
  int64_t n_kv_shared = 0;
  float final_softcap = 0.0f;

  int64_t head_size() const { return head_dim ? head_dim : n_embd / n_head; }
  bool is_encoder() const { return arch == "bert" || arch == "nomic-bert" || arch == "jina-bert-v2"; }
  bool is_reranker() const { return n_cls_out > 0; }
  bool is_hybrid() const { return arch == "qwen35" || arch == "qwen35moe" || arch == "gemma4"; }
  // gemma4: layer il is sliding (the pattern of n_swa / swa_pattern above).
  bool sliding(int64_t il) const { return n_swa > 0 && il % swa_pattern < swa_pattern - 1; }
};

// Built-in shapes: demo, llama-1b, tinyllama, qwen2.5-0.5b, qwen3-1.7b, llama-8b, qwen3-30b-a3b,
// gemma3-4b, qwen3.5-4b, qwen3.5-9b, qwen3.5-35b-a3b (with their MTP block), gemma4-e4b, minilm-l6 (all-MiniLM-L6-v2, mean pooling), bert-rerank (a small cross-encoder),
// nomic-bert (a small nomic-embed-text-v1.5, mean pooling), jina-bert-v2 (a small
// jina-embeddings-v2 with every optional LayerNorm, mean pooling), jina-rerank (a small
// jina-reranker-v1), qwen3-rerank (a small Qwen3-Reranker).
const std::vector<Shape>& shapes();
std::optional<Shape> find_shape(std::string_view name);
// `s` with n_layer layers (> 0). gemma4: the shared-KV layers shrink with it so that the first
// shared layer still follows a global layer preceded by a sliding one (as in the real model),
// none when that leaves no room.
Shape with_layers(Shape s, int64_t n_layer);

// A file type ("Q4_K_M") and the llama_ftype number written as general.file_type.
struct FileType {
  std::string_view name;
  uint32_t ftype;
  gguf::TensorType base;  // the type of most weight matrices
};
// F32 F16 BF16 Q8_0 Q4_0 Q4_1 Q5_0 Q5_1 Q2_K Q3_K_S Q4_K_S Q4_K_M Q5_K_S Q5_K_M Q6_K IQ4_NL IQ4_XS.
const std::vector<FileType>& file_types();
std::optional<FileType> find_file_type(std::string_view name);  // case-insensitive

// What one tensor of the file will hold.
struct TensorPlan {
  // N(0, 0.02), 1, 1 + N(0, 0.02), N(0, 1 / sqrt(row length)); kDecay: -exp(u), u uniform in
  // [-1, 0.5) (DeltaNet's ssm_a = -exp(A_log): per-token decays exp(softplus(.) * a) in (0, 1));
  // kPartialRope: 1 for the first quarter of the row, 1e30 after (gemma4's rope_freqs: those
  // pairs do not turn).
  enum class Init { kNormal, kOnes, kNearOnes, kFanIn, kDecay, kPartialRope };
  std::string name;
  gguf::TensorType type;
  std::vector<uint64_t> ne;  // GGUF order: ne[0] is the row length
  Init init = Init::kNormal;
  uint64_t n_elements() const;
  uint64_t n_bytes() const;
};

// The type of each tensor follows llama.cpp's choices (llama_tensor_get_type, simplified):
// * 1-D tensors (norms, biases), the MoE router ffn_gate_inp and bert's position_embd and
//   token_types are F32 (convert_hf_to_gguf writes them F32 and llama-quantize never quantizes
//   them).
// * output.weight (or token_embd.weight when tied or when there is no output matrix: bert) is
//   Q6_K for every quantized type except Q8_0 (kept Q8_0) and the float types (kept as they are).
// * Q4_K_M / Q5_K_M: attn_v and ffn_down (ffn_down_exps too) are Q6_K in llama.cpp's "more
//   bits" layers (the first and last eighth and every third in between), the base type elsewhere.
// * Expert tensors are GGUF [n_embd, n_ff_exp, n_expert] (gate, up) and [n_ff_exp, n_embd,
//   n_expert] (down), typed like their dense counterparts by the rules above.
// * bert: token_embd, token_types, position_embd, token_embd_norm.{weight,bias}; per layer
//   attn_{q,k,v,output}.{weight,bias}, attn_output_norm.{weight,bias}, ffn_{up,down}.{weight,bias},
//   layer_output_norm.{weight,bias}; then cls.{weight,bias} and cls.output.{weight,bias} with a head.
// * nomic-bert: token_embd, token_types, token_embd_norm.{weight,bias}; per layer attn_qkv,
//   attn_output, attn_output_norm.{weight,bias}, ffn_{up,gate,down}, layer_output_norm.{weight,bias}.
// * jina-bert-v2: token_embd, token_types, token_embd_norm.{weight,bias}; per layer
//   attn_{q,k,v,output}.{weight,bias}, attn_{q,k}_norm.{weight,bias} and attn_norm_2.{weight,bias}
//   (jina_norms), attn_output_norm.{weight,bias}, ffn_up.{weight,bias} of 2 * n_ff rows,
//   ffn_down.{weight,bias}, layer_output_norm.{weight,bias}; then cls.{weight,bias} with a head.
// * qwen3-rerank: qwen3's tensors, then cls.output (2 rows, typed like a layer matrix).
// * Every other matrix has the base type; rows that are not a multiple of the block size fall
//   back as llama.cpp does (Q4_K -> Q5_0, Q5_K -> Q5_1, Q6_K -> Q8_0, Q2_K/Q3_K/IQ4_XS ->
//   IQ4_NL; still not a multiple -> F16; F16 not possible either -> F32).
std::vector<TensorPlan> plan_tensors(const Shape& shape, const FileType& type);

// GGUF metadata: key/value pairs, in order.
using Metadata = std::vector<std::pair<std::string, gguf::OwnedValue>>;

// general.* and the architecture's hyperparameter keys, named and typed as llama.cpp's converter
// writes them (MoE: expert_count, expert_used_count, expert_feed_forward_length,
// expert_weights_norm; sliding window: attention.sliding_window(_pattern), rope.freq_base_swa;
// rope.scaling.type/factor when rope_linear_factor is set). bert: no rope keys,
// attention.layer_norm_epsilon, attention.causal = false, pooling_type,
// classifier.output_labels ("LABEL_0", ... with a head) and tokenizer.ggml.token_type_count, the
// one tokenizer key (write_model drops a copied vocabulary's own); nomic-bert: also
// rope.freq_base. Decoder rerankers: pooling_type 4, classifier.output_labels ["yes", "no"] and
// tokenizer.chat_template.rerank, Qwen3-Reranker's prompt as llama.cpp's converter writes it.
Metadata model_metadata(const Shape& shape, const FileType& type);

// Our own byte-level BPE vocabulary ("gpt2" model, "default" pre-tokenizer): the 256 byte tokens
// (GPT-2 byte <-> unicode map, in byte order), then merges learned deterministically from a short
// built-in English text, then <|begin_of_text|> (bos) <|end_of_text|> (eos) <|im_start|>
// <|im_end|> (control), then unused "<|synth_N|>" fillers up to `n_vocab` tokens (no padding
// when n_vocab is smaller than the natural size), and a ChatML chat template.
Metadata builtin_vocabulary(int64_t n_vocab);
// Our own WordPiece vocabulary ("bert" model, as llama.cpp's converter stores BERT vocabularies:
// word-start pieces carry a "\u2581" prefix, continuation pieces are bare): [PAD] = 0,
// [unused0..98], [UNK] = 100, [CLS] = 101, [SEP] = 102, [MASK] = 103 (control), then every
// printable ASCII character as a word start and as a continuation, the words of a built-in
// English text with their 2- and 3-letter prefixes and common English suffixes and letter groups
// as continuations (lower case), then unused "[unusedN]" fillers up to `n_vocab` tokens.
// Lower-case ASCII text never tokenizes to [UNK].
Metadata builtin_wordpiece_vocabulary(int64_t n_vocab);
// Every tokenizer.* key of an existing GGUF file. Throws gguf::Error / std::runtime_error.
Metadata vocabulary_from(const std::string& path);

struct Options {
  Shape shape;
  FileType type{"Q8_0", 7, gguf::TensorType::Q8_0};
  uint64_t seed = 1;
  std::string vocab_from;  // a GGUF file whose tokenizer.* keys to copy; "" = builtin (encoders: WordPiece)
  int threads = 0;         // 0: std::thread::hardware_concurrency()
};

// The bundled demo model (ggufd-demo.gguf): shape demo, Q8_0, a fixed seed.
Options demo_options();

struct Result {
  uint64_t bytes = 0;       // file size
  uint64_t n_params = 0;
  int64_t n_vocab = 0;      // rows of token_embd (the vocabulary size)
  size_t n_tensors = 0;
};

// Writes the model to `path` (via a temporary file unique to the process and a rename, so readers
// and concurrent writers never see a partial file).
// Tensors are generated and quantized in row batches across threads and streamed to disk: memory
// stays at a few tens of MB beyond the tokenizer metadata whatever the model size.
// With vocab_from, the model's vocabulary size is that file's token count.
// Throws std::runtime_error (bad options, I/O errors naming the path).
Result write_model(const Options& options, const std::string& path);

}  // namespace engine::synth
