// Tokenizer references made by tests/data/reference/gen (see the README there): the vocabulary a
// reference's "gguf" metadata describes, written back into an in-memory GGUF and loaded.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/text/tokenizer/tokenizer.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "tests/support/reference.h"

namespace ggufd::test {

// The GGUF bytes of a reference's "gguf" list ({"key", "type", "value"}; types string, u32,
// bool, string_array, f32_array, i32_array), leaving out the keys in `drop`.
inline std::vector<uint8_t> reference_vocab_bytes(const nlohmann::json& reference,
                                                  const std::set<std::string>& drop = {}) {
  gguf::Writer w;
  for (const nlohmann::json& kv : reference.at("gguf")) {
    const std::string key = kv.at("key").get<std::string>(), type = kv.at("type").get<std::string>();
    const nlohmann::json& v = kv.at("value");
    if (drop.count(key) != 0) continue;
    if (type == "string") {
      w.set(key, gguf::OwnedValue::string(v.get<std::string>()));
    } else if (type == "u32") {
      w.set(key, gguf::OwnedValue::u32(v.get<uint32_t>()));
    } else if (type == "bool") {
      w.set(key, gguf::OwnedValue::boolean(v.get<bool>()));
    } else if (type == "string_array") {
      w.set(key, gguf::OwnedValue::string_array(v.get<std::vector<std::string>>()));
    } else if (type == "f32_array") {
      w.set(key, gguf::OwnedValue::f32_array(v.get<std::vector<float>>()));
    } else if (type == "i32_array") {
      w.set(key, gguf::OwnedValue::i32_array(v.get<std::vector<int32_t>>()));
    } else {
      throw std::runtime_error("unknown metadata type in a reference: " + type);
    }
  }
  return w.to_bytes();
}

// The tokenizer of a reference's vocabulary (the Tokenizer copies what it needs from the file).
inline engine::Tokenizer reference_tokenizer(const nlohmann::json& reference,
                                             const std::set<std::string>& drop = {}) {
  const std::vector<uint8_t> bytes = reference_vocab_bytes(reference, drop);
  return engine::Tokenizer::from_gguf(gguf::File::parse(bytes));
}

// "48690a" -> "Hi\n".
inline std::string from_hex(const std::string& hex) {
  if (hex.size() % 2 != 0) throw std::runtime_error("odd-length hex string in a reference");
  std::string out;
  for (size_t i = 0; i < hex.size(); i += 2) {
    out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  }
  return out;
}

// A case's input: "input" (UTF-8) or "input_hex" (bytes that are not valid UTF-8).
inline std::string reference_input(const nlohmann::json& c) {
  if (c.contains("input")) return c.at("input").get<std::string>();
  return from_hex(c.at("input_hex").get<std::string>());
}

}  // namespace ggufd::test
