// The GGUF file-name convention:
//   <BaseName>-<SizeLabel>-<FineTune>-<Version>-<Encoding>-<Type>-<Shard>.gguf
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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

// Split sets (llama.cpp's llama-gguf-split): a model stored as parts "<prefix>-00001-of-00003.gguf"
// ... "<prefix>-00003-of-00003.gguf", each a GGUF file of its own. The name alone says whether a
// path is a part and where the others are; the files' split.* keys must agree (gguf/file_set.h).
struct SplitName {
  std::string prefix;  // the path up to "-NNNNN-of-MMMMM.gguf", directory included
  int no = 0;          // 1-based part number, 1 <= no <= count
  int count = 0;       // parts in the set, 1 to 99999
};

// The split name of `path`: it ends with "-NNNNN-of-MMMMM.gguf" (exactly five digits each, the
// prefix not empty, 1 <= NNNNN <= MMMMM), as llama.cpp's llama_split_prefix requires; else nullopt.
std::optional<SplitName> parse_split_name(std::string_view path);
// "<prefix>-00002-of-00003.gguf" for part `no` (1-based) of `count`.
std::string split_path(std::string_view prefix, int no, int count);

// Every part of the set `path` belongs to, first to last, from its name alone (the files need not
// exist: a downloader can list what to fetch); {path} when the name is not a split part's.
std::vector<std::string> split_parts(const std::string& path);
// Whether `path` is named as a part other than the first: directory listings skip these, so that a
// set is one entry (its first part).
bool is_later_split_part(std::string_view path);
// Bytes on disk of the model at `path`: the sum over split_parts(path). Throws std::runtime_error
// naming a part that is missing or unreadable.
uint64_t model_files_size(const std::string& path);

}  // namespace gguf
