// One set of defaults: what `ggufd serve` does without flags (config/) is what the libraries do
// when built without options (ServiceOptions, HttpOptions, SchedulerOptions, the sampling rules).
#include <gtest/gtest.h>

#include "config/serve_config.h"
#include "config/settings.h"
#include "engine/model/kv_cache.h"
#include "engine/runtime/sampler.h"
#include "server/service.h"
#include "tools/ggufd/serve_options.h"

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
  EXPECT_EQ(c.http.allow_remote_media, s.allow_remote_media);
  EXPECT_EQ(c.http.remote_media_timeout, s.remote_media_timeout_s);
  EXPECT_EQ(c.http.remote_media_private, s.remote_media_private);
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

TEST(Defaults, RouterDefaultsAreTheServers) {
  const config::ServeConfig c;
  const server::RouterOptions r;
  EXPECT_EQ(c.router.enabled(), r.enabled);
  EXPECT_EQ(c.router.models_dir, r.models_dir);
  EXPECT_EQ(c.router.models_max, r.models_max);
  EXPECT_EQ(c.router.models_ram, r.models_ram);
  EXPECT_EQ(c.router.autoload, r.autoload);
  EXPECT_EQ(c.router.sleep_idle_seconds, r.sleep_idle_s);
  EXPECT_EQ(c.router.load_wait, r.load_wait_s);
  EXPECT_EQ(c.model.load_on_startup, server::ModelOptions{}.load_on_startup);
}

// The conversion (tools/ggufd/serve_options.h) of the default settings is the libraries' own
// defaults: no field is lost or scaled wrongly on the way.
TEST(Defaults, ConvertedDefaultsAreTheLibrariesDefaults) {
  const server::ServiceOptions o = ggufd::service_options(config::ServeConfig{});
  const server::ServiceOptions s;
  EXPECT_EQ(o.http.host, s.http.host);
  EXPECT_EQ(o.http.port, s.http.port);
  EXPECT_EQ(o.http.body_limit, s.http.body_limit);
  EXPECT_EQ(o.http.header_limit, s.http.header_limit);
  EXPECT_EQ(o.http.header_timeout, s.http.header_timeout);
  EXPECT_EQ(o.http.read_timeout, s.http.read_timeout);
  EXPECT_EQ(o.http.idle_timeout, s.http.idle_timeout);
  EXPECT_EQ(o.http.max_connections, s.http.max_connections);
  EXPECT_EQ(o.tokenize_limit, s.tokenize_limit);
  EXPECT_EQ(o.max_json_depth, s.max_json_depth);
  EXPECT_EQ(o.strict_api, s.strict_api);
  EXPECT_EQ(o.keep_billing_header, s.keep_billing_header);
  EXPECT_EQ(o.allow_remote_media, s.allow_remote_media);
  EXPECT_EQ(o.remote_media_timeout_s, s.remote_media_timeout_s);
  EXPECT_EQ(o.remote_media_private, s.remote_media_private);
  EXPECT_EQ(o.request_timeout_s, s.request_timeout_s);
  EXPECT_EQ(o.shutdown_grace_s, s.shutdown_grace_s);
  EXPECT_EQ(o.metrics, s.metrics);
  const engine::SchedulerOptions& e = o.model.engine;
  EXPECT_EQ(e.n_threads, s.model.engine.n_threads);
  EXPECT_EQ(e.n_ctx, s.model.engine.n_ctx);
  EXPECT_EQ(e.n_slots, s.model.engine.n_slots);
  EXPECT_EQ(e.max_queue, s.model.engine.max_queue);
  EXPECT_EQ(e.prefill_chunk, s.model.engine.prefill_chunk);
  EXPECT_EQ(e.kv_type, s.model.engine.kv_type);
  EXPECT_EQ(e.prefix_cache_bytes, s.model.engine.prefix_cache_bytes);
  EXPECT_EQ(e.prefix_store.dir, s.model.engine.prefix_store.dir);
  EXPECT_EQ(e.prefix_store.max_bytes, s.model.engine.prefix_store.max_bytes);
  EXPECT_EQ(e.spec, s.model.engine.spec);
  EXPECT_TRUE(o.model.spec_auto) << "--spec auto";
  EXPECT_EQ(e.draft_max, s.model.engine.draft_max);
  EXPECT_EQ(e.draft_min, s.model.engine.draft_min);
  EXPECT_FLOAT_EQ(o.model.sampling_defaults.temperature, s.model.sampling_defaults.temperature);
  EXPECT_FLOAT_EQ(o.model.sampling_defaults.top_p, s.model.sampling_defaults.top_p);
  EXPECT_EQ(o.model.sampling_defaults.top_k, s.model.sampling_defaults.top_k);
  EXPECT_FLOAT_EQ(o.model.sampling_defaults.min_p, s.model.sampling_defaults.min_p);
  EXPECT_FLOAT_EQ(o.model.sampling_defaults.repeat_penalty, s.model.sampling_defaults.repeat_penalty);
  EXPECT_EQ(o.model.max_tokens, s.model.max_tokens);
  EXPECT_EQ(o.model.reasoning_effort, s.model.reasoning_effort);
  EXPECT_EQ(o.model.path, s.model.path);
  EXPECT_EQ(o.model.alias, s.model.alias);
  EXPECT_EQ(o.model.pooling, s.model.pooling);
  EXPECT_EQ(o.model.load_on_startup, s.model.load_on_startup);
  EXPECT_EQ(o.router.enabled, s.router.enabled);
  EXPECT_EQ(o.router.models_max, s.router.models_max);
  EXPECT_EQ(o.router.models_ram, s.router.models_ram);
  EXPECT_EQ(o.router.autoload, s.router.autoload);
  EXPECT_EQ(o.router.sleep_idle_s, s.router.sleep_idle_s);
  EXPECT_EQ(o.router.load_wait_s, s.router.load_wait_s);
  EXPECT_FALSE(o.router.options_for) << "set only with the router";
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
