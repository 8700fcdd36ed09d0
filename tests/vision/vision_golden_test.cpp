// The image chat references of llama.cpp b10108's libmtmd (../shared/golden/vision, format and
// tolerances in its README): the projector's embeddings of the test image, then the text model's
// logits after a prompt holding the image and along a greedy continuation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/model/forward.h"
#include "engine/model/model.h"
#include "engine/vision/image.h"
#include "engine/vision/vit.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

double cosine(const float* a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    ab += a[i] * b[i];
    aa += a[i] * a[i];
    bb += b[i] * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

// Checks our logits row against a reference top-k list with the golden tolerances.
void expect_close(const float* row, int64_t n_vocab, const nlohmann::json& top, double abs_tol, double rel_tol,
                  const std::string& where, double& max_err) {
  for (const auto& pair : top) {
    const double r = pair[1].get<double>(), o = row[pair[0].get<int32_t>()];
    max_err = std::max(max_err, std::abs(o - r));
    ASSERT_LE(std::abs(o - r), abs_tol + rel_tol * std::abs(r)) << where << " token " << pair[0] << ": ours " << o
                                                                 << ", reference " << r;
  }
  const double top1 = top[0][1].get<double>(), top2 = top[1][1].get<double>();
  if (top1 - top2 > 2 * (abs_tol + rel_tol * std::abs(top1))) {
    ASSERT_EQ(std::max_element(row, row + n_vocab) - row, top[0][0].get<int64_t>()) << where << ": argmax";
  }
}

// A text model of ../shared/models/synth with a projector: the shared gemma3 one and references
// (../shared/golden/vision), or one kept here (tests/data/reference/models/vision, references in
// tests/data/reference/golden/vision; see tests/data/reference/README.md).
struct Case {
  const char* text;       // "synth-gemma3-F32"
  const char* projector;  // "gemma3"
  bool shared;            // the projector and its references are ../shared's
  bool text_here = false;  // the text model is tests/data/reference/models' (else ../shared/models/synth's)
};

constexpr Case kCases[] = {
    {"synth-gemma3-F32", "gemma3", true},         {"synth-gemma3-Q8_0", "gemma3", true},
    {"synth-gemma4-F32", "gemma4v", false},       {"synth-gemma4-Q8_0", "gemma4v", false},
    {"tiny-mistral3-F32", "pixtral", false, true}, {"tiny-mistral3-Q8_0", "pixtral", false, true},
    {"synth-qwen35-F32", "qwen3vl", false},       {"synth-qwen35-Q8_0", "qwen3vl", false},
    {"synth-qwen3vl-F32", "qwen3vl-deepstack", false, true}, {"synth-qwen3vl-Q8_0", "qwen3vl-deepstack", false, true},
    {"synth-qwen3vlmoe-F32", "qwen3vl-deepstack", false, true}, {"synth-qwen3vlmoe-Q8_0", "qwen3vl-deepstack", false, true},
    {"synth-qwen2vl-F32", "qwen25vl", false, true}, {"synth-qwen2vl-Q8_0", "qwen25vl", false, true},
    {"synth-qwen2vl-F32", "qwen2vl", false, true},  {"synth-qwen2vl-Q8_0", "qwen2vl", false, true},
    {"synth-smolvlm-F32", "idefics3", false, true}, {"synth-smolvlm-Q8_0", "idefics3", false, true},
};

class VisionGolden : public ::testing::TestWithParam<Case> {};

TEST_P(VisionGolden, EmbeddingsAndLogitsMatchLibmtmd) {
  const std::string text = GetParam().text;
  const std::string golden_rel = "golden/vision/" + text + "+mmproj-" + GetParam().projector + ".json";
  const std::string here = std::string(GGUFD_TEST_DATA_DIR) + "/reference/";
  const std::string golden_path = GetParam().shared ? shared_path(golden_rel) : here + golden_rel;
  if (GetParam().shared) GGUFD_REQUIRE_SHARED(golden_rel);
  if (!GetParam().text_here) GGUFD_REQUIRE_SHARED("models/synth/" + text + ".gguf");
  std::ifstream in(golden_path);
  ASSERT_TRUE(in) << "cannot read " << golden_path;
  const nlohmann::json g = nlohmann::json::parse(in);
  const Model model = Model::load(GetParam().text_here ? here + "models/" + text + ".gguf"
                                                       : shared_path("models/synth/" + text + ".gguf"));
  const std::string mmproj = g["mmproj"].get<std::string>();
  const VisionModel vision =
      VisionModel::load(GetParam().shared ? shared_path("models/vision/" + mmproj) : here + "models/vision/" + mmproj);
  const RgbImage img = decode_image(read_bytes(shared_path("models/vision/" + g["image"].get<std::string>())), {});
  ASSERT_EQ(img.width, g["image_nx"].get<int64_t>());
  ASSERT_EQ(img.height, g["image_ny"].get<int64_t>());
  ASSERT_EQ(vision.traits().non_causal, g["non_causal_image"].get<bool>());
  ThreadPool pool(1);

  // The image's rows, part by part (one, or idefics3's tiles and overview, one image chunk each):
  // each within cosine 0.9999 of libmtmd's.
  VisionEncoder encoder(vision);
  const std::vector<ImagePart> parts = image_parts(img, vision.traits(), vision.hparams());
  size_t part = 0;
  std::vector<std::vector<float>> part_rows;  // (the batch points into them)
  const int64_t E = model.hparams().n_embd;
  ASSERT_EQ(vision.hparams().n_embd_text, E);
  // W: a row's width (E, or with deepstack slices E x 3). golden_mtmd writes mtmd's output buffer in
  // rows of E values, so with deepstack its n rows are the first n / 3 tokens' whole rows
  const int64_t W = vision.hparams().row_width();
  double worst_cos = 1.0;
  Batch b;
  int32_t pos = 0;
  // qwen-vl: the entries' M-RoPE positions; the image takes chunk["n_pos"] of them
  const bool mrope = vision.traits().image_positions == ImagePositions::kMrope2d;
  const VisionHParams& vh = vision.hparams();
  std::vector<ImageSpan> spans;
  const auto place = [&] {
    if (mrope) b.set_mrope(b.size() - 1, mrope_positions(spans, b.size() - 1));
  };
  int64_t n_past = 0;
  for (const auto& chunk : g["chunks"]) {
    if (chunk["type"] == "text") {
      for (const auto& t : chunk["tokens"]) {
        b.add(t.get<int32_t>(), 0, pos++, false);
        place();
      }
      n_past += static_cast<int64_t>(chunk["tokens"].size());
      continue;
    }
    ASSERT_LT(part, parts.size()) << "libmtmd has more image chunks";
    const EncoderInput& input = parts[part++].input;
    const std::vector<float>& rows = part_rows.emplace_back(encoder.encode(input, pool));
    const int64_t n = chunk["n_tokens"].get<int64_t>();
    ASSERT_EQ(n, vision.hparams().n_tokens(input.width, input.height));
    spans.push_back(vh.span(pos, input.width, input.height));
    const int64_t n_pos = mrope ? std::max(spans.back().rows, spans.back().cols) : n;
    ASSERT_EQ(chunk["n_pos"].get<int64_t>(), n_pos);
    n_past += n_pos;
    ASSERT_EQ(rows.size(), static_cast<size_t>(n * W));
    for (int64_t i = 0; i < n; ++i) {
      const double c = cosine(rows.data() + i * E, chunk["embd"][static_cast<size_t>(i)].get<std::vector<float>>());
      worst_cos = std::min(worst_cos, c);
      EXPECT_GE(c, 0.9999) << "image row " << i;
    }
    const int32_t last = pos + static_cast<int32_t>(n) - 1;
    for (int64_t i = 0; i < n; ++i, ++pos) {
      b.add_row(rows.data() + i * W, 0, pos, vision.traits().non_causal ? last : pos, false);
      place();
    }
  }
  ASSERT_EQ(part, parts.size()) << "libmtmd has fewer image chunks";
  ASSERT_EQ(n_past, g["n_past"].get<int64_t>());
  b.logits.back() = 1;
  for (const auto& t : g["greedy"]) {
    b.add(t.get<int32_t>(), 0, pos++, true);
    place();
  }

  // The logits after the prompt and after each greedy token (teacher-forced).
  KvCache cache(model.hparams(), pos, KvType::kF16);
  Forward fwd(model, 512);
  fwd.eval(b, cache, pool);
  const bool f32 = text.ends_with("F32");
  const double abs_tol = f32 ? 0.01 : 0.06, rel_tol = f32 ? 0.004 : 0.02;
  const int64_t V = model.hparams().n_vocab;
  double max_err = 0;
  expect_close(fwd.logits(0), V, g["last_top"], abs_tol, rel_tol, "after the prompt", max_err);
  for (size_t i = 0; i < g["gen_top"].size(); ++i) {
    expect_close(fwd.logits(static_cast<int64_t>(i) + 1), V, g["gen_top"][i], abs_tol, rel_tol,
                 "after greedy token " + std::to_string(i), max_err);
  }
  std::printf("[ vision   ] %-18s worst image row cosine %.6f, max |ours - reference| = %.5f\n", text.c_str(),
              worst_cos, max_err);
}

INSTANTIATE_TEST_SUITE_P(Projectors, VisionGolden,
                         ::testing::ValuesIn(kCases),
                         [](const auto& p) {
                           std::string s = std::string(p.param.text) + "_" + p.param.projector;
                           std::replace(s.begin(), s.end(), '-', '_');
                           return s;
                         });

// Every image reference kept in the repository has a case above.
TEST(VisionGoldenFiles, EveryRepositoryReferenceIsTested) {
  const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/reference/golden/vision";
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    ++files;
    bool known = false;
    for (const Case& c : kCases) {
      known |= !c.shared && e.path().filename() == std::string(c.text) + "+mmproj-" + c.projector + ".json";
    }
    EXPECT_TRUE(known) << e.path() << " has no test";
  }
  EXPECT_GT(files, 0);
}

}  // namespace
}  // namespace engine
