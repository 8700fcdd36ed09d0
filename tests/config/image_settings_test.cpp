// The image rows of `ggufd serve` (HTTP group): --allow-remote-media, --remote-media-private and
// --remote-media-timeout
// from every source, their defaults and the timeout's range.
#include <gtest/gtest.h>

#include "config/settings.h"
#include "tests/config/config_fixture.h"

namespace ggufd::test {
namespace {

TEST_F(ConfigTest, RemoteMediaFromEverySource) {
  const ServeConfig plain = parse({});
  EXPECT_FALSE(plain.http.allow_remote_media);
  EXPECT_EQ(plain.http.remote_media_timeout, 10);
  EXPECT_FALSE(plain.http.remote_media_private);
  EXPECT_TRUE(parse({"--allow-remote-media"}).http.allow_remote_media);
  EXPECT_TRUE(parse({"--remote-media-private"}).http.remote_media_private);
  env("GGUFD_ALLOW_REMOTE_MEDIA", "true");
  env("GGUFD_REMOTE_MEDIA_TIMEOUT", "3");
  ServeConfig cfg = parse({});
  EXPECT_TRUE(cfg.http.allow_remote_media);
  EXPECT_EQ(cfg.http.remote_media_timeout, 3);
  EXPECT_EQ(cfg.sources.at("allow-remote-media"), "env");
  EXPECT_EQ(cfg.sources.at("remote-media-timeout"), "env");
  unsetenv("GGUFD_ALLOW_REMOTE_MEDIA");
  unsetenv("GGUFD_REMOTE_MEDIA_TIMEOUT");
  env("GGUFD_REMOTE_MEDIA_PRIVATE", "true");
  EXPECT_TRUE(parse({}).http.remote_media_private);
  unsetenv("GGUFD_REMOTE_MEDIA_PRIVATE");
  cfg = parse({"--config", file("c.toml", "[http]\nallow-remote-media = true\nremote-media-timeout = 30\n")});
  EXPECT_TRUE(cfg.http.allow_remote_media);
  EXPECT_EQ(cfg.http.remote_media_timeout, 30);
  EXPECT_EQ(cfg.sources.at("allow-remote-media"), "file");
  EXPECT_EQ(error({"--remote-media-timeout", "0"}), "--remote-media-timeout: 0 is not allowed: expected 1..600");
  EXPECT_NE(config::describe(cfg).find("remote-media-timeout = 30  (file)\n"), std::string::npos);
}

}  // namespace
}  // namespace ggufd::test
