// `ggufd inspect FILE [--json] [--full]`: everything a GGUF file says about itself.
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>

#include "engine/model/model.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/file_set.h"
#include "gguf/summary.h"
#include "server/api/gguf_json.h"
#include "tools/ggufd/commands.h"

namespace ggufd {

namespace {

constexpr size_t kShownItems = 8;     // array items shown in text mode unless --full
constexpr size_t kShownChars = 120;   // string characters shown inline

std::string escaped(std::string_view s, bool full) {
  std::string out = "\"";
  size_t n = 0;
  for (char c : s) {
    if (!full && n++ == kShownChars) {
      out += "...";
      break;
    }
    switch (c) {
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned char>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  if (out.size() < 4 || out.compare(out.size() - 3, 3, "...") != 0) out += '"';
  return out;
}

std::string format_value(const gguf::Value& v, bool full);

std::string format_float(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", x);
  return buf;
}

std::string format_element(const gguf::Value& v, uint64_t i, bool full) {
  switch (v.element_type()) {
    case gguf::ValueType::kString: return escaped(v.string_at(i), full);
    case gguf::ValueType::kArray: return format_value(v.array_at(i), full);
    case gguf::ValueType::kBool: return v.bool_at(i) ? "true" : "false";
    case gguf::ValueType::kF32:
    case gguf::ValueType::kF64: return format_float(v.f64_at(i));
    case gguf::ValueType::kU64: return std::to_string(v.u64_at(i));
    default: return std::to_string(v.i64_at(i));
  }
}

std::string format_value(const gguf::Value& v, bool full) {
  switch (v.type()) {
    case gguf::ValueType::kString: return escaped(v.as_string(), full);
    case gguf::ValueType::kBool: return v.as_bool() ? "true" : "false";
    case gguf::ValueType::kF32:
    case gguf::ValueType::kF64: return format_float(v.as_f64());
    case gguf::ValueType::kU64: return std::to_string(v.as_u64());
    case gguf::ValueType::kArray: break;
    default: return std::to_string(v.as_i64());
  }
  const uint64_t n = v.size();
  const uint64_t shown = full ? n : std::min<uint64_t>(n, kShownItems);
  std::string out = "[";
  for (uint64_t i = 0; i < shown; ++i) {
    if (i != 0) out += ", ";
    out += format_element(v, i, full);
  }
  if (shown < n) out += ", ... " + std::to_string(n - shown) + " more";
  return out + "]";
}

// What ggufd's tokenizer makes of the file: JSON with the tokenizer model, pre-tokenizer, size,
// BOS/EOS and the end-of-generation tokens; {"error": ...} when it does not load (an unknown
// tokenizer model names itself); null without tokenizer.ggml.model.
nlohmann::json tokenizer_json(const gguf::File& f) {
  if (!f.find_string("tokenizer.ggml.model")) return nullptr;
  try {
    const engine::Tokenizer tok = engine::Tokenizer::from_gguf(f);
    nlohmann::json eog = nlohmann::json::array();
    for (int32_t id : tok.eog_ids()) eog.push_back({{"id", id}, {"text", std::string(tok.token_text(id))}});
    return {{"model", std::string(tok.model())}, {"pre_tokenizer", std::string(tok.pre_tokenizer())},
            {"tokens", tok.n_vocab()},           {"bos", tok.bos()},
            {"eos", tok.eos()},                  {"add_bos", tok.add_bos()},
            {"add_eos", tok.add_eos()},          {"eog", eog}};
  } catch (const std::exception& e) {
    return {{"error", e.what()}};
  }
}

void print_tokenizer(const gguf::File& f) {
  const nlohmann::json t = tokenizer_json(f);
  std::printf("\ntokenizer (as ggufd reads it):\n");
  if (t.is_null()) {
    std::printf("  none (no tokenizer.ggml.model)\n");
    return;
  }
  if (t.contains("error")) {
    std::printf("  not loadable: %s\n", t["error"].get<std::string>().c_str());
    return;
  }
  const std::string pre = t["pre_tokenizer"].get<std::string>();
  std::printf("  %-28s %s\n", "model", t["model"].get<std::string>().c_str());
  std::printf("  %-28s %s\n", "pre-tokenizer", pre.empty() ? "-" : pre.c_str());
  std::printf("  %-28s %d\n", "tokens", t["tokens"].get<int>());
  std::printf("  %-28s %d (added: %s)\n", "bos", t["bos"].get<int>(), t["add_bos"].get<bool>() ? "yes" : "no");
  std::printf("  %-28s %d (added: %s)\n", "eos", t["eos"].get<int>(), t["add_eos"].get<bool>() ? "yes" : "no");
  std::string eog;
  for (const auto& e : t["eog"]) {
    eog += (eog.empty() ? "" : ", ") + std::to_string(e["id"].get<int>()) + " " + escaped(e["text"].get<std::string>(), false);
  }
  std::printf("  %-28s %s\n", "end of generation", eog.empty() ? "-" : eog.c_str());
}

std::string shape(const gguf::TensorInfo& t) {
  std::string s = "[";
  for (int d = 0; d < t.n_dims; ++d) s += (d ? ", " : "") + std::to_string(t.ne[d]);
  return s + "]";
}

void print_text(const gguf::FileSet& files, bool full) {
  const gguf::File& f = files.first();
  const gguf::Summary s = gguf::summarize(files);
  std::printf("file:        %s\n", f.name().c_str());
  std::printf("header:      GGUF v%u, %s-endian, alignment %llu, data at byte %llu, %llu bytes\n",
              f.version(), f.big_endian() ? "big" : "little",
              static_cast<unsigned long long>(f.alignment()),
              static_cast<unsigned long long>(f.data_offset()),
              static_cast<unsigned long long>(f.file_size()));
  if (s.name_parts) {
    const gguf::NameParts& p = *s.name_parts;
    auto opt = [](const std::optional<std::string>& o) { return o ? o->c_str() : "-"; };
    std::printf("name:        base %s, size %s, fine-tune %s, version %s, encoding %s, type %s, "
                "shard %s\n",
                p.base_name.c_str(), opt(p.size_label), opt(p.fine_tune), p.version.c_str(),
                opt(p.encoding), opt(p.type), opt(p.shard));
  }
  std::printf("\nmetadata (%zu keys):\n", f.metadata().size());
  const gguf::Value* chat_template = nullptr;
  for (const gguf::KeyValue& kv : f.metadata()) {
    const std::string type = server::value_type_label(kv.value);
    if (kv.key == "tokenizer.chat_template" && kv.value.type() == gguf::ValueType::kString) {
      chat_template = &kv.value;
      std::printf("  %-40.*s %-14s (%zu bytes, shown below)\n", static_cast<int>(kv.key.size()),
                  kv.key.data(), type.c_str(), kv.value.as_string().size());
      continue;
    }
    const std::string len = kv.value.is_array() ? "(" + std::to_string(kv.value.size()) + ") " : "";
    std::printf("  %-40.*s %-14s %s%s\n", static_cast<int>(kv.key.size()), kv.key.data(),
                type.c_str(), len.c_str(), format_value(kv.value, full).c_str());
  }
  if (files.is_split()) {
    std::printf("\nsplit set (%zu parts; offsets below are within each part's data):\n", files.parts().size());
    for (const gguf::File& part : files.parts()) {
      std::printf("  %s: %zu tensors, %llu bytes\n", part.name().c_str(), part.tensors().size(),
                  static_cast<unsigned long long>(part.file_size()));
    }
  }
  std::printf("\ntensors (%zu):\n  %-40s %-8s %-24s %14s %14s\n", files.n_tensors(), "name",
              "type", "shape", "offset", "bytes");
  for (const gguf::TensorInfo* p : files.tensors()) {
    const gguf::TensorInfo& t = *p;
    std::printf("  %-40.*s %-8s %-24s %14llu %14llu\n", static_cast<int>(t.name.size()),
                t.name.data(), std::string(gguf::type_info(t.type).name).c_str(),
                shape(t).c_str(), static_cast<unsigned long long>(t.offset),
                static_cast<unsigned long long>(t.n_bytes));
  }
  std::printf("\ntotals:\n  architecture %s, %llu parameters (%s), %llu bytes of tensor data\n",
              s.architecture.empty() ? "-" : s.architecture.c_str(),
              static_cast<unsigned long long>(s.n_params), s.size_label.c_str(),
              static_cast<unsigned long long>(s.n_tensor_bytes));
  if (s.file_type) {
    std::printf("  file type %u (%s)\n", *s.file_type,
                s.file_type_name.empty() ? "unknown" : s.file_type_name.c_str());
  }
  for (const gguf::TypeTotal& t : s.by_type) {
    std::printf("  %-8s %5llu tensors %14llu elements %14llu bytes\n",
                std::string(gguf::type_info(t.type).name).c_str(),
                static_cast<unsigned long long>(t.n_tensors),
                static_cast<unsigned long long>(t.n_elements),
                static_cast<unsigned long long>(t.n_bytes));
  }
  std::printf("\nmodel (as ggufd reads it):\n");
  try {
    for (const engine::HParamField& h : engine::describe_hparams(engine::read_hparams(f, files.n_tensors()))) {
      std::printf("  %-28s %s\n", h.name.c_str(), h.value.c_str());
    }
  } catch (const std::exception& e) {
    std::printf("  not loadable: %s\n", e.what());
  }
  print_tokenizer(f);
  if (chat_template != nullptr) {
    std::printf("\nchat template (tokenizer.chat_template):\n%.*s\n",
                static_cast<int>(chat_template->as_string().size()),
                chat_template->as_string().data());
  }
}

}  // namespace

Command add_inspect(CLI::App& app) {
  struct Options {
    std::string path;
    bool json = false;
    bool full = false;
  };
  auto o = std::make_shared<Options>();
  app.add_option("file", o->path, "GGUF file (a split set: any part, usually the first)")->required();
  app.add_flag("--json", o->json, "Print one JSON document");
  app.add_flag("--full", o->full, "Show every array element and full strings");
  return [o] {
    const gguf::FileSet files = gguf::FileSet::open(o->path);  // (a split set: all parts)
    if (o->json) {
      nlohmann::json j = server::file_to_json(files, o->full);
      j["tokenizer"] = tokenizer_json(files.first());
      std::printf("%s\n", server::dump(j, 2).c_str());
    } else {
      print_text(files, o->full);
    }
    return 0;
  };
}

}  // namespace ggufd
