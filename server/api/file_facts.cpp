#include "server/api/file_facts.h"

#include <exception>

#include "engine/model/arch.h"
#include "gguf/file_set.h"
#include "gguf/summary.h"
#include "gguf/types.h"

namespace server {

namespace {

std::string quantization_of(const gguf::Summary& s) {
  std::string name = s.file_type_name;
  for (const std::string prefix : {"MOSTLY_", "ALL_"}) {
    if (name.rfind(prefix, 0) == 0) name = name.substr(prefix.size());
  }
  if (!name.empty()) return name;
  const gguf::TypeTotal* most = nullptr;
  for (const gguf::TypeTotal& t : s.by_type) {
    if (most == nullptr || t.n_bytes > most->n_bytes) most = &t;
  }
  return most == nullptr ? "" : std::string(gguf::type_info(most->type).name);
}

}  // namespace

FileFacts file_facts(const gguf::FileSet& files) {
  FileFacts f;
  const gguf::Summary sum = gguf::summarize(files);
  f.architecture = sum.architecture;
  f.n_params = sum.n_params;
  f.size_label = sum.size_label;
  f.quantization = quantization_of(sum);
  if (auto name = files.first().find_string("general.name")) f.name = std::string(*name);
  const engine::ArchTraits* traits = engine::find_arch(f.architecture);
  f.generates = traits == nullptr || !traits->encoder;
  if (!f.architecture.empty()) {
    if (auto n = files.first().find_u64(f.architecture + ".context_length")) f.context_length = static_cast<int64_t>(*n);
  }
  return f;
}

FileFacts read_file_facts(const std::string& path) {
  try {
    return file_facts(gguf::FileSet::open(path));
  } catch (const std::exception&) {  // unreadable, or a key of the wrong type: the load says what
    return {};
  }
}

}  // namespace server
