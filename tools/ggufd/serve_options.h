// `ggufd serve`'s settings (config::ServeConfig, after config::finalize) -> server::ServiceOptions:
// the one place where the settings table's rows become the server's options. Rows of Scope kModel
// and kModelId become a server::ModelOptions (model_options); kServer rows the rest.
#pragma once

#include <string>
#include <vector>

#include "config/serve_config.h"
#include "server/service.h"

namespace ggufd {

// One model's options from a configuration holding that model's rows (the command line's alone,
// or config::apply_preset's), with `settings` = every per-model row as (name, text) for /props.
// Reads --chat-template-file (throws std::runtime_error naming it when it can't).
server::ModelOptions model_options(const config::ServeConfig& cfg);

// The router's options_for(id, path): the command line's model settings under the preset of `id`
// (its [id] section, or the one whose alias is `id`, over ["*"]), with `path` and the alias the
// preset gives, else `id`. Throws what config::apply_preset and model_options throw.
server::ModelOptions model_options_for(const config::ServeConfig& cfg, const std::string& id,
                                       const std::string& path);

// The id of the command line's --model in router mode: --alias, else the file name without .gguf.
std::string command_line_model_id(const config::ServeConfig& cfg);

// Everything ggufd serve passes to server::Service. Router off (no --models-dir, no
// --models-preset): `model` is the command line's, exactly as before the router. Router on:
// router.* from the Router rows, options_for bound to a copy of `cfg`, `model` the command line's
// --model (path empty without one) through options_for, and preset_models the preset sections
// that name a file (model = ...). cached_models and the --hf / hf = ... models (hub_models) are
// left to the caller, which owns the download cache.
server::ServiceOptions service_options(const config::ServeConfig& cfg);

// The download rows (--hub-cache, --offline, --ca-file) as the Hub client's options.
hub::PullOptions pull_options(const config::ServeConfig& cfg);

// A model to fetch from the Hugging Face Hub before it is served: --hf (id: --alias, else the
// spec) and each preset section with hf = ... (id: the section's). After the download, the
// caller makes its options with model_options_for(cfg, id, path).
struct HubModel {
  std::string id;
  std::string spec;  // org/repo[:QUANT]
};
std::vector<HubModel> hub_models(const config::ServeConfig& cfg);

}  // namespace ggufd
