// One set of defaults: what `ggufd serve` does without flags (config/) is what the libraries do
// when built without options (ServiceOptions, HttpOptions, SchedulerOptions, the sampling rules).
#include <gtest/gtest.h>

#include "config/serve_config.h"
#include "config/settings.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/sampler.h"
#include "server/service.h"

namespace ggufd::test {
namespace {

TEST(Defaults, ConfigDefaultsAreTheLibrariesDefaults) {
  const config::ServeConfig c;
  const server::ServiceOptions s;
  EXPECT_EQ(c.http.host, s.http.host);
  EXPECT_EQ(c.http.port, s.http.port);
  EXPECT_EQ(static_cast<size_t>(c.http.body_limit), s.http.body_limit);
  EXPECT_EQ(static_cast<size_t>(c.http.header_limit), s.http.header_limit);
  EXPECT_EQ(static_cast<size_t>(c.http.tokenize_limit), s.tokenize_limit);
  EXPECT_EQ(c.http.max_json_depth, s.max_json_depth);
  EXPECT_EQ(c.http.strict_api, s.strict_api);
  EXPECT_EQ(c.http.keep_billing_header, s.keep_billing_header);
  EXPECT_EQ(c.sampling.reasoning_effort, s.model.reasoning_effort);
  EXPECT_EQ(c.http.header_timeout, s.http.header_timeout.count());
  EXPECT_EQ(c.http.read_timeout, s.http.read_timeout.count());
  EXPECT_EQ(c.http.idle_timeout, s.http.idle_timeout.count());
  EXPECT_EQ(c.http.max_connections, s.http.max_connections);
  EXPECT_EQ(c.http.request_timeout, s.request_timeout_s);
  EXPECT_EQ(c.http.shutdown_grace, s.shutdown_grace_s);

  EXPECT_EQ(c.engine.threads, s.model.engine.n_threads);
  EXPECT_EQ(c.engine.ctx_size, s.model.engine.n_ctx);
  EXPECT_EQ(c.engine.parallel, s.model.engine.n_slots);
  EXPECT_EQ(c.engine.queue_limit, s.model.engine.max_queue);
  EXPECT_EQ(c.engine.prefill_chunk, s.model.engine.prefill_chunk);
  EXPECT_EQ(engine::kv_type_from_name(c.engine.kv_type), s.model.engine.kv_type);
  EXPECT_EQ(int64_t{c.engine.cache_ram} << 20, s.model.engine.prefix_cache_bytes);
  EXPECT_EQ(c.engine.cache_dir, s.model.engine.prefix_store.dir);
  EXPECT_EQ(uint64_t(c.engine.cache_dir_size) << 20, s.model.engine.prefix_store.max_bytes);
  EXPECT_EQ(c.model.draft, s.model.draft_model_path);
  EXPECT_EQ(c.engine.spec, "auto");  // without --model-draft: the scheduler's default, s.model.engine.spec
  EXPECT_EQ(c.engine.draft_max, s.model.engine.draft_max);
  EXPECT_EQ(c.engine.draft_min, s.model.engine.draft_min);

  EXPECT_FLOAT_EQ(static_cast<float>(c.sampling.temperature), s.model.sampling_defaults.temperature);
  EXPECT_FLOAT_EQ(static_cast<float>(c.sampling.top_p), s.model.sampling_defaults.top_p);
  EXPECT_EQ(c.sampling.top_k, s.model.sampling_defaults.top_k);
  EXPECT_FLOAT_EQ(static_cast<float>(c.sampling.min_p), s.model.sampling_defaults.min_p);
  EXPECT_FLOAT_EQ(static_cast<float>(c.sampling.repeat_penalty), s.model.sampling_defaults.repeat_penalty);
  EXPECT_EQ(c.sampling.max_tokens, s.model.max_tokens);
  EXPECT_EQ(c.log.metrics, s.metrics);
}

// --kv-type accepts exactly the cache types the engine has.
TEST(Defaults, KvTypeChoicesAreTheEngines) {
  config::ServeConfig c;
  for (const config::Setting& s : config::settings_of(c)) {
    if (s.name == "kv-type") {
      EXPECT_EQ(s.choices, engine::kv_type_names());
      return;
    }
  }
  FAIL() << "no kv-type setting";
}

}  // namespace
}  // namespace ggufd::test
