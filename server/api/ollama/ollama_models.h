// What Ollama's model endpoints (GET /api/tags, GET /api/ps, POST /api/show) say about a model,
// read from its GGUF file: details (format, family, parameter size, quantization), model_info
// (the file's metadata, Ollama's flat keys), capabilities, and a modelfile-like text.
// Coroutine-free (server/api); the handlers (server/handlers/ollama_models.cpp) add the registry's
// names, sizes and times.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gguf/file_set.h"
#include "server/api/app.h"
#include "server/api/file_facts.h"

namespace server {

// {"parent_model": "", "format": "gguf", "family": general.architecture, "families": [it],
// "parameter_size": general.size_label or the count ("260K", "0.6B"), "quantization_level": the
// file type ("Q4_K_M", "F16"; without general.file_type, the type of most of the weights)};
// "unknown" for what the file does not say.
nlohmann::json ollama_details(const FileFacts& facts);

// The metadata as "key": value, plus general.parameter_count (facts.n_params). Arrays (the
// vocabulary, merges) are null unless `verbose`, as in Ollama.
nlohmann::json ollama_model_info(const gguf::FileSet& files, const FileFacts& facts, bool verbose);

// What the model can do, in Ollama's names: "completion" (it generates), "tools" (every
// generating model: tools go through its template or the generic format), "thinking" (its
// template has think blocks), "embedding" (it pools). With `app` (the model is loaded) from what
// was found when it loaded; without, from the file (facts.generates, the pooling type, the
// template's text).
std::vector<std::string> ollama_capabilities(const gguf::FileSet& files, const FileFacts& facts, const App* app);

// The body of POST /api/show for the model `path`: license, modelfile (FROM, TEMPLATE, PARAMETER
// lines), parameters (the sampling defaults and the context, "name value" lines), template (the
// chat template in use, else the file's), details, model_info, capabilities, modified_at.
nlohmann::json ollama_show_json(const gguf::FileSet& files, const std::string& path, int64_t modified,
                                const App* app, bool verbose);

}  // namespace server
