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

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

void sample(std::string& out, const std::string& name, double value) {
  out += name + " " + number(value) + "\n";
}

// Label values are route patterns chosen by us, but escape anyway as the format requires.
std::string label(const std::string& v) {
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

// The prefix cache shared by all slots (all zero when it is off: --cache-ram 0, a sliding-window
// ring, an encoder).
void render_prefix_cache(const engine::PrefixCacheStats& p, std::string& out) {
  header(out, "ggufd_prefix_cache_lookups_total", "counter", "Requests that looked for a shared cached prompt prefix.");
  sample(out, "ggufd_prefix_cache_lookups_total", static_cast<double>(p.lookups));
  header(out, "ggufd_prefix_cache_hit_tokens_total", "counter",
         "Prompt tokens taken from shared cached blocks instead of being computed.");
  sample(out, "ggufd_prefix_cache_hit_tokens_total", static_cast<double>(p.hit_tokens));
  header(out, "ggufd_prefix_cache_evictions_total", "counter", "Cached prefix blocks evicted to make room.");
  sample(out, "ggufd_prefix_cache_evictions_total", static_cast<double>(p.evictions));
  header(out, "ggufd_prefix_cache_blocks", "gauge", "Cached prefix blocks (in use by slots or not).");
  sample(out, "ggufd_prefix_cache_blocks", static_cast<double>(p.blocks));
  header(out, "ggufd_prefix_cache_bytes", "gauge", "KV memory of the cached prefix blocks.");
  sample(out, "ggufd_prefix_cache_bytes", static_cast<double>(p.bytes));
  header(out, "ggufd_prefix_cache_snapshot_blocks", "gauge",
         "Cached blocks a hybrid model can resume from (a snapshot of its recurrent state at their end).");
  sample(out, "ggufd_prefix_cache_snapshot_blocks", static_cast<double>(p.snapshot_blocks));
  // --cache-dir (zero without it)
  header(out, "ggufd_prefix_cache_disk_blocks", "gauge", "Prefix blocks of this model kept on disk (--cache-dir).");
  sample(out, "ggufd_prefix_cache_disk_blocks", static_cast<double>(p.disk.files));
  header(out, "ggufd_prefix_cache_disk_bytes", "gauge", "Size of those block files.");
  sample(out, "ggufd_prefix_cache_disk_bytes", static_cast<double>(p.disk.bytes));
  header(out, "ggufd_prefix_cache_disk_loaded_total", "counter", "Prefix blocks read back from disk into the cache.");
  sample(out, "ggufd_prefix_cache_disk_loaded_total", static_cast<double>(p.disk.loaded));
  header(out, "ggufd_prefix_cache_disk_saved_total", "counter", "Prefix blocks written to disk.");
  sample(out, "ggufd_prefix_cache_disk_saved_total", static_cast<double>(p.disk.saved));
  header(out, "ggufd_prefix_cache_disk_rejected_total", "counter",
         "Block files ignored (and removed) as corrupt, foreign or unreadable.");
  sample(out, "ggufd_prefix_cache_disk_rejected_total", static_cast<double>(p.disk.rejected));
}

// Speculative decoding: drafts verified and accepted (acceptance rate: their ratio), and the steps
// --spec auto decoded plainly. Zero when off.
void render_speculation(const engine::SpecStats& s, std::string& out) {
  header(out, "ggufd_spec_draft_tokens_total", "counter",
         "Draft tokens verified by the model (speculative decoding: n-gram, draft model or mtp).");
  sample(out, "ggufd_spec_draft_tokens_total", static_cast<double>(s.draft_tokens));
  header(out, "ggufd_spec_accepted_tokens_total", "counter",
         "Draft tokens accepted: sampled by the request too, and emitted without a step of their own.");
  sample(out, "ggufd_spec_accepted_tokens_total", static_cast<double>(s.accepted_tokens));
  header(out, "ggufd_spec_paused_steps_total", "counter",
         "Slot steps decoded without drafts because --spec auto found that slot's drafts did not pay.");
  sample(out, "ggufd_spec_paused_steps_total", static_cast<double>(s.paused_steps));
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

void Histogram::render(const std::string& name, std::string& out) const {
  uint64_t cumulative = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cumulative += counts_[i];
    out += name + "_bucket{le=\"" + number(bounds_[i]) + "\"} " + std::to_string(cumulative) + "\n";
  }
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  sample(out, name + "_sum", sum_);
  out += name + "_count " + std::to_string(count_) + "\n";
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
void render_gateway(const engine::SchedulerStats& g, const std::string& model, std::string& out) {
  const std::string labels = "{model_name=\"" + label(model) + "\"}";
  header(out, "vllm:num_requests_waiting", "gauge", "Requests waiting for a slot (Gateway API Inference Extension).");
  sample(out, "vllm:num_requests_waiting" + labels, static_cast<double>(g.queued));
  header(out, "vllm:num_requests_running", "gauge", "Requests in a slot (Gateway API Inference Extension).");
  sample(out, "vllm:num_requests_running" + labels, static_cast<double>(g.active_slots));
  const int64_t held = g.kv_positions_running;
  header(out, "vllm:kv_cache_usage_perc", "gauge",
         "Fraction of the KV cache held by requests, 1 = full (Gateway API Inference Extension).");
  sample(out, "vllm:kv_cache_usage_perc" + labels,
         g.kv_cells_total > 0 ? std::min(1.0, static_cast<double>(held) / static_cast<double>(g.kv_cells_total)) : 0.0);
}

}  // namespace

std::string Metrics::render(const engine::SchedulerStats& g, const std::string& model) const {
  engine::MutexLock lock(mutex_);
  std::string out;
  header(out, "ggufd_requests_total", "counter", "HTTP requests by endpoint and status.");
  for (const auto& [key, n] : requests_) {
    out += "ggufd_requests_total{endpoint=\"" + label(key.first) + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  }
  header(out, "ggufd_prompt_tokens_total", "counter", "Prompt tokens received.");
  sample(out, "ggufd_prompt_tokens_total", static_cast<double>(prompt_tokens_));
  header(out, "ggufd_generated_tokens_total", "counter", "Tokens generated.");
  sample(out, "ggufd_generated_tokens_total", static_cast<double>(generated_tokens_));
  header(out, "ggufd_embedding_inputs_total", "counter", "Inputs embedded or scored (/v1/embeddings, /v1/rerank).");
  sample(out, "ggufd_embedding_inputs_total", static_cast<double>(embedding_inputs_));
  header(out, "ggufd_embedding_tokens_total", "counter", "Tokens of those inputs.");
  sample(out, "ggufd_embedding_tokens_total", static_cast<double>(embedding_tokens_));
  header(out, "ggufd_generation_tokens_per_second", "gauge", "Recent generation throughput.");
  sample(out, "ggufd_generation_tokens_per_second", g.generation_tokens_per_second);
  header(out, "ggufd_prompt_tokens_per_second", "gauge", "Recent prompt processing throughput.");
  sample(out, "ggufd_prompt_tokens_per_second", g.prompt_tokens_per_second);
  header(out, "ggufd_queue_depth", "gauge", "Requests waiting for a slot.");
  sample(out, "ggufd_queue_depth", static_cast<double>(g.queued));
  header(out, "ggufd_slots_active", "gauge", "Slots generating or processing a prompt.");
  sample(out, "ggufd_slots_active", static_cast<double>(g.active_slots));
  header(out, "ggufd_slots_total", "gauge", "Configured parallel slots.");
  sample(out, "ggufd_slots_total", static_cast<double>(g.total_slots));
  header(out, "ggufd_kv_cache_used_cells", "gauge", "KV-cache cells in use (by slots or cached prefix blocks).");
  sample(out, "ggufd_kv_cache_used_cells", static_cast<double>(g.kv_cells_used));
  header(out, "ggufd_kv_cache_total_cells", "gauge", "KV-cache capacity in cells (tokens).");
  sample(out, "ggufd_kv_cache_total_cells", static_cast<double>(g.kv_cells_total));
  render_prefix_cache(g.prefix_cache, out);
  render_speculation(g.spec, out);
  render_gateway(g, model, out);
  header(out, "ggufd_time_to_first_token_seconds", "histogram", "Time to first generated token.");
  ttft_.render("ggufd_time_to_first_token_seconds", out);
  header(out, "ggufd_inter_token_latency_seconds", "histogram", "Time between generated tokens.");
  token_latency_.render("ggufd_inter_token_latency_seconds", out);
  header(out, "ggufd_request_duration_seconds", "histogram", "Whole request time.");
  request_duration_.render("ggufd_request_duration_seconds", out);
  return out;
}

}  // namespace server
