// `ggufd logits --mmproj --image --prompt` prints libmtmd's references for an image chat: the same
// chunks, the image's rows and the logits of ../shared/golden/vision (its README's tolerances), and
// clear errors for a prompt without the marker or a projector that does not fit.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/support/run.h"
#include "tests/support/shared.h"

namespace {

using ggufd::test::run_ggufd;
using ggufd::test::shared_path;
using nlohmann::json;

// (single-quoted for the shell, real newlines inside)
const char* const kPrompt = "'<start_of_turn>user\nWhat is in this picture? <__media__><end_of_turn>\n<start_of_turn>model'";

std::string args(const std::string& model, const std::string& prompt) {
  return "logits -m " + shared_path("models/synth/" + model + ".gguf") + " --mmproj " +
         shared_path("models/vision/synth-mmproj-gemma3-F32.gguf") + " --image " +
         shared_path("models/vision/test-image-1.png") + " --prompt " + prompt;
}

TEST(LogitsImage, PrintsLibmtmdsReferences) {
  for (const char* model : {"synth-gemma3-F32", "synth-gemma3-Q8_0"}) {
    const std::string golden = "golden/vision/" + std::string(model) + "+mmproj-gemma3.json";
    GGUFD_REQUIRE_SHARED(golden);
    std::ifstream in(shared_path(golden));
    const json g = json::parse(in);
    const auto r = run_ggufd(args(model, kPrompt));
    ASSERT_EQ(r.status, 0) << r.err;
    const json ours = json::parse(r.out);
    ASSERT_EQ(ours["chunks"].size(), 3u);
    EXPECT_EQ(ours["chunks"][0]["tokens"], g["chunks"][0]["tokens"]) << model;
    EXPECT_EQ(ours["chunks"][2]["tokens"], g["chunks"][2]["tokens"]) << model;
    EXPECT_EQ(ours["n_past"], g["n_past"]);
    EXPECT_EQ(ours["non_causal_image"], g["non_causal_image"]);
    for (size_t i = 0; i < g["chunks"][1]["embd"].size(); ++i) {
      const auto a = ours["chunks"][1]["embd"][i].get<std::vector<double>>();
      const auto b = g["chunks"][1]["embd"][i].get<std::vector<double>>();
      double ab = 0, aa = 0, bb = 0;
      for (size_t j = 0; j < a.size(); ++j) ab += a[j] * b[j], aa += a[j] * a[j], bb += b[j] * b[j];
      EXPECT_GE(ab / std::sqrt(aa * bb), 0.9999) << model << " image row " << i;
    }
    const bool f32 = std::string(model).ends_with("F32");
    const double abs_tol = f32 ? 0.01 : 0.06, rel_tol = f32 ? 0.004 : 0.02;
    auto close = [&](const json& o, const json& ref, const std::string& where) {
      std::map<int, double> mine;
      for (const auto& p : o) mine[p[0].get<int>()] = p[1].get<double>();
      for (const auto& p : ref) {
        const int id = p[0].get<int>();
        if (!mine.count(id)) continue;  // (outside our top k: a near-tie at the tail)
        EXPECT_LE(std::abs(mine[id] - p[1].get<double>()), abs_tol + rel_tol * std::abs(p[1].get<double>()))
            << model << " " << where << " token " << id;
      }
    };
    close(ours["last_top"], g["last_top"], "after the prompt");
    for (size_t i = 0; i < g["gen_top"].size(); ++i) close(ours["gen_top"][i], g["gen_top"][i], "greedy " + std::to_string(i));
    if (f32) {
      EXPECT_EQ(ours["greedy"], g["greedy"]);
    }
  }
}

TEST(LogitsImage, RefusesAPromptWithoutTheMarker) {
  GGUFD_REQUIRE_SHARED("models/vision/synth-mmproj-gemma3-F32.gguf");
  const auto r = run_ggufd(args("synth-gemma3-F32", "'no marker here'"));
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("<__media__>"), std::string::npos) << r.err;
  const auto r2 = run_ggufd("logits -m " + shared_path("models/stories260K.gguf") + " --mmproj " +
                            shared_path("models/vision/synth-mmproj-gemma3-F32.gguf") + " --image " +
                            shared_path("models/vision/test-image-1.png") + " --prompt 'a <__media__> b'");
  EXPECT_NE(r2.status, 0);
  EXPECT_NE(r2.err.find("projection width"), std::string::npos) << r2.err;
}

}  // namespace
