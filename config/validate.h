// Checks that need more than one value or the file system; run by finalize() after assignment.
#pragma once

#include <map>
#include <string>

#include "config/serve_config.h"

namespace config {

// Appends the keys in http.api_key_file (one per line; blank lines and # comments skipped) to
// http.api_keys, skipping duplicates. Throws std::invalid_argument "<label>: ..." if the file
// cannot be read or holds no key (an empty key file must not silently turn authentication off).
void merge_api_key_file(HttpConfig& http, const std::string& label);

// Model, template and CA files exist, --models-dir is a directory, --hf is org/repo[:QUANT] and
// not given with --model, host is non-empty, keys have no blanks, CORS origins are
// origins. `labels` maps setting name -> label for messages. Throws std::invalid_argument.
void validate(const ServeConfig& cfg, const std::map<std::string, std::string>& labels);

}  // namespace config
