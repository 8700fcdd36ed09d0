// `ggufd serve`'s speculative-decoding flags: llama-server's -md for --model-draft, what
// --print-config shows, and bad values, draft models and --spec mtp for a model without NextN
// layers that end the program with the reason.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

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

TEST(ServeSpeculation, BadSettingsAndDraftModelsEndTheProgramSayingWhy) {
  const struct {
    std::string args, says;
  } flags[] = {
      {"serve --spec medusa --print-config", "--spec: 'medusa' is not one of auto, none, ngram, mtp, draft"},
      {"serve --draft-max abc --print-config", "--draft-max: 'abc' is not an integer"},
      {"serve --draft-max 1000 --print-config", "--draft-max: 1000 is out of range 1..64"},
      {"serve --spec draft --print-config", "--spec: 'draft' needs a draft model: --model-draft FILE"},
  };
  for (const auto& f : flags) {
    const RunResult r = run_ggufd(f.args);
    EXPECT_NE(r.status, 0) << f.args;
    EXPECT_NE(r.err.find(f.says), std::string::npos) << f.args << ": " << r.err;
  }

  GGUFD_REQUIRE_SHARED("models/stories260K.gguf");
  GGUFD_REQUIRE_SHARED("models/llama-2-tiny-random.gguf");
  const std::string junk = (std::filesystem::temp_directory_path() /
                            ("ggufd-serve-spec-" + std::to_string(::getpid()) + ".gguf")).string();
  std::ofstream(junk) << "GGUF junk";
  const std::string serve = "serve --host 127.0.0.1 --port 0 -m " + shared_path("models/stories260K.gguf");
  const struct {
    std::string draft, says;
  } drafts[] = {
      {junk, "cannot load model: the draft model (--model-draft): " + junk + ": at byte 4: unsupported version"},
      {shared_path("models/llama-2-tiny-random.gguf"),
       "cannot load model: the draft model's vocabulary has 32000 tokens, the model's 512"},
  };
  for (const auto& d : drafts) {
    const RunResult r = run_ggufd(serve + " -md " + d.draft);
    EXPECT_EQ(r.status, 1) << d.draft;
    EXPECT_NE(r.err.find(d.says), std::string::npos) << r.err;
  }
  std::filesystem::remove(junk);
  const RunResult mtp = run_ggufd(serve + " --spec mtp");  // stories260K has no NextN layers
  EXPECT_EQ(mtp.status, 1);
  EXPECT_NE(mtp.err.find("cannot load model: speculative decoding with mtp needs a model with NextN / MTP layers "
                         "(nextn_predict_layers); this llama model has none"),
            std::string::npos)
      << mtp.err;
}

}  // namespace
}  // namespace ggufd::test
