// `ggufd serve`'s speculative-decoding flags: llama-server's -md for --model-draft, and what
// --print-config shows.
#include <gtest/gtest.h>

#include <string>

#include "tests/support/run.h"
#include "tests/support/shared.h"

namespace ggufd::test {
namespace {

TEST(ServeSpeculation, DashMdIsModelDraft) {
  const RunResult missing = run_ggufd("serve -md /nonexistent/draft.gguf --print-config");
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("--model-draft: '/nonexistent/draft.gguf' does not exist"), std::string::npos)
      << missing.err;

  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  const std::string draft = shared_path("models/stories260K.gguf");
  const RunResult r = run_ggufd("serve -md " + draft + " --draft-max 8 --print-config");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("model-draft = " + draft + "  (flag)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("spec = auto  (default)\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("draft-max = 8  (flag)\n"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ggufd::test
