// Image decoding (every format, the limits, hostile headers) and the fit to the encoder's input.
#include <gtest/gtest.h>

#include <stb_image_write.h>
#include <webp/encode.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "engine/vision/image.h"
#include "tests/support/shared.h"

namespace engine {
namespace {

using ggufd::test::shared_path;

// A w x h gradient, (h, w, 3).
std::vector<uint8_t> gradient(int w, int h) {
  std::vector<uint8_t> px(static_cast<size_t>(w * h * 3));
  for (int y = 0; y < h; ++y) {
    for (int x = 0; x < w; ++x) {
      uint8_t* p = &px[static_cast<size_t>((y * w + x) * 3)];
      p[0] = static_cast<uint8_t>(x * 255 / w);
      p[1] = static_cast<uint8_t>(y * 255 / h);
      p[2] = 128;
    }
  }
  return px;
}

void append(void* ctx, void* data, int size) {
  auto* out = static_cast<std::vector<uint8_t>*>(ctx);
  out->insert(out->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
}

std::vector<uint8_t> encode_png(int w, int h) {
  std::vector<uint8_t> out;
  const std::vector<uint8_t> px = gradient(w, h);
  EXPECT_TRUE(stbi_write_png_to_func(append, &out, w, h, 3, px.data(), w * 3));
  return out;
}

uint32_t crc32(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

// A PNG whose header declares w x h pixels, followed by a few bytes of nothing.
std::vector<uint8_t> png_declaring(uint32_t w, uint32_t h) {
  std::vector<uint8_t> b = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};
  for (uint32_t v : {w, h}) {
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(v >> s));
  }
  for (uint8_t v : {8, 2, 0, 0, 0}) b.push_back(v);
  const uint32_t c = crc32(b.data() + 12, 17);
  for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(c >> s));
  for (int i = 0; i < 32; ++i) b.push_back(0);
  return b;
}

TEST(ImageDecode, ReadsPngJpegWebpAndGif) {
  const RgbImage png = decode_image(encode_png(40, 30), {});
  EXPECT_EQ(png.width, 40);
  EXPECT_EQ(png.height, 30);
  EXPECT_EQ(png.rgb, gradient(40, 30));

  std::vector<uint8_t> jpg;
  const std::vector<uint8_t> px = gradient(48, 32);
  ASSERT_TRUE(stbi_write_jpg_to_func(append, &jpg, 48, 32, 3, px.data(), 95));
  EXPECT_STREQ(sniff_image(jpg), "jpeg");
  const RgbImage j = decode_image(jpg, {});
  ASSERT_EQ(j.rgb.size(), px.size());
  for (size_t i = 0; i < px.size(); ++i) ASSERT_NEAR(j.rgb[i], px[i], 24) << i;

  uint8_t* webp_out = nullptr;
  const size_t n = WebPEncodeLosslessRGB(px.data(), 48, 32, 48 * 3, &webp_out);
  ASSERT_GT(n, 0u);
  const std::vector<uint8_t> webp(webp_out, webp_out + n);
  WebPFree(webp_out);
  EXPECT_STREQ(sniff_image(webp), "webp");
  EXPECT_EQ(decode_image(webp, {}).rgb, px);  // lossless

  // 1 x 1, palette (red, black), pixel 0
  const std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0, 0x80, 0, 0, 0xff, 0, 0, 0, 0, 0,
                                    0x21, 0xf9, 4, 0, 0, 0, 0, 0, 0x2c, 0, 0, 0, 0, 1, 0, 1, 0, 0, 2, 2, 0x44,
                                    1, 0, 0x3b};
  const RgbImage g = decode_image(gif, {});
  EXPECT_EQ(g.width, 1);
  EXPECT_EQ(g.rgb, (std::vector<uint8_t>{255, 0, 0}));
}

TEST(ImageDecode, RefusesWhatIsNotAnImage) {
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};
  EXPECT_THROW(
      {
        try {
          decode_image(text, {});
        } catch (const ImageError& e) {
          EXPECT_STREQ(e.what(), "the data is not a PNG, JPEG, WebP or GIF image");
          throw;
        }
      },
      ImageError);
  EXPECT_THROW(decode_image(std::vector<uint8_t>{}, {}), ImageError);
}

TEST(ImageDecode, RefusesAHugeDeclaredSizeBeforeDecoding) {
  const auto start = std::chrono::steady_clock::now();
  try {
    decode_image(png_declaring(100000, 100000), {});
    FAIL() << "a 10-gigapixel PNG was accepted";
  } catch (const ImageError& e) {
    EXPECT_NE(std::string(e.what()).find("100000 x 100000 pixels, over the limit"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ImageLimits small;
  small.max_pixels = 100;
  EXPECT_THROW(decode_image(encode_png(40, 30), small), ImageError);
  small = {};
  small.max_bytes = 10;
  EXPECT_THROW(decode_image(encode_png(40, 30), small), ImageError);
}

TEST(ImageDecode, RefusesTruncatedAndCorruptData) {
  const std::vector<uint8_t> png = encode_png(64, 64);
  for (size_t cut : {size_t{8}, size_t{20}, size_t{40}, png.size() / 2, png.size() - 13}) {
    const std::vector<uint8_t> part(png.begin(), png.begin() + static_cast<std::ptrdiff_t>(cut));
    EXPECT_THROW(decode_image(part, {}), ImageError) << "cut at " << cut;
  }
  std::vector<uint8_t> jpg;
  const std::vector<uint8_t> px = gradient(32, 32);
  ASSERT_TRUE(stbi_write_jpg_to_func(append, &jpg, 32, 32, 3, px.data(), 90));
  jpg.resize(jpg.size() / 3);
  // (a truncated JPEG may decode to a partial picture, as libjpeg does; it must not crash)
  try {
    decode_image(jpg, {});
  } catch (const ImageError&) {
  }
  const std::vector<uint8_t> webp_head = {'R', 'I', 'F', 'F', 50, 0, 0, 0, 'W', 'E', 'B', 'P', 'V', 'P', '8', ' '};
  EXPECT_THROW(decode_image(webp_head, {}), ImageError);
}

TEST(ImageFit, LetterboxesIntoTheSquareAndNormalizes) {
  VisionHParams hp;
  hp.image_size = 64;
  hp.patch_size = 8;
  RgbImage img{96, 48, std::vector<uint8_t>(96 * 48 * 3, 255)};  // white, 2:1
  const EncoderInput in = fit_image(img, hp);
  ASSERT_EQ(in.width, 64);
  ASSERT_EQ(in.height, 64);
  const std::vector<float>& px = in.pixels;
  ASSERT_EQ(px.size(), 3u * 64 * 64);
  // 64 x 32 centred: rows 0-15 and 48-63 black ((0 - 0.5) / 0.5 = -1), rows 16-47 white (1)
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(px[static_cast<size_t>(c * 4096 + 0 * 64 + 10)], -1.0f);
    EXPECT_FLOAT_EQ(px[static_cast<size_t>(c * 4096 + 20 * 64 + 10)], 1.0f);
    EXPECT_FLOAT_EQ(px[static_cast<size_t>(c * 4096 + 63 * 64 + 10)], -1.0f);
  }
  // a 1-pixel image is fitted too
  const RgbImage dot{1, 1, {10, 20, 30}};
  EXPECT_EQ(fit_image(dot, hp).pixels.size(), 3u * 64 * 64);
}

// gemma4v's fit (mtmd's calc_size_preserved_ratio): sides multiples of patch x merge, the aspect
// kept, the tokens brought within [min, max].
TEST(ImageFit, KeepsTheAspectWithinTheTokenLimits) {
  VisionHParams hp;
  hp.fit = ImageFit::kKeepAspect;
  hp.patch_size = 8;
  hp.n_merge = 3;  // sides: multiples of 24
  hp.min_tokens = 40;
  hp.max_tokens = 280;
  hp.pos_size = 128;
  hp.mean[0] = hp.mean[1] = hp.mean[2] = 0.0f;
  hp.std[0] = hp.std[1] = hp.std[2] = 1.0f;
  const auto fitted = [&](int64_t w, int64_t h) {
    const EncoderInput in = fit_image(RgbImage{w, h, std::vector<uint8_t>(static_cast<size_t>(w * h * 3), 128)}, hp);
    EXPECT_EQ(in.pixels.size(), static_cast<size_t>(3 * in.width * in.height));
    EXPECT_TRUE(hp.accepts(in.width, in.height));
    return std::pair(in.width, in.height);
  };
  // 96 x 72 is 4 x 3 = 12 tokens, under 40: scaled up by sqrt(40 / 12), sides rounded up
  EXPECT_EQ(fitted(96, 72), (std::pair<int64_t, int64_t>(192, 144)));  // 8 x 6 = 48 tokens (as libmtmd)
  // 1000 x 1000 rounds to 1008 (1764 tokens): scaled down by sqrt(1e6 / 161280), sides floored
  EXPECT_EQ(fitted(1000, 1000), (std::pair<int64_t, int64_t>(384, 384)));  // 256 tokens
  // within the limits: sides rounded to the nearest multiple
  EXPECT_EQ(fitted(250, 300), (std::pair<int64_t, int64_t>(240, 312)));
  EXPECT_EQ(hp.n_tokens(240, 312), 10 * 13);
  // an aspect the position tables cannot hold (more than 128 patches a side) is an ImageError
  EXPECT_THROW(fit_image(RgbImage{4000, 10, std::vector<uint8_t>(4000 * 10 * 3, 0)}, hp), ImageError);
}

TEST(ImageDecode, ReadsTheSharedTestImage) {
  GGUFD_REQUIRE_SHARED("models/vision/test-image-1.png");
  std::ifstream in(shared_path("models/vision/test-image-1.png"), std::ios::binary);
  const std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), {}};
  const RgbImage img = decode_image(bytes, {});
  EXPECT_EQ(img.width, 96);
  EXPECT_EQ(img.height, 72);
}

}  // namespace
}  // namespace engine
