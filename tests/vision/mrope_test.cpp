// M-RoPE for images (qwen-vl): the positions an image's tokens and the text after it take, the
// angles of four positions, and the projectors a decoder without M-RoPE sections refuses.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/model/ops.h"
#include "engine/vision/vit.h"
#include "tests/support/shared.h"

namespace engine::mrope_test {  // (named: the unity build joins test files)
namespace {

using P = std::array<int32_t, 4>;

TEST(MropePositions, ImagesTakeTheirGridAndTheTextAfterContinuesPastTheLongerSide) {
  // text 0..2, an image of 2 rows x 3 columns at 3..8, text 9, an image of 4 x 1 at 10..13, text
  const std::vector<ImageSpan> spans = {{3, 6, 2, 3}, {10, 4, 4, 1}};
  EXPECT_EQ(mrope_positions(spans, 0), (P{0, 0, 0, 0}));
  EXPECT_EQ(mrope_positions(spans, 2), (P{2, 2, 2, 2}));
  EXPECT_EQ(mrope_positions(spans, 3), (P{3, 3, 3, 0}));  // row 0, column 0
  EXPECT_EQ(mrope_positions(spans, 5), (P{3, 3, 5, 0}));  // row 0, column 2
  EXPECT_EQ(mrope_positions(spans, 8), (P{3, 4, 5, 0}));  // row 1, column 2
  // the first image took max(2, 3) = 3 positions for its 6 tokens: the text moves back by 3
  EXPECT_EQ(mrope_positions(spans, 9), (P{6, 6, 6, 6}));
  EXPECT_EQ(mrope_positions(spans, 10), (P{7, 7, 7, 0}));
  EXPECT_EQ(mrope_positions(spans, 13), (P{7, 10, 7, 0}));  // row 3, column 0
  EXPECT_EQ(mrope_positions(spans, 14), (P{11, 11, 11, 11}));  // 4 tokens, 4 positions: no further shift
  EXPECT_EQ(mrope_positions({}, 5), (P{5, 5, 5, 5}));
}

RopeParams sectioned(bool imrope) {
  RopeParams rp;
  rp.n_rot = 16;  // 8 pairs in sections of 3, 2, 2 and 1 (extra)
  rp.freq_base = 10000.0f;
  rp.imrope = imrope;
  const int s[4] = {3, 2, 2, 1};
  std::copy(std::begin(s), std::end(s), rp.sections);
  return rp;
}

TEST(MropeAngles, ATextTokensFourPositionsAreItsOne) {
  for (const bool imrope : {true, false}) {
    const RopeParams rp = sectioned(imrope);
    float one[16], four[16];
    const int32_t p[4] = {37, 37, 37, 37};
    rope_angles(one, 37, rp);
    rope_angles_multi(four, p, rp);
    for (int i = 0; i < 16; ++i) EXPECT_EQ(one[i], four[i]) << i;
  }
}

TEST(MropeAngles, EachPairTurnsByItsSectionsPosition) {
  const int32_t p[4] = {5, 11, 23, 2};
  // the section of each of the 8 pairs: IMRoPE interleaves t, h, w while i < 3 x that section's
  // size (t: 0 3 6, h: 1 4, w: 2 5), pair 7 is extra; M-RoPE lays 3, 2, 2, 1 side by side
  const int imrope_sec[8] = {0, 1, 2, 0, 1, 2, 0, 3}, mrope_sec[8] = {0, 0, 0, 1, 1, 2, 2, 3};
  for (const bool imrope : {true, false}) {
    const RopeParams rp = sectioned(imrope);
    float a[16];
    rope_angles_multi(a, p, rp);
    for (int i = 0; i < 8; ++i) {
      const int s = imrope ? imrope_sec[i] : mrope_sec[i];
      const double theta = p[s] * std::pow(10000.0, -2.0 * i / 16);
      EXPECT_NEAR(a[2 * i], std::cos(theta), 1e-5) << (imrope ? "imrope" : "mrope") << " pair " << i;
      EXPECT_NEAR(a[2 * i + 1], std::sin(theta), 1e-5) << (imrope ? "imrope" : "mrope") << " pair " << i;
    }
  }
}

TEST(VisionPairing, AnMropeProjectorNeedsADecoderWithSections) {
  GGUFD_REQUIRE_SHARED("models/synth/synth-gemma4-F32.gguf");
  GGUFD_REQUIRE_SHARED("models/synth/synth-qwen35-F32.gguf");
  const std::string dir = std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/vision/";
  const VisionModel qwen = VisionModel::load(dir + "synth-mmproj-qwen3vl-F32.gguf");
  EXPECT_EQ(qwen.traits().image_positions, ImagePositions::kMrope2d);
  const Model gemma4 = Model::load(ggufd::test::shared_path("models/synth/synth-gemma4-F32.gguf"));
  const std::string why = pairing_error(qwen, gemma4.hparams());  // width 256 as qwen35's
  EXPECT_NE(why.find("M-RoPE"), std::string::npos) << why;
  EXPECT_NE(why.find("qwen3vl_merger"), std::string::npos) << why;
  const Model qwen35 = Model::load(ggufd::test::shared_path("models/synth/synth-qwen35-F32.gguf"));
  EXPECT_EQ(pairing_error(qwen, qwen35.hparams()), "");
  // Qwen3-VL: the deepstack merges of the rows and the layers that take them must agree
  const VisionModel deep = VisionModel::load(dir + "synth-mmproj-qwen3vl-deepstack-F32.gguf");
  EXPECT_EQ(deep.hparams().n_deepstack, 2);
  EXPECT_EQ(deep.hparams().row_width(), 128 * 3);
  const Model qwen3vl = Model::load(std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/synth-qwen3vl-F32.gguf");
  EXPECT_EQ(pairing_error(deep, qwen3vl.hparams()), "");
  HParams fewer = qwen3vl.hparams();
  fewer.n_deepstack = 1;
  EXPECT_NE(pairing_error(deep, fewer).find("deepstack"), std::string::npos) << pairing_error(deep, fewer);
  // and a projector of sequential positions with a width the decoder does not have
  const VisionModel pixtral = VisionModel::load(dir + "synth-mmproj-pixtral-F32.gguf");  // to 128
  EXPECT_NE(pairing_error(pixtral, qwen35.hparams()).find("projection width 128"), std::string::npos);
}

}  // namespace
}  // namespace engine::mrope_test
