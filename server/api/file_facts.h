// What the listings show of a model before it loads (/v1/models, Ollama's /api/tags and
// /api/show), read from its GGUF header: every part of a split set, no tensor data.
#pragma once

#include <cstdint>
#include <string>

namespace gguf {
class FileSet;
}

namespace server {

struct FileFacts {
  std::string architecture;    // general.architecture
  std::string name;            // general.name
  uint64_t n_params = 0;       // elements of every tensor
  std::string size_label;      // general.size_label, else from n_params ("7.6B")
  std::string quantization;    // general.file_type's name without MOSTLY_ / ALL_ ("Q4_K_M"), else
                               // the type of the tensors holding the most bytes ("F32")
  int64_t context_length = 0;  // <architecture>.context_length, 0 when absent
  bool generates = true;       // not an encoder (an embedding or rerank model); unknown architectures: true
};

// Throws gguf's errors on a key of the wrong type.
FileFacts file_facts(const gguf::FileSet& files);
// The facts of the file (set) at `path`; empty when it cannot be read (its load says why).
FileFacts read_file_facts(const std::string& path);

}  // namespace server
