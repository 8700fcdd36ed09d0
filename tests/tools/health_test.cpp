// `ggufd health`: exit 0 against a ready server, 1 with a reason otherwise (container checks).
#include <gtest/gtest.h>

#include "tests/server/fixture.h"
#include "tests/support/run.h"

namespace ggufd::test {
namespace {

TEST(HealthCommand, ReadyServerIsHealthy) {
  GGUFD_REQUIRE_SHARED(kStories);
  RunningService s(test_options());
  ASSERT_TRUE(s.ready());
  const RunResult r = run_ggufd("health --port " + std::to_string(s.port()));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "healthy\n");
  // GGUFD_HOST=0.0.0.0 (the container's) is reached through loopback.
  const RunResult any = run_ggufd("health --host 0.0.0.0 --port " + std::to_string(s.port()));
  EXPECT_EQ(any.status, 0) << any.err;
}

TEST(HealthCommand, NothingListeningIsUnhealthy) {
  // Port 1 (tcpmux) is privileged and unused here: the connection is refused.
  const RunResult r = run_ggufd("health --port 1 --timeout 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("cannot connect to 127.0.0.1:1"), std::string::npos) << r.err;
}

TEST(HealthCommand, BadPortIsAConfigError) {
  const RunResult r = run_ggufd("health --port 70000");
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("--port"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ggufd::test
