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
  // gemma3's square and gemma4v's aspect-keeping fit (8-pixel patches pooled 3 x 3, 40 to 280
  // tokens, position tables of 64)
  engine::VisionHParams square;
  square.image_size = 64;
  square.patch_size = 8;
  engine::VisionHParams aspect = square;
  aspect.fit = engine::ImageFit::kKeepAspect;
  aspect.n_merge = 3;
  aspect.min_tokens = 40;
  aspect.max_tokens = 280;
  aspect.pos_size = 64;
  for (const engine::VisionHParams* hp : {&square, &aspect}) {
    engine::EncoderInput in;
    try {
      in = engine::fit_image(img, *hp);
    } catch (const engine::ImageError&) {
      if (hp == &square) std::abort();  // (only an aspect too extreme for the tables may be refused)
      continue;
    }
    if (!hp->accepts(in.width, in.height) || in.pixels.size() != static_cast<size_t>(3 * in.width * in.height)) {
      std::fprintf(stderr, "fuzz_image: fitted %lld x %lld\n", static_cast<long long>(in.width),
                   static_cast<long long>(in.height));
      std::abort();
    }
    for (float v : in.pixels) {
      if (!std::isfinite(v) || v < -1.0f || v > 1.0f) {
        std::fprintf(stderr, "fuzz_image: fitted value %f outside [-1, 1]\n", static_cast<double>(v));
        std::abort();
      }
    }
  }
  return 0;
}
