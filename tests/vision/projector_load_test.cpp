// Projector files from bytes, as the fuzzer (tests/fuzz/fuzz_gguf.cpp) loads them: its seeds
// (tests/fuzz/seeds/mmproj, tiny files of each kind ggufd runs) load and encode an image, and a
// file cut short or of another kind is refused with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/kernels/thread_pool.h"
#include "engine/vision/image.h"
#include "engine/vision/vit.h"
#include "gguf/file.h"
#include "gguf/file_set.h"
#include "gguf/writer.h"

namespace engine::projector_load_test {  // (named: the unity build joins test files)
namespace {

std::vector<uint8_t> read_bytes(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

VisionModel load_bytes(const std::vector<uint8_t>& bytes) {
  return VisionModel::from_files(gguf::FileSet::single(gguf::File::parse({bytes.data(), bytes.size()}, "seed.gguf")));
}

TEST(ProjectorLoad, TheFuzzSeedsLoadAndEncode) {
  const std::filesystem::path dir = std::filesystem::path(GGUFD_TEST_DATA_DIR) / ".." / "fuzz" / "seeds" / "mmproj";
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::vector<uint8_t> bytes = read_bytes(e.path());
    const VisionModel v = load_bytes(bytes);
    EXPECT_NE(e.path().filename().string().find(v.traits().name), std::string::npos) << e.path();
    RgbImage img{10, 6, std::vector<uint8_t>(10 * 6 * 3, 100)};
    for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = static_cast<uint8_t>(i * 7);
    ThreadPool pool(1);
    VisionEncoder enc(v);
    for (const ImagePart& part : image_parts(img, v.traits(), v.hparams())) {
      const EncoderInput& in = part.input;
      const std::vector<float> rows = enc.encode(in, pool);
      EXPECT_EQ(rows.size(), static_cast<size_t>(v.hparams().n_tokens(in.width, in.height) * v.hparams().row_width()))
          << e.path();
    }
    ++n;
    // cut short: a clear refusal (the parser's or the loader's), never a crash
    for (size_t cut : {size_t{100}, bytes.size() / 2}) {  // (the last bytes may be padding)
      const std::vector<uint8_t> part(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(cut));
      EXPECT_THROW(load_bytes(part), std::runtime_error) << e.path() << " cut at " << cut;
    }
  }
  EXPECT_EQ(n, 7);
}

// idefics3 scales an image to about preproc_image_size before cutting it into tiles: a file that
// asks for more than 4096 pixels or 16 tiles a side is refused at load, not at the first request.
TEST(ProjectorLoad, AnIdefics3FileAskingForHugeTilingsIsRefused) {
  const std::filesystem::path seed =
      std::filesystem::path(GGUFD_TEST_DATA_DIR) / ".." / "fuzz" / "seeds" / "mmproj" / "idefics3";
  const std::vector<uint8_t> bytes = read_bytes(seed);
  const gguf::File f = gguf::File::parse({bytes.data(), bytes.size()}, "idefics3");
  for (const uint32_t longest : {64u, 4097u, 1000000u}) {
    gguf::Writer w;
    for (const gguf::KeyValue& e : f.metadata()) {
      w.set(std::string(e.key), e.key == "clip.vision.preproc_image_size" ? gguf::OwnedValue::u32(longest)
                                                                          : gguf::OwnedValue::from(e.value));
    }
    for (const gguf::TensorInfo& t : f.tensors()) {
      w.add_tensor(std::string(t.name), t.type, std::vector<uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims),
                   std::vector<uint8_t>(t.data.begin(), t.data.end()));
    }
    const std::vector<uint8_t> edited = w.to_bytes();
    if (longest == 64u) {  // (2 tiles of 32 a side: fine)
      EXPECT_EQ(load_bytes(edited).hparams().longest_edge, 64);
      continue;
    }
    try {
      load_bytes(edited);
      ADD_FAILURE() << longest << " loaded";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("preproc_image_size"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace engine::projector_load_test
