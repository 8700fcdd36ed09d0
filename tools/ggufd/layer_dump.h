// `ggufd logits --dump-layers`: the activations of chosen positions after every step of every layer,
// written as JSON that scripts/drift/compare reads beside the same dump from llama.cpp
// (scripts/drift/llama_dump.cpp). Format "ggufd-layer-dump/1":
//   {"format", "source": "ggufd", "positions": [p...], what the caller adds (model, tokens,
//    n_prompt, q_scale), "tensors": [{"name", "layer", "pos", "data": [floats]}, ...]}
// tensors in execution order; names are engine::ForwardObserver's, plus "result_output" (layer -1:
// the logits).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "engine/model/forward.h"

namespace ggufd {

// Collects the rows of the chosen positions of one sequence evaluated in one Forward::eval() whose
// batch index equals the position (what `ggufd logits` runs).
// Ownership: owns copies of the rows it keeps. Thread-safety: none (the eval() thread calls it).
class LayerDump : public engine::ForwardObserver {
 public:
  // positions: the positions to keep; ops: the step names to keep (empty: every step).
  LayerDump(std::set<int64_t> positions, std::set<std::string> ops);

  void observe(const char* name, int64_t layer, int64_t first, int64_t n, int64_t width,
               const float* rows) override;
  // A row that does not come from the forward pass (the logits of a position); kept when `pos` is
  // one of the chosen positions.
  void add(const std::string& name, int64_t layer, int64_t pos, const float* row, int64_t width);
  bool wants(const std::string& name) const { return ops_.empty() || ops_.count(name) > 0; }

  // The whole dump as JSON (floats with 9 significant digits: exact for f32) to `path`, `head`'s
  // fields (an object) first; throws
  // std::runtime_error when it cannot be written.
  void write(const std::string& path, nlohmann::json head) const;

 private:
  struct Record {
    std::string name;
    int64_t layer;
    int64_t pos;
    std::vector<float> data;
  };
  std::set<int64_t> positions_;
  std::set<std::string> ops_;
  std::vector<Record> records_;
};

// "0,5,-1" -> positions in [0, n) (negative: from the end), "all" -> every position. Throws
// std::invalid_argument naming the bad entry or the one out of range.
std::set<int64_t> parse_positions(const std::string& s, int64_t n);

}  // namespace ggufd
