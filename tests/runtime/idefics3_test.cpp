// Idefics3 (SmolVLM): an image becomes tiles and an overview, laid out in the prompt with text
// between them as llama.cpp b10108's mtmd lays them (its chunks in the libmtmd reference); the
// encoder's outputs are checked against libmtmd by VisionGolden and VisionProjectorHttp.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/runtime/image_prompt.h"
#include "engine/text/tokenizer/tokenizer.h"
#include "engine/vision/image.h"
#include "engine/vision/vit.h"
#include "tests/support/shared.h"

namespace engine::idefics3_test {  // (named: the unity build joins test files)
namespace {

const std::string kRef = std::string(GGUFD_TEST_DATA_DIR) + "/reference/";

std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(Idefics3, AnImageIsTilesThenTheOverviewWithMtmdsTextBetween) {
  GGUFD_REQUIRE_SHARED("models/vision/test-image-1.png");
  std::ifstream gin(kRef + "golden/vision/synth-smolvlm-F32+mmproj-idefics3.json");
  ASSERT_TRUE(gin);
  const nlohmann::json g = nlohmann::json::parse(gin);
  const Model model = Model::load(kRef + "models/synth-smolvlm-F32.gguf");
  const Tokenizer tok = Tokenizer::from_gguf(model.file());
  const VisionModel vision = VisionModel::load(kRef + "models/vision/synth-mmproj-idefics3-F32.gguf");
  const VisionHParams& hp = vision.hparams();
  EXPECT_EQ(vision.traits().kind, ProjectorKind::kIdefics3);
  EXPECT_EQ(hp.longest_edge, 80);
  const RgbImage img = decode_image(read_bytes(ggufd::test::shared_path("models/vision/test-image-1.png")), {});

  // 96 x 72: the longer side to 80 (80 x 60), rounded up to 32-pixel tiles: 3 x 2, then the overview
  const std::vector<ImagePart> parts = image_parts(img, vision.traits(), hp);
  ASSERT_EQ(parts.size(), 7u);
  for (const ImagePart& p : parts) {
    EXPECT_EQ(p.input.width, 32);
    EXPECT_EQ(p.input.height, 32);
  }
  // the prompt: each part's positions hold its id; the text around them is mtmd's
  const std::string prompt = "<|im_start|>user\nWhat is in this picture? ";
  const std::vector<TextPiece> pieces = {{prompt, {}}, {"<|im_end|>\n<|im_start|>assistant\n", {}}};
  std::vector<PromptPart> prompt_parts;
  for (size_t k = 0; k < parts.size(); ++k) {
    prompt_parts.push_back({parts[k].before, parts[k].after, static_cast<int32_t>(100000 + k),
                            hp.n_tokens(parts[k].input.width, parts[k].input.height)});
  }
  std::vector<int64_t> at;
  const std::vector<int32_t> ours = tokenize_around_images(tok, lookup_tokens(tok, looked_up_texts(vision.traits())), pieces, {prompt_parts}, at);
  std::vector<int32_t> theirs;
  size_t k = 0;
  for (const auto& chunk : g["chunks"]) {
    if (chunk["type"] == "text") {
      for (const auto& t : chunk["tokens"]) theirs.push_back(t.get<int32_t>());
      continue;
    }
    ASSERT_LT(k, at.size());
    EXPECT_EQ(at[k], static_cast<int64_t>(theirs.size())) << "part " << k;
    theirs.insert(theirs.end(), chunk["n_tokens"].get<size_t>(), static_cast<int32_t>(100000 + k));
    ++k;
  }
  EXPECT_EQ(k, parts.size());
  EXPECT_EQ(ours, theirs);
}

TEST(Idefics3, TheLayoutsTokensAreLookedUpByTheirText) {
  const Tokenizer smol = Tokenizer::from_gguf(Model::load(kRef + "models/synth-smolvlm-F32.gguf").file());
  const VisionModel vision = VisionModel::load(kRef + "models/vision/synth-mmproj-idefics3-F32.gguf");
  const std::vector<std::string> texts = looked_up_texts(vision.traits());
  const LookedUpTokens ids = lookup_tokens(smol, texts);
  EXPECT_EQ(ids.size(), texts.size());
  for (const auto& [text, id] : ids) {
    EXPECT_EQ(smol.piece(id, true), text);
    for (int32_t before = 0; before < id; ++before) ASSERT_NE(smol.piece(before, true), text) << "not the first: " << text;
  }
  // a vocabulary without them: the tokenization says which is missing (the server refuses the
  // pairing at load)
  const Tokenizer other = Tokenizer::from_gguf(Model::load(kRef + "models/synth-qwen2vl-F32.gguf").file());
  const LookedUpTokens none = lookup_tokens(other, texts);
  EXPECT_FALSE(none.contains("<global-img>"));
  const std::vector<TextPiece> pieces = {{"a", {}}, {"b", {}}};
  PromptPart part{{{"<global-img>", true}}, {}, 100000, 4};
  std::vector<int64_t> at;
  try {
    tokenize_around_images(other, none, pieces, {{part}}, at);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("<global-img>"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace engine::idefics3_test
