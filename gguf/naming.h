// The GGUF file-name convention:
//   <BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gguf {

struct NameParts {
  std::string base_name;
  std::optional<std::string> size_label;  // "8x7B", "3.8B-ContextLength4k"
  std::optional<std::string> fine_tune;
  std::string version = "v1.0";           // the spec's default when absent
  std::optional<std::string> encoding;    // "Q4_0"
  std::optional<std::string> type;        // "LoRA" or "vocab"
  std::optional<std::string> shard;       // "00003-of-00009"
};

// Splits a file name (a path's directory part is ignored) into the convention's parts, or nullopt
// when it does not follow the convention (BaseName, SizeLabel and Version are the minimum).
std::optional<NameParts> parse_file_name(std::string_view file_name);

// "260K", "1.1B", "8x7B": the rounded parameter-count label the convention uses.
std::string size_label(uint64_t n_params, uint64_t n_experts = 0);

}  // namespace gguf
