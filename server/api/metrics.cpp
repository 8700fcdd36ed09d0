#include "server/api/metrics.h"

#include <algorithm>
#include <cstdio>

namespace server {

namespace {

std::string number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

}  // namespace

std::string metric_label(const std::string& v) {
  std::string s;
  for (char c : v) {
    if (c == '\\' || c == '"') s += '\\';
    if (c == '\n') {
      s += "\\n";
      continue;
    }
    s += c;
  }
  return s;
}

MetricsPage::Family& MetricsPage::family(const char* name, const char* type, const char* help) {
  for (Family& f : families_) {
    if (f.name == name) return f;
  }
  families_.push_back({name, std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n", ""});
  return families_.back();
}

void MetricsPage::sample(const char* name, const char* type, const char* help, const std::string& labels, double value) {
  Family& f = family(name, type, help);
  f.samples += name + (labels.empty() ? "" : "{" + labels + "}") + " " + number(value) + "\n";
}

void MetricsPage::histogram(const char* name, const char* help, const std::string& labels, const Histogram& h) {
  h.render(name, labels, family(name, "histogram", help).samples);
}

std::string MetricsPage::text() const {
  std::string out;
  for (const Family& f : families_) out += f.header + f.samples;
  return out;
}

namespace {

// The prefix cache shared by all slots (all zero when it is off: --cache-ram 0, a sliding-window
// ring, an encoder).
void render_prefix_cache(const engine::PrefixCacheStats& p, const std::string& labels, MetricsPage& page) {
  page.sample("ggufd_prefix_cache_lookups_total", "counter", "Requests that looked for a shared cached prompt prefix.", labels, static_cast<double>(p.lookups));
  page.sample("ggufd_prefix_cache_hit_tokens_total", "counter", "Prompt tokens taken from shared cached blocks instead of being computed.", labels, static_cast<double>(p.hit_tokens));
  page.sample("ggufd_prefix_cache_evictions_total", "counter", "Cached prefix blocks evicted to make room.", labels, static_cast<double>(p.evictions));
  page.sample("ggufd_prefix_cache_blocks", "gauge", "Cached prefix blocks (in use by slots or not).", labels, static_cast<double>(p.blocks));
  page.sample("ggufd_prefix_cache_bytes", "gauge", "KV memory of the cached prefix blocks.", labels, static_cast<double>(p.bytes));
  page.sample("ggufd_prefix_cache_snapshot_blocks", "gauge", "Cached blocks a hybrid model can resume from (a snapshot of its recurrent state at their end).", labels, static_cast<double>(p.snapshot_blocks));
  // --cache-dir (zero without it)
  page.sample("ggufd_prefix_cache_disk_blocks", "gauge", "Prefix blocks of this model kept on disk (--cache-dir).", labels, static_cast<double>(p.disk.files));
  page.sample("ggufd_prefix_cache_disk_bytes", "gauge", "Size of those block files.", labels, static_cast<double>(p.disk.bytes));
  page.sample("ggufd_prefix_cache_disk_loaded_total", "counter", "Prefix blocks read back from disk into the cache.", labels, static_cast<double>(p.disk.loaded));
  page.sample("ggufd_prefix_cache_disk_saved_total", "counter", "Prefix blocks written to disk.", labels, static_cast<double>(p.disk.saved));
  page.sample("ggufd_prefix_cache_disk_rejected_total", "counter", "Block files ignored (and removed) as corrupt, foreign or unreadable.", labels, static_cast<double>(p.disk.rejected));
}

// Speculative decoding: drafts verified and accepted (acceptance rate: their ratio), and the steps
// --spec auto decoded plainly. Zero when off.
void render_speculation(const engine::SpecStats& s, const std::string& labels, MetricsPage& page) {
  page.sample("ggufd_spec_draft_tokens_total", "counter", "Draft tokens verified by the model (speculative decoding: n-gram, draft model or mtp).", labels, static_cast<double>(s.draft_tokens));
  page.sample("ggufd_spec_accepted_tokens_total", "counter", "Draft tokens accepted: sampled by the request too, and emitted without a step of their own.", labels, static_cast<double>(s.accepted_tokens));
  page.sample("ggufd_spec_paused_steps_total", "counter", "Slot steps decoded without drafts because --spec auto found that slot's drafts did not pay.", labels, static_cast<double>(s.paused_steps));
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  sum_ += value;
  ++count_;
}

void Histogram::render(const std::string& name, const std::string& labels, std::string& out) const {
  const std::string first = labels.empty() ? "" : labels + ",";
  const std::string braced = labels.empty() ? "" : "{" + labels + "}";
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{" + first + "le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{" + first + "le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum" + braced + " " + number(sum_) + "\n";
  out += name + "_count" + braced + " " + std::to_string(count_) + "\n";
}

Metrics::Metrics()
    : ttft_({0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}),
      token_latency_({0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2}),
      request_duration_({0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300}) {}

void Metrics::count_request(const std::string& endpoint, int status) {
  engine::MutexLock lock(mutex_);
  ++requests_[{endpoint, status}];
}

void Metrics::count_tokens(int64_t prompt, int64_t generated) {
  engine::MutexLock lock(mutex_);
  prompt_tokens_ += static_cast<uint64_t>(std::max<int64_t>(prompt, 0));
  generated_tokens_ += static_cast<uint64_t>(std::max<int64_t>(generated, 0));
}

void Metrics::count_embeddings(int64_t inputs, int64_t tokens) {
  engine::MutexLock lock(mutex_);
  embedding_inputs_ += static_cast<uint64_t>(std::max<int64_t>(inputs, 0));
  embedding_tokens_ += static_cast<uint64_t>(std::max<int64_t>(tokens, 0));
}

void Metrics::observe_ttft(double seconds) {
  engine::MutexLock lock(mutex_);
  ttft_.observe(seconds);
}

void Metrics::observe_token_latency(double seconds) {
  engine::MutexLock lock(mutex_);
  token_latency_.observe(seconds);
}

void Metrics::observe_request_duration(double seconds) {
  engine::MutexLock lock(mutex_);
  request_duration_.observe(seconds);
}

namespace {

// The model server protocol of the Kubernetes Gateway API Inference Extension (the endpoint picker
// of the inference gateway and llm-d) under the names its picker reads by default, vLLM's, with
// vLLM's model_name label: requests queued and running, and the KV cache's use in [0, 1]. As in
// vLLM, what no running request uses counts as free (cached prefix blocks, an idle slot's last
// conversation: both give their cells up when they are needed), so the fraction is the positions
// the running requests hold over the cache's cells.
void render_gateway(const engine::SchedulerStats& g, const std::string& model, MetricsPage& page) {
  const std::string labels = "model_name=\"" + metric_label(model) + "\"";
  page.sample("vllm:num_requests_waiting", "gauge", "Requests waiting for a slot (Gateway API Inference Extension).",
              labels, static_cast<double>(g.queued));
  page.sample("vllm:num_requests_running", "gauge", "Requests in a slot (Gateway API Inference Extension).", labels,
              static_cast<double>(g.active_slots));
  const int64_t held = g.kv_positions_running;
  page.sample("vllm:kv_cache_usage_perc", "gauge",
              "Fraction of the KV cache held by requests, 1 = full (Gateway API Inference Extension).", labels,
              g.kv_cells_total > 0 ? std::min(1.0, static_cast<double>(held) / static_cast<double>(g.kv_cells_total)) : 0.0);
  // vLLM's info gauge of its cache, from whose labels the picker sizes its estimate of what prefixes
  // each pod holds (blocks of block_size tokens, num_gpu_blocks of them): ggufd's shared prefix
  // blocks and how many the KV cache holds. Absent where prefixes are not shared (encoders).
  if (const int64_t block = g.prefix_cache.block_tokens; block > 0) {
    page.sample("vllm:cache_config_info", "gauge",
                "The KV cache's prefix blocks: tokens per block and blocks it holds (Gateway API Inference Extension).",
                labels + ",block_size=\"" + std::to_string(block) + "\",num_gpu_blocks=\"" +
                    std::to_string(g.kv_cells_total / block) + "\"",
                1.0);
  }
}

}  // namespace

void Metrics::render_http(MetricsPage& page) const {
  engine::MutexLock lock(mutex_);
  for (const auto& [key, n] : requests_) {
    page.sample("ggufd_requests_total", "counter", "HTTP requests by endpoint and status.",
                "endpoint=\"" + metric_label(key.first) + "\",status=\"" + std::to_string(key.second) + "\"",
                static_cast<double>(n));
  }
  page.histogram("ggufd_request_duration_seconds", "Whole request time.", "", request_duration_);
}

void Metrics::render_model(MetricsPage& page, const engine::SchedulerStats& g, const std::string& model) const {
  engine::MutexLock lock(mutex_);
  const std::string labels = "model=\"" + metric_label(model) + "\"";
  page.sample("ggufd_prompt_tokens_total", "counter", "Prompt tokens received.", labels, static_cast<double>(prompt_tokens_));
  page.sample("ggufd_generated_tokens_total", "counter", "Tokens generated.", labels, static_cast<double>(generated_tokens_));
  page.sample("ggufd_embedding_inputs_total", "counter", "Inputs embedded or scored (/v1/embeddings, /v1/rerank).",
              labels, static_cast<double>(embedding_inputs_));
  page.sample("ggufd_embedding_tokens_total", "counter", "Tokens of those inputs.", labels,
              static_cast<double>(embedding_tokens_));
  page.sample("ggufd_generation_tokens_per_second", "gauge", "Recent generation throughput.", labels,
              g.generation_tokens_per_second);
  page.sample("ggufd_prompt_tokens_per_second", "gauge", "Recent prompt processing throughput.", labels,
              g.prompt_tokens_per_second);
  page.sample("ggufd_queue_depth", "gauge", "Requests waiting for a slot.", labels, static_cast<double>(g.queued));
  page.sample("ggufd_slots_active", "gauge", "Slots generating or processing a prompt.", labels,
              static_cast<double>(g.active_slots));
  page.sample("ggufd_slots_total", "gauge", "Configured parallel slots.", labels, static_cast<double>(g.total_slots));
  page.sample("ggufd_kv_cache_used_cells", "gauge", "KV-cache cells in use (by slots or cached prefix blocks).", labels,
              static_cast<double>(g.kv_cells_used));
  page.sample("ggufd_kv_cache_total_cells", "gauge", "KV-cache capacity in cells (tokens).", labels,
              static_cast<double>(g.kv_cells_total));
  render_prefix_cache(g.prefix_cache, labels, page);
  render_speculation(g.spec, labels, page);
  render_gateway(g, model, page);
  page.histogram("ggufd_time_to_first_token_seconds", "Time to first generated token.", labels, ttft_);
  page.histogram("ggufd_inter_token_latency_seconds", "Time between generated tokens.", labels, token_latency_);
}

}  // namespace server
