// The whole server as one object: loads the model, runs the scheduler and the HTTP server, and
// shuts down gracefully. `ggufd serve` and the integration tests both use it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/sampler.h"
#include "engine/scheduler.h"
#include "server/http_server.h"

namespace server {

struct ServiceOptions {
  std::string model_path;
  std::string alias;                  // model id; default: the file name
  std::string chat_template;          // template text overriding the model's; empty: the model's
  std::string chat_template_origin;   // for /props: where the override came from
  HttpOptions http;
  engine::SchedulerOptions engine;
  engine::SamplingParams sampling_defaults;
  int32_t default_max_tokens = 16;
  int64_t request_timeout_s = 600;
  int shutdown_grace_s = 30;
  bool metrics = true;
  int io_threads = 1;
};

// Ownership: owns the io_context and its threads, the loaded model, tokenizer, chat template,
// scheduler and HTTP server. Thread-safety: start/shutdown/wait from one controlling thread;
// shutdown() may also come from a signal (it only posts work to the io_context).
class Service {
 public:
  explicit Service(ServiceOptions options);
  ~Service();

  // Binds the port and starts serving (/health answers 503 while the model loads in the
  // background). Throws std::system_error when the port can't be bound.
  void start();
  // Blocks until the model is loaded (true) or failed to load (false; see load_error()).
  bool wait_ready();
  const std::string& load_error() const;
  uint16_t port() const;
  // Stops accepting, lets in-flight requests finish for up to shutdown_grace_s, cancels the rest,
  // then stops. Returns at once; wait() blocks until done.
  void shutdown();
  // SIGINT/SIGTERM call shutdown().
  void handle_signals();
  // Blocks until the service has stopped; returns 0, or 1 if the model failed to load.
  int wait();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace server
