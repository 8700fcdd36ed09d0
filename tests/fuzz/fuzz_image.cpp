// libFuzzer target: image bytes as a request carries them (PNG, JPEG, WebP, GIF or anything
// else) -> decode_image with the server's limits tightened (1 megapixel) -> fit_image into a
// 64 x 64 input. Checked: a refusal is an ImageError and nothing else; an accepted image has the
// size it declared within the limits, and its fitted pixels are all finite and in the range the
// normalization gives.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "engine/vision/image.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  engine::ImageLimits limits;
  limits.max_pixels = 1 << 20;
  engine::RgbImage img;
  try {
    img = engine::decode_image(std::span(data, size), limits);
  } catch (const engine::ImageError&) {
    return 0;
  }
  if (img.width <= 0 || img.height <= 0 || img.width * img.height > limits.max_pixels ||
      img.rgb.size() != static_cast<size_t>(img.width * img.height * 3)) {
    std::fprintf(stderr, "fuzz_image: decoded %lld x %lld with %zu bytes\n", static_cast<long long>(img.width),
                 static_cast<long long>(img.height), img.rgb.size());
    std::abort();
  }
  engine::VisionHParams hp;
  hp.image_size = 64;
  for (float v : engine::fit_image(img, hp, engine::ImageFit::kLetterbox)) {
    if (!std::isfinite(v) || v < -1.0f || v > 1.0f) {
      std::fprintf(stderr, "fuzz_image: fitted value %f outside [-1, 1]\n", static_cast<double>(v));
      std::abort();
    }
  }
  return 0;
}
