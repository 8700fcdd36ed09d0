// The bundled demo model: a tiny random-weight llama with our own byte-level BPE vocabulary,
// written by `ggufd synth --demo` at build time (no third-party weights are shipped).
#pragma once

#include <string>

namespace ggufd {

// Path of the demo GGUF: next to the ggufd binary (ggufd-demo.gguf) when the build made it;
// otherwise it is generated on first use into $XDG_CACHE_HOME/ggufd (or ~/.cache/ggufd, or /tmp).
std::string demo_model_path();

}  // namespace ggufd
