#include "server/api/gguf_json.h"

#include <cmath>

#include "engine/model/model.h"
#include "gguf/summary.h"

namespace server {

using nlohmann::json;

namespace {

json element_to_json(const gguf::Value& v, uint64_t i, bool full) {
  switch (v.element_type()) {
    case gguf::ValueType::kString: return std::string(v.string_at(i));
    case gguf::ValueType::kArray: return value_to_json(v.array_at(i), full);
    case gguf::ValueType::kBool: return v.bool_at(i);
    case gguf::ValueType::kF32:
    case gguf::ValueType::kF64: return v.f64_at(i);
    case gguf::ValueType::kU64: return v.u64_at(i);
    default: return v.i64_at(i);
  }
}

json shape_json(const gguf::TensorInfo& t) {
  json shape = json::array();
  for (int d = 0; d < t.n_dims; ++d) shape.push_back(t.ne[d]);
  return shape;
}

json name_json(const std::optional<gguf::NameParts>& p) {
  if (!p) return nullptr;
  auto opt = [](const std::optional<std::string>& s) { return s ? json(*s) : json(nullptr); };
  return {{"base_name", p->base_name}, {"size_label", opt(p->size_label)},
          {"fine_tune", opt(p->fine_tune)}, {"version", p->version},
          {"encoding", opt(p->encoding)}, {"type", opt(p->type)}, {"shard", opt(p->shard)}};
}

}  // namespace

std::string value_type_label(const gguf::Value& v) {
  if (!v.is_array()) return std::string(gguf::value_type_name(v.type()));
  return "ARRAY[" + std::string(gguf::value_type_name(v.element_type())) + "]";
}

json value_to_json(const gguf::Value& v, bool full) {
  switch (v.type()) {
    case gguf::ValueType::kString: return std::string(v.as_string());
    case gguf::ValueType::kBool: return v.as_bool();
    case gguf::ValueType::kF32:
    case gguf::ValueType::kF64: return v.as_f64();
    case gguf::ValueType::kU64: return v.as_u64();
    case gguf::ValueType::kArray: break;
    default: return v.as_i64();
  }
  const uint64_t n = v.size();
  const uint64_t shown = full ? n : std::min<uint64_t>(n, kArraySummaryLimit);
  json items = json::array();
  for (uint64_t i = 0; i < shown; ++i) items.push_back(element_to_json(v, i, full));
  if (shown == n) return items;
  return {{"type", "array"}, {"element_type", gguf::value_type_name(v.element_type())},
          {"length", n}, {"head", std::move(items)}};
}

namespace {

// The hyperparameters as ggufd reads them ({"supported": false, "error"} when it can't).
json model_json(const gguf::FileSet& files) {
  try {
    json j = {{"supported", true}};
    for (const engine::HParamField& f : engine::describe_hparams(engine::read_hparams(files.first(), files.n_tensors()))) {
      if (!f.numeric) {
        j[f.name] = f.value;
      } else if (const double v = std::stod(f.value); v == std::floor(v) && std::abs(v) < 9.0e15) {
        j[f.name] = static_cast<int64_t>(v);
      } else {
        j[f.name] = v;
      }
    }
    return j;
  } catch (const std::exception& e) {
    return {{"supported", false}, {"error", e.what()}};
  }
}

}  // namespace

json file_to_json(const gguf::File& file, bool full) { return file_to_json(gguf::FileSet::single(file), full); }

json file_to_json(const gguf::FileSet& files, bool full) {
  const gguf::File& file = files.first();
  const gguf::Summary s = gguf::summarize(files);
  json metadata = json::object();
  json types = json::object();
  for (const gguf::KeyValue& kv : file.metadata()) {
    const std::string key(kv.key);
    metadata[key] = value_to_json(kv.value, full);
    types[key] = value_type_label(kv.value);
  }
  json tensors = json::array();
  json parts = json::array();
  for (size_t p = 0; p < files.parts().size(); ++p) {
    const gguf::File& part = files.parts()[p];
    for (const gguf::TensorInfo& t : part.tensors()) {
      tensors.push_back({{"name", std::string(t.name)},
                         {"type", gguf::type_info(t.type).name},
                         {"shape", shape_json(t)},
                         {"offset", t.offset},
                         {"bytes", t.n_bytes}});
      if (files.is_split()) tensors.back()["part"] = p;
    }
    parts.push_back({{"file", part.name()}, {"file_size", part.file_size()}, {"tensor_count", part.tensors().size()}});
  }
  json by_type = json::array();
  for (const gguf::TypeTotal& t : s.by_type) {
    by_type.push_back({{"type", gguf::type_info(t.type).name}, {"tensors", t.n_tensors},
                       {"elements", t.n_elements}, {"bytes", t.n_bytes}});
  }
  json file_type = nullptr;
  if (s.file_type) {
    file_type = {{"id", *s.file_type}, {"name", s.file_type_name}};
  }
  json out = {
      {"file", file.name()},
      {"header",
       {{"version", file.version()}, {"big_endian", file.big_endian()},
        {"alignment", file.alignment()}, {"tensor_count", file.tensors().size()},
        {"metadata_count", file.metadata().size()}, {"data_offset", file.data_offset()},
        {"file_size", file.file_size()}}},
      {"metadata", std::move(metadata)},
      {"metadata_types", std::move(types)},
      {"tensors", std::move(tensors)},
      {"totals",
       {{"architecture", s.architecture}, {"parameters", s.n_params},
        {"tensor_bytes", s.n_tensor_bytes}, {"size_label", s.size_label},
        {"file_type", std::move(file_type)}, {"by_type", std::move(by_type)}}},
      {"name", name_json(s.name_parts)},
      {"model", model_json(files)},
  };
  if (files.is_split()) out["parts"] = std::move(parts);
  return out;
}

std::string dump(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

}  // namespace server
