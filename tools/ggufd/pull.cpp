// `ggufd pull SPEC`, `ggufd list`, `ggufd rm ID`: the model cache from the command line, over
// the hub library (server/hub/hub.h). The progress bar is drawn only when stderr is a terminal.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <ctime>
#include <memory>
#include <string>

#include "server/hub/hub.h"
#include "tools/ggufd/commands.h"

namespace ggufd {

namespace {

struct HubCliOptions {
  std::string spec;
  std::string cache_dir;
  std::string ca_file;
  bool offline = false;
  bool no_mmproj = false;
};

void add_cache_option(CLI::App& app, HubCliOptions& o) {
  app.add_option("--hub-cache", o.cache_dir, "the download cache (default $GGUFD_CACHE, else ~/.cache/ggufd; serve's --hub-cache)");
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) {
    b /= 1024;
    ++u;
  }
  char out[32];
  std::snprintf(out, sizeof out, u == 0 ? "%.0f %s" : "%.1f %s", b, units[u]);
  return out;
}

// Draws one line per file on a terminal: name, bytes, rate, ETA; plain lines otherwise.
class ProgressPrinter {
 public:
  ProgressPrinter() : tty_(::isatty(STDERR_FILENO) == 1) {}

  void operator()(const hub::Progress& p) {
    if (p.phase == hub::Phase::kDownloading) {
      if (p.file != file_) start(p);
      if (tty_) bar(p);
      return;
    }
    if (tty_ && !file_.empty()) std::fputc('\n', stderr);
    file_.clear();
    if (p.phase == hub::Phase::kResolving) std::fprintf(stderr, "resolving %s\n", p.file.c_str());
    if (p.phase == hub::Phase::kVerifying) std::fprintf(stderr, "verifying %s\n", p.file.c_str());
  }

 private:
  using Clock = std::chrono::steady_clock;

  void start(const hub::Progress& p) {
    file_ = p.file;
    started_ = Clock::now();
    first_bytes_ = p.bytes_done;
    if (!tty_) std::fprintf(stderr, "downloading %s (%s)\n", p.file.c_str(), human_bytes(double(p.bytes_total)).c_str());
  }

  void bar(const hub::Progress& p) {
    const double secs = std::chrono::duration<double>(Clock::now() - started_).count();
    const double rate = secs > 0.2 ? double(p.bytes_done - first_bytes_) / secs : 0;
    const double frac = p.bytes_total ? double(p.bytes_done) / double(p.bytes_total) : 0;
    char bar[31];
    const int filled = int(frac * 30);
    for (int i = 0; i < 30; ++i) bar[i] = i < filled ? '#' : '.';
    bar[30] = '\0';
    std::string eta = "--:--";
    if (rate > 0 && p.bytes_total > p.bytes_done) {
      const long s = long(double(p.bytes_total - p.bytes_done) / rate);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
      eta = buf;
    }
    std::fprintf(stderr, "\r%-28.28s [%s] %s / %s  %s/s  ETA %s\x1b[K", p.file.c_str(), bar,
                 human_bytes(double(p.bytes_done)).c_str(), human_bytes(double(p.bytes_total)).c_str(),
                 human_bytes(rate).c_str(), eta.c_str());
  }

  bool tty_;
  std::string file_;
  Clock::time_point started_;
  uint64_t first_bytes_ = 0;
};

}  // namespace

hub::PullResult pull_with_progress(const std::string& spec, const hub::PullOptions& options) {
  ProgressPrinter printer;
  return hub::pull(spec, options, [&](const hub::Progress& p) { printer(p); });
}

namespace {

int run_pull(const HubCliOptions& o) {
  hub::PullOptions options;
  options.cache_dir = o.cache_dir;
  options.ca_file = o.ca_file;
  options.offline = o.offline;
  options.mmproj = !o.no_mmproj;
  const hub::PullResult r = pull_with_progress(o.spec, options);
  std::printf("%s\n  model  %s\n", r.id.c_str(), r.model_path.c_str());
  if (r.parts.size() > 1) std::printf("  parts  %zu\n", r.parts.size());
  if (!r.mmproj_path.empty()) std::printf("  mmproj %s\n", r.mmproj_path.c_str());
  std::printf("  size   %s\n", human_bytes(double(r.bytes)).c_str());
  return 0;
}

int run_list(const HubCliOptions& o) {
  const hub::Cache cache(o.cache_dir);
  const std::vector<hub::CacheEntry> entries = cache.list();
  if (entries.empty()) {
    std::fprintf(stderr, "no models in %s\n", cache.root().c_str());
    return 0;
  }
  std::printf("%-48s %-10s %5s %10s  %s\n", "ID", "QUANT", "FILES", "SIZE", "PATH");
  for (const hub::CacheEntry& e : entries) {
    std::printf("%-48s %-10s %5zu %10s  %s\n", e.id.c_str(), e.quant.c_str(), e.files.size(),
                human_bytes(double(e.bytes)).c_str(), e.path.c_str());
  }
  return 0;
}

}  // namespace

Command add_pull(CLI::App& app) {
  auto o = std::make_shared<HubCliOptions>();
  app.add_option("spec", o->spec, "org/repo[:QUANT] (default quant Q4_K_M), hf://org/repo/file.gguf or an https URL")
      ->required();
  add_cache_option(app, *o);
  app.add_option("--ca-file", o->ca_file, "trust the CAs in this PEM file (private mirrors, tests)")
      ->check(CLI::ExistingFile);
  app.add_flag("--offline", o->offline, "use the cache only; fail when the model is not there");
  app.add_flag("--no-mmproj", o->no_mmproj, "do not fetch the repo's multimodal projector");
  app.footer("Environment: GGUFD_CACHE, HF_TOKEN (gated repos), HF_ENDPOINT (a mirror), HTTPS_PROXY, NO_PROXY.");
  return [o] { return run_pull(*o); };
}

Command add_list(CLI::App& app) {
  auto o = std::make_shared<HubCliOptions>();
  add_cache_option(app, *o);
  return [o] { return run_list(*o); };
}

Command add_rm(CLI::App& app) {
  auto o = std::make_shared<HubCliOptions>();
  app.add_option("id", o->spec, "the model's id as `ggufd list` shows it")->required();
  add_cache_option(app, *o);
  return [o] {
    hub::Cache(o->cache_dir).remove(o->spec);
    std::printf("removed %s\n", o->spec.c_str());
    return 0;
  };
}

}  // namespace ggufd
