// Image decoding through Debian's libstb (PNG, JPEG, GIF) and libwebp, with the declared size
// checked first; then the fit to the encoder's square input.
#include "engine/vision/image.h"

#include "engine/vision/resize.h"

#include <stb_image.h>
#include <webp/decode.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

namespace engine {

namespace {

bool starts_with(std::span<const uint8_t> b, size_t at, const char* magic) {
  const size_t n = std::strlen(magic);
  return b.size() >= at + n && std::memcmp(b.data() + at, magic, n) == 0;
}

void check_size(int64_t w, int64_t h, const ImageLimits& limits, const char* format) {
  if (w <= 0 || h <= 0) throw ImageError(std::string("the ") + format + " image declares no pixels");
  if (w > limits.max_pixels / h) {
    throw ImageError(std::string("the ") + format + " image declares " + std::to_string(w) + " x " +
                     std::to_string(h) + " pixels, over the limit of " + std::to_string(limits.max_pixels));
  }
}

uint32_t be16(const uint8_t* p) { return static_cast<uint32_t>(p[0]) << 8 | p[1]; }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }

// The size the header declares, read here rather than by stb (which refuses anything over a
// gigabyte of pixels with "unknown image type"): PNG's IHDR, GIF's logical screen, JPEG's first
// start-of-frame. False when the header is too short to say.
bool declared_size(std::span<const uint8_t> b, const std::string& format, int64_t& w, int64_t& h) {
  if (format == "png" && b.size() >= 24) {
    w = be32(&b[16]);
    h = be32(&b[20]);
    return true;
  }
  if (format == "gif" && b.size() >= 10) {
    w = b[6] | b[7] << 8;
    h = b[8] | b[9] << 8;
    return true;
  }
  if (format == "jpeg") {
    for (size_t i = 2; i + 9 < b.size();) {  // markers FF xx, each segment with its 2-byte length
      if (b[i] != 0xff) return false;
      const uint8_t m = b[i + 1];
      if (m == 0xff) {
        ++i;
        continue;
      }
      if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
        h = be16(&b[i + 5]);
        w = be16(&b[i + 7]);
        return true;
      }
      if (m == 0xda || m == 0xd9) return false;  // scan data or the end before any frame
      i += 2 + be16(&b[i + 2]);
    }
  }
  return false;
}

RgbImage decode_stb(std::span<const uint8_t> bytes, const ImageLimits& limits, const std::string& format_name) {
  const char* format = format_name.c_str();
  int64_t dw = 0, dh = 0;
  if (declared_size(bytes, format_name, dw, dh)) check_size(dw, dh, limits, format);
  const auto len = static_cast<int>(bytes.size());
  int w = 0, h = 0, channels = 0;
  if (!stbi_info_from_memory(bytes.data(), len, &w, &h, &channels)) {
    throw ImageError(std::string("the ") + format + " image's header is truncated or corrupt (" +
                     stbi_failure_reason() + ")");
  }
  check_size(w, h, limits, format);
  std::unique_ptr<stbi_uc, void (*)(void*)> px(stbi_load_from_memory(bytes.data(), len, &w, &h, &channels, 3),
                                               stbi_image_free);
  if (!px) {
    throw ImageError(std::string("the ") + format + " image is truncated or corrupt (" + stbi_failure_reason() + ")");
  }
  RgbImage img{w, h, {}};
  img.rgb.assign(px.get(), px.get() + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  return img;
}

RgbImage decode_webp(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  int w = 0, h = 0;
  if (!WebPGetInfo(bytes.data(), bytes.size(), &w, &h)) throw ImageError("the webp image's header is truncated or corrupt");
  check_size(w, h, limits, "webp");
  std::unique_ptr<uint8_t, void (*)(void*)> px(WebPDecodeRGB(bytes.data(), bytes.size(), &w, &h), WebPFree);
  if (!px) throw ImageError("the webp image is truncated or corrupt");
  RgbImage img{w, h, {}};
  img.rgb.assign(px.get(), px.get() + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  return img;
}

}  // namespace

const char* sniff_image(std::span<const uint8_t> b) {
  if (starts_with(b, 0, "\x89PNG\r\n\x1a\n")) return "png";
  if (starts_with(b, 0, "\xff\xd8\xff")) return "jpeg";
  if (starts_with(b, 0, "GIF87a") || starts_with(b, 0, "GIF89a")) return "gif";
  if (starts_with(b, 0, "RIFF") && starts_with(b, 8, "WEBP")) return "webp";
  return "";
}

RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits) {
  if (static_cast<int64_t>(bytes.size()) > limits.max_bytes) {
    throw ImageError("the image has " + std::to_string(bytes.size()) + " bytes, over the limit of " +
                     std::to_string(limits.max_bytes));
  }
  const std::string format = sniff_image(bytes);
  if (format.empty()) throw ImageError("the data is not a PNG, JPEG, WebP or GIF image");
  if (bytes.size() > static_cast<size_t>(INT32_MAX)) throw ImageError("the image is too large");
  return format == "webp" ? decode_webp(bytes, limits) : decode_stb(bytes, limits, format);
}

void fitted_size(const RgbImage& img, const VisionHParams& hp, int64_t& width, int64_t& height) {
  if (hp.fit != ImageFit::kKeepAspect) {  // (kTiles: one tile; image_parts() makes the image's)
    width = height = hp.image_size;
    return;
  }
  // kKeepAspect, as mtmd's calc_size_preserved_ratio (transformers' smart_resize): sides rounded
  // to multiples of a = patch * merge; over max_pixels scaled down (floor), under min_pixels up
  // (ceil), in f32 as mtmd computes it
  const int64_t a = hp.align(), w = img.width, h = img.height;
  const int64_t min_px = hp.min_tokens * a * a, max_px = hp.max_tokens * a * a;
  const auto round_by = [a](float x) { return round_to_multiple(x, a, Round::kNearest); };
  const auto ceil_by = [a](float x) { return round_to_multiple(x, a, Round::kUp); };
  const auto floor_by = [a](float x) { return round_to_multiple(x, a, Round::kDown); };
  int64_t hb = std::max(a, round_by(static_cast<float>(h))), wb = std::max(a, round_by(static_cast<float>(w)));
  if (hb * wb > max_px) {
    const float beta = std::sqrt(static_cast<float>(h * w) / static_cast<float>(max_px));
    hb = std::max(a, floor_by(static_cast<float>(h) / beta));
    wb = std::max(a, floor_by(static_cast<float>(w) / beta));
  } else if (hb * wb < min_px) {
    const float beta = std::sqrt(static_cast<float>(min_px) / static_cast<float>(h * w));
    hb = ceil_by(static_cast<float>(h) * beta);
    wb = ceil_by(static_cast<float>(w) * beta);
  }
  if (!hp.accepts(wb, hb)) {
    throw ImageError("the image's aspect ratio (" + std::to_string(w) + " x " + std::to_string(h) +
                     ") is too extreme for the vision encoder");
  }
  width = wb;
  height = hb;
}

EncoderInput fit_image(const RgbImage& img, const VisionHParams& hp) {
  int64_t W = 0, H = 0;
  fitted_size(img, hp, W, H);
  return to_input(letterbox(img, W, H, Resize::kBilinear), hp);
}

}  // namespace engine
