// Subcommands of the ggufd binary. Each registers its options on a CLI11 app and returns the
// function to run once arguments are parsed. The function's result is the process exit status.
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <string>

#include "server/hub/hub.h"

namespace ggufd {

using Command = std::function<int()>;

Command add_inspect(CLI::App& app);
Command add_run(CLI::App& app);
Command add_logits(CLI::App& app);
Command add_tokenize(CLI::App& app);
Command add_detokenize(CLI::App& app);
Command add_synth(CLI::App& app);
Command add_serve(CLI::App& app);
Command add_template(CLI::App& app);
Command add_health(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_pull(CLI::App& app);
Command add_list(CLI::App& app);
Command add_rm(CLI::App& app);

// hub::pull with the progress bar of `ggufd pull` on a terminal (serve's --hf uses it too).
hub::PullResult pull_with_progress(const std::string& spec, const hub::PullOptions& options);

}  // namespace ggufd
