// The bundled demo model: found next to the binary, else generated once into a cache directory.
#include "tools/ggufd/demo_model.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <vector>

#include "tools/synth/synth.h"

namespace ggufd {

namespace {

namespace fs = std::filesystem;
constexpr const char* kDemoFile = "ggufd-demo.gguf";

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// Where a generated demo may live, in order of preference.
std::vector<fs::path> cache_dirs() {
  std::vector<fs::path> dirs;
  if (const std::string xdg = env("XDG_CACHE_HOME"); !xdg.empty()) dirs.push_back(fs::path(xdg) / "ggufd");
  if (const std::string home = env("HOME"); !home.empty()) dirs.push_back(fs::path(home) / ".cache" / "ggufd");
  dirs.push_back(fs::temp_directory_path() / ("ggufd-" + std::to_string(::getuid())));
  return dirs;
}

}  // namespace

std::string demo_model_path() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path beside = exe.parent_path() / kDemoFile;
    if (fs::is_regular_file(beside, ec)) return beside.string();
  }
  std::string errors;
  for (const fs::path& dir : cache_dirs()) {
    const fs::path path = dir / kDemoFile;
    if (fs::is_regular_file(path, ec)) return path.string();
    try {
      fs::create_directories(dir);
      engine::synth::write_model(engine::synth::demo_options(), path.string());
      return path.string();
    } catch (const std::exception& e) {
      errors += std::string(errors.empty() ? "" : "; ") + e.what();
    }
  }
  throw std::runtime_error("cannot write the demo model: " + errors);
}

}  // namespace ggufd
