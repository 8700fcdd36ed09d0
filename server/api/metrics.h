// Server metrics in Prometheus' text exposition format (our own, no client library).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/scheduler.h"
#include "engine/runtime/thread_annotations.h"

namespace server {

// A cumulative histogram with fixed upper bounds (seconds).
class Histogram {
 public:
  explicit Histogram(std::vector<double> bounds);
  void observe(double value);
  // Appends the _bucket/_sum/_count lines of `name`; `labels` ('model="x"' or empty) go first.
  void render(const std::string& name, const std::string& labels, std::string& out) const;

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // one per bound, plus +Inf
  double sum_ = 0;
  uint64_t count_ = 0;
};

// A Prometheus exposition being built: samples of one metric family (from many models) stay
// together under one HELP / TYPE header, in the order the families first appear.
class MetricsPage {
 public:
  // One sample; `labels` is the text inside the braces ('model="a",le="1"'), empty for none.
  void sample(const char* name, const char* type, const char* help, const std::string& labels, double value);
  // The lines of a histogram.
  void histogram(const char* name, const char* help, const std::string& labels, const Histogram& h);
  std::string text() const;

 private:
  struct Family {
    std::string name, header, samples;
  };
  Family& family(const char* name, const char* type, const char* help);
  std::vector<Family> families_;
};

// A label's value escaped as the exposition format requires.
std::string metric_label(const std::string& v);

// Counters and histograms of the HTTP side: one per model (tokens, embeddings, latencies) and
// one for the server (requests by endpoint and status, their durations).
// Thread-safety: every method may be called from any thread (one mutex; updates are per request
// or per token, far from the hot path of the model).
class Metrics {
 public:
  Metrics();

  void count_request(const std::string& endpoint, int status);
  void count_tokens(int64_t prompt, int64_t generated);
  // One embedding or rerank request's inputs and their tokens.
  void count_embeddings(int64_t inputs, int64_t tokens);
  void observe_ttft(double seconds);
  void observe_token_latency(double seconds);
  void observe_request_duration(double seconds);

  // The server's series: requests by endpoint and status, their durations.
  void render_http(MetricsPage& page) const;
  // One model's series labelled model="<id>": its counters here and `engine`'s gauges (queue,
  // slots, KV cache, recent throughput, prefix cache, speculation; all zero while not loaded),
  // and the gateway's vLLM-named gauges labelled model_name.
  void render_model(MetricsPage& page, const engine::SchedulerStats& engine, const std::string& model) const;

 private:
  mutable engine::Mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_ GGUFD_GUARDED_BY(mutex_);  // (endpoint, status) -> count
  uint64_t prompt_tokens_ GGUFD_GUARDED_BY(mutex_) = 0;
  uint64_t generated_tokens_ GGUFD_GUARDED_BY(mutex_) = 0;
  uint64_t embedding_inputs_ GGUFD_GUARDED_BY(mutex_) = 0;
  uint64_t embedding_tokens_ GGUFD_GUARDED_BY(mutex_) = 0;
  Histogram ttft_ GGUFD_GUARDED_BY(mutex_);
  Histogram token_latency_ GGUFD_GUARDED_BY(mutex_);
  Histogram request_duration_ GGUFD_GUARDED_BY(mutex_);
};

}  // namespace server
