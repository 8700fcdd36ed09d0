// The hyperparameters of hybrid stacks (qwen35, qwen35moe, qwen3next, lfm2, lfm2moe), read as
// llama.cpp's qwen35.cpp / qwen35moe.cpp / qwen3next.cpp / lfm2.cpp / lfm2moe.cpp read them. Used by hparams.cpp.
#pragma once

#include <string>
#include <vector>

#include "engine/model/model.h"
#include "gguf/file.h"

namespace engine {

// Reads ssm.*, nextn_predict_layers (hp.n_layer becomes the stack without the NextN blocks),
// attention.recurrent_layers or full_attention_interval, rope.dimension_sections (qwen35) into
// hp. `p` is "<arch>.". Throws std::runtime_error naming the file and the key.
void read_hybrid_hparams(const gguf::File& file, const std::string& p, HParams& hp);

// rope.dimension_sections (four sizes, or one for all four): IMRoPE (qwen35, qwen3vl), or with
// interleaved false M-RoPE, the sections side by side (qwen2vl).
void read_rope_sections(const gguf::File& file, const std::string& p, HParams& hp, bool interleaved = true);

// lfm2, lfm2moe: shortconv.l_cache (the conv's taps) into hp.ssm for the layers
// attention.head_count_kv marks 0 (already in hp.recurrent_layer); lfm2 only (as llama.cpp):
// attention.sliding_window for the others.
void read_short_conv_hparams(const gguf::File& file, const std::string& p, HParams& hp);

// The fields describe_hparams() adds for a hybrid stack.
void describe_hybrid(const HParams& hp, std::vector<HParamField>& out);

}  // namespace engine
