#include "gguf/summary.h"

#include <algorithm>

namespace gguf {

Summary summarize(const File& file) { return summarize(FileSet::single(file)); }

Summary summarize(const FileSet& files) {
  const File& file = files.first();
  Summary s;
  if (auto arch = file.find_string("general.architecture")) s.architecture = *arch;
  for (const TensorInfo* p : files.tensors()) {
    const TensorInfo& t = *p;
    s.n_params += t.n_elements;
    s.n_tensor_bytes += t.n_bytes;
    auto it = std::ranges::find(s.by_type, t.type, &TypeTotal::type);
    if (it == s.by_type.end()) it = s.by_type.insert(s.by_type.end(), TypeTotal{t.type});
    it->n_tensors += 1;
    it->n_elements += t.n_elements;
    it->n_bytes += t.n_bytes;
  }
  std::ranges::sort(s.by_type, {}, [](const TypeTotal& t) { return static_cast<uint32_t>(t.type); });
  const Value* label = file.find("general.size_label");
  if (label != nullptr && label->type() == ValueType::kString) {
    s.size_label = label->as_string();
  } else {
    uint64_t experts = 0;
    if (!s.architecture.empty()) {
      const Value* e = file.find(s.architecture + ".expert_count");
      if (e != nullptr && is_integer(e->type())) experts = e->as_u64();
    }
    s.size_label = size_label(s.n_params, experts);
  }
  const Value* ftype = file.find("general.file_type");
  if (ftype != nullptr && is_integer(ftype->type())) {
    s.file_type = static_cast<uint32_t>(ftype->as_u64());
    s.file_type_name = file_type_name(*s.file_type);
  }
  s.name_parts = parse_file_name(file.name());
  return s;
}

}  // namespace gguf
