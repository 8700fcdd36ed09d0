// GGUF header, metadata and tensor table as JSON: `ggufd inspect --json` and the metadata endpoint.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>

#include "gguf/file.h"
#include "gguf/file_set.h"

namespace server {

// Arrays longer than this are summarized unless the caller asks for everything.
inline constexpr size_t kArraySummaryLimit = 32;

// A metadata value as plain JSON. When `full` is false, arrays longer than kArraySummaryLimit
// become {"type":"array","element_type":T,"length":N,"head":[first kArraySummaryLimit items]}.
nlohmann::json value_to_json(const gguf::Value& v, bool full);

// "UINT32", "STRING", "ARRAY[STRING]", "ARRAY[ARRAY]".
std::string value_type_label(const gguf::Value& v);

// {"file","header":{...},"metadata":{key:value},"metadata_types":{key:type},"tensors":[...],
//  "totals":{...},"name":{...}|null,"model":{"supported",architecture and hyperparameters as
//  ggufd reads them | "error"}}
// A split set (gguf/file_set.h): the first part's header (its own tensor_count) and metadata,
// every part's tensors (each
// with its "part", 0-based) and totals over all, and "parts": [{"file","file_size","tensor_count"}].
nlohmann::json file_to_json(const gguf::File& file, bool full);
nlohmann::json file_to_json(const gguf::FileSet& files, bool full);

// Serializes with invalid UTF-8 replaced (GGUF strings are untrusted bytes).
std::string dump(const nlohmann::json& j, int indent = -1);

}  // namespace server
