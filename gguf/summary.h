// Totals over a parsed file: what `ggufd inspect` and the metadata endpoint report.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/file_set.h"
#include "gguf/naming.h"

namespace gguf {

struct TypeTotal {
  TensorType type;
  uint64_t n_tensors = 0;
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
};

struct Summary {
  std::string architecture;                 // general.architecture, or empty
  uint64_t n_params = 0;                    // elements over all tensors
  uint64_t n_tensor_bytes = 0;
  std::vector<TypeTotal> by_type;           // ordered by type id
  std::string size_label;                   // general.size_label, else computed from n_params
  std::optional<uint32_t> file_type;        // general.file_type
  std::string file_type_name;               // "MOSTLY_Q4_K_M", or empty when unknown/absent
  std::optional<NameParts> name_parts;      // of the file name, when it follows the convention
};

// Totals over the file's tensors, or (a FileSet) over every part's; metadata of the (first) file.
Summary summarize(const File& file);
Summary summarize(const FileSet& files);

}  // namespace gguf
