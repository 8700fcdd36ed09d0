// Qwen2-VL and Qwen2.5-VL: their text model (qwen2vl, M-RoPE with the sections side by side) and
// what their projector files must hold and leave out (as llama.cpp b10108's clip.cpp refuses).
// The outputs themselves are checked against libmtmd by VisionGolden and VisionProjectorHttp.
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "engine/model/model.h"
#include "engine/vision/vit.h"
#include "gguf/file.h"
#include "gguf/file_set.h"
#include "gguf/writer.h"

namespace engine::qwen2vl_test {  // (named: the unity build joins test files)
namespace {

const std::string kDir = std::string(GGUFD_TEST_DATA_DIR) + "/reference/models/";
const std::string kProjector = kDir + "vision/synth-mmproj-qwen25vl-F32.gguf";

// The repository's qwen2.5vl_merger projector rewritten: `keep_key` / `keep_tensor` drop what they
// refuse; `extra` adds f32 tensors (name, ne). Returns the load error, or "" when it loads.
std::string load_error(const std::function<bool(const std::string&)>& keep_key,
                       const std::function<bool(const std::string&)>& keep_tensor,
                       const std::vector<std::pair<std::string, std::vector<uint64_t>>>& extra = {}) {
  const gguf::File f = gguf::File::open(kProjector);
  gguf::Writer w;
  for (const gguf::KeyValue& e : f.metadata()) {
    if (keep_key(std::string(e.key))) w.set(std::string(e.key), gguf::OwnedValue::from(e.value));
  }
  for (const gguf::TensorInfo& t : f.tensors()) {
    if (!keep_tensor(std::string(t.name))) continue;
    w.add_tensor(std::string(t.name), t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                 std::vector<uint8_t>(t.data.begin(), t.data.end()));
  }
  for (const auto& [name, ne] : extra) {
    uint64_t n = 1;
    for (uint64_t d : ne) n *= d;
    w.add_tensor(name, gguf::TensorType::F32, ne, std::vector<uint8_t>(n * sizeof(float), 0));
  }
  const std::string path = ::testing::TempDir() + "qwen25vl-" + std::to_string(::getpid()) + ".gguf";
  w.write(path);
  std::string error;
  try {
    gguf::File out = gguf::File::open(path);
    std::remove(path.c_str());  // (the mapping stays)
    VisionModel::from_files(gguf::FileSet::single(std::move(out)));
  } catch (const std::exception& e) {
    error = e.what();
  }
  std::remove(path.c_str());
  return error;
}
bool all(const std::string&) { return true; }

TEST(Qwen2Vl, TheTextModelTakesMropeSectionsSideBySide) {
  const Model m = Model::load(kDir + "synth-qwen2vl-F32.gguf");
  const HParams& hp = m.hparams();
  EXPECT_EQ(hp.arch, Arch::kQwen2Vl);
  EXPECT_FALSE(hp.imrope);
  EXPECT_EQ(std::vector<int>(hp.rope_sections, hp.rope_sections + 4), (std::vector<int>{8, 12, 12, 0}));
  EXPECT_FALSE(m.layers[0].bq.empty()) << "qwen2's q / k / v biases";
  for (const char* name : {"synth-mmproj-qwen25vl-F32.gguf", "synth-mmproj-qwen2vl-F32.gguf"}) {
    const VisionModel v = VisionModel::load(kDir + "vision/" + name);
    EXPECT_EQ(v.traits().image_positions, ImagePositions::kMrope2d) << name;
    EXPECT_EQ(pairing_error(v, hp), "") << name;
  }
}

TEST(Qwen2Vl, TheProjectorsWindowsAndLayers) {
  const VisionModel v25 = VisionModel::load(kProjector);
  const VisionHParams& hp = v25.hparams();
  EXPECT_EQ(v25.traits().kind, ProjectorKind::kQwen25vl);
  EXPECT_EQ(hp.n_wa_pattern, 2);
  EXPECT_EQ(hp.window_tokens, 2) << "112 pixels over 28-pixel patches merged 2 x 2";
  EXPECT_TRUE(hp.windowed(0));
  EXPECT_FALSE(hp.windowed(1));
  EXPECT_EQ(hp.act, VisionHParams::Act::kSilu);
  EXPECT_FALSE(v25.layers[0].ffn_gate_b.empty());
  const VisionModel v2 = VisionModel::load(kDir + "vision/synth-mmproj-qwen2vl-F32.gguf");
  EXPECT_EQ(v2.traits().kind, ProjectorKind::kQwen2vl);
  EXPECT_FALSE(v2.hparams().windowed(0)) << "Qwen2-VL has no windows";
  EXPECT_EQ(v2.hparams().act, VisionHParams::Act::kGeluQuick);
}

TEST(Qwen2Vl, AProjectorFileMissingOrAddingWhatItsKindDoesNotHaveIsRefused) {
  EXPECT_EQ(load_error(all, all), "");
  const std::string no_pattern = load_error([](const std::string& k) { return k != "clip.vision.n_wa_pattern"; }, all);
  EXPECT_NE(no_pattern.find("clip.vision.n_wa_pattern"), std::string::npos) << no_pattern;
  const std::string one_frame = load_error(all, [](const std::string& t) { return t != "v.patch_embd.weight.1"; });
  EXPECT_NE(one_frame.find("v.patch_embd.weight.1"), std::string::npos) << one_frame;
  const std::string bias = load_error(all, all, {{"v.patch_embd.bias", {64}}});
  EXPECT_NE(bias.find("v.patch_embd.bias"), std::string::npos) << bias;
  const std::string deep = load_error(all, all, {{"v.deepstack.0.fc1.weight", {256, 256}}});
  EXPECT_NE(deep.find("deepstack"), std::string::npos) << deep;
  const std::string merger = load_error(all, [](const std::string& t) { return t != "mm.2.weight"; });
  EXPECT_NE(merger.find("mm.2.weight"), std::string::npos) << merger;
}

}  // namespace
}  // namespace engine::qwen2vl_test
