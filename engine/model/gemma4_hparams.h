// gemma4's hyperparameters, read as llama.cpp's gemma4.cpp (load_arch_hparams) and its KV cache
// (the reuse rule of llama-model.cpp) read them. Used by hparams.cpp.
#pragma once

#include <string>
#include <vector>

#include "engine/model/model.h"
#include "gguf/file.h"

namespace engine {

// Reads the sliding layers (attention.sliding_window_pattern: one flag per layer, or one value
// for all), the window, the sliding layers' head sizes and RoPE base, the per-layer input width
// and attention.shared_kv_layers into hp, whose common keys are read. `p` is "gemma4.". Throws
// std::runtime_error naming the file and the key.
void read_gemma4_hparams(const gguf::File& file, const std::string& p, HParams& hp);

// The fields describe_hparams() adds for what gemma4 brings: sliding layers' head sizes, shared
// K/V, per-layer inputs, the V norm.
void describe_gemma4(const HParams& hp, std::vector<HParamField>& out);

}  // namespace engine
