#include "engine/vision/resize.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace engine {

namespace {

float lerp(float a, float b, float t) { return a + (b - a) * t; }

// dst (th, tw, 3) = src scaled by mtmd's bilinear filter: corners aligned (output x samples
// x * (src_w - 1) / (tw - 1)), truncated to 8 bits.
RgbImage resize_bilinear(const RgbImage& src, int64_t tw, int64_t th) {
  RgbImage dst{tw, th, std::vector<uint8_t>(static_cast<size_t>(tw * th * 3))};
  const float xr = tw > 1 ? static_cast<float>(src.width - 1) / static_cast<float>(tw - 1) : 0.0f;
  const float yr = th > 1 ? static_cast<float>(src.height - 1) / static_cast<float>(th - 1) : 0.0f;
  const auto at = [&](int64_t y, int64_t x, int c) {
    return static_cast<float>(src.rgb[static_cast<size_t>((y * src.width + x) * 3 + c)]);
  };
  for (int64_t y = 0; y < th; ++y) {
    const float py = yr * static_cast<float>(y);
    const int64_t y0 = std::min(static_cast<int64_t>(py), src.height - 1), y1 = std::min(y0 + 1, src.height - 1);
    const float fy = py - static_cast<float>(y0);
    for (int64_t x = 0; x < tw; ++x) {
      const float px = xr * static_cast<float>(x);
      const int64_t x0 = std::min(static_cast<int64_t>(px), src.width - 1), x1 = std::min(x0 + 1, src.width - 1);
      const float fx = px - static_cast<float>(x0);
      for (int c = 0; c < 3; ++c) {
        const float top = lerp(at(y0, x0, c), at(y0, x1, c), fx);
        const float bottom = lerp(at(y1, x0, c), at(y1, x1, c), fx);
        dst.rgb[static_cast<size_t>((y * tw + x) * 3 + c)] = static_cast<uint8_t>(lerp(top, bottom, fy));
      }
    }
  }
  return dst;
}

// dst (th, tw, 3) = src by mtmd's bicubic filter: output (x, y) samples (x w / tw, y h / th); per
// channel, a cubic along x through the 4 neighbours of each of 4 rows, then one along y through
// those, with clamped indices (f32, as mtmd computes it).
RgbImage resize_bicubic(const RgbImage& src, int64_t tw, int64_t th) {
  RgbImage dst{tw, th, std::vector<uint8_t>(static_cast<size_t>(tw * th * 3))};
  const int64_t nx = src.width, ny = src.height;
  const float sx = static_cast<float>(nx) / static_cast<float>(tw), sy = static_cast<float>(ny) / static_cast<float>(th);
  const auto at = [&](int64_t x, int64_t y, int c) {
    x = std::clamp<int64_t>(x, 0, nx - 1);
    y = std::clamp<int64_t>(y, 0, ny - 1);
    return static_cast<float>(src.rgb[static_cast<size_t>((y * nx + x) * 3 + c)]);
  };
  // the cubic through (-1, p0), (0, p1), (1, p2), (2, p3) at t
  const auto cubic = [](float p0, float p1, float p2, float p3, float t) {
    // (the coefficients in double, the polynomial in float: mtmd's rounding)
    const float d0 = p0 - p1, d2 = p2 - p1, d3 = p3 - p1;
    const auto a1 = static_cast<float>(-1.0 / 3 * d0 + d2 - 1.0 / 6 * d3);
    const auto a2 = static_cast<float>(1.0 / 2 * d0 + 1.0 / 2 * d2);
    const auto a3 = static_cast<float>(-1.0 / 6 * d0 - 1.0 / 2 * d2 + 1.0 / 6 * d3);
    return p1 + a1 * t + a2 * t * t + a3 * t * t * t;
  };
  for (int64_t i = 0; i < th; ++i) {
    for (int64_t j = 0; j < tw; ++j) {
      const auto x = static_cast<int64_t>(sx * static_cast<float>(j)), y = static_cast<int64_t>(sy * static_cast<float>(i));
      const float dx = sx * static_cast<float>(j) - static_cast<float>(x);
      const float dy = sy * static_cast<float>(i) - static_cast<float>(y);
      for (int c = 0; c < 3; ++c) {
        float col[4];
        for (int r = 0; r < 4; ++r) {
          const int64_t yy = y - 1 + r;
          col[r] = cubic(at(x - 1, yy, c), at(x, yy, c), at(x + 1, yy, c), at(x + 2, yy, c), dx);
        }
        const float v = cubic(col[0], col[1], col[2], col[3], dy);
        dst.rgb[static_cast<size_t>((i * tw + j) * 3 + c)] = static_cast<uint8_t>(std::min(std::max(std::round(v), 0.0f), 255.0f));
      }
    }
  }
  return dst;
}

}  // namespace

RgbImage resize(const RgbImage& src, int64_t tw, int64_t th, Resize filter) {
  return filter == Resize::kBicubic ? resize_bicubic(src, tw, th) : resize_bilinear(src, tw, th);
}

RgbImage letterbox(const RgbImage& img, int64_t W, int64_t H, Resize filter) {
  RgbImage box{W, H, std::vector<uint8_t>(static_cast<size_t>(W * H * 3), 0)};  // black
  if (img.width == W && img.height == H) {
    box.rgb = img.rgb;
    return box;
  }
  const float scale = std::min(static_cast<float>(W) / static_cast<float>(img.width),
                               static_cast<float>(H) / static_cast<float>(img.height));
  const auto w = std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(img.width) * scale)), W);
  const auto h = std::min<int64_t>(static_cast<int64_t>(std::ceil(static_cast<float>(img.height) * scale)), H);
  const RgbImage scaled = resize(img, w, h, filter);  // (even to its own size, as mtmd)
  const int64_t ox = (W - w) / 2, oy = (H - h) / 2;
  for (int64_t y = 0; y < h; ++y) {
    std::memcpy(&box.rgb[static_cast<size_t>(((y + oy) * W + ox) * 3)], &scaled.rgb[static_cast<size_t>(y * w * 3)],
                static_cast<size_t>(w * 3));
  }
  return box;
}

RgbImage crop(const RgbImage& src, int64_t x, int64_t y, int64_t w, int64_t h) {
  RgbImage out{w, h, std::vector<uint8_t>(static_cast<size_t>(w * h * 3))};
  for (int64_t r = 0; r < h; ++r) {
    std::memcpy(&out.rgb[static_cast<size_t>(r * w * 3)], &src.rgb[static_cast<size_t>(((y + r) * src.width + x) * 3)],
                static_cast<size_t>(w * 3));
  }
  return out;
}

int64_t round_to_multiple(float x, int64_t a, Round how) {
  const float q = x / static_cast<float>(a);
  return static_cast<int64_t>(how == Round::kDown ? std::floor(q) : how == Round::kUp ? std::ceil(q) : std::round(q)) * a;
}

EncoderInput to_input(const RgbImage& img, const VisionHParams& hp) {
  EncoderInput in{img.width, img.height, {}};
  const int64_t n = img.width * img.height;
  in.pixels.resize(static_cast<size_t>(3 * n));
  for (int c = 0; c < 3; ++c) {
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(img.rgb[static_cast<size_t>(i * 3 + c)]) / 255.0f;
      in.pixels[static_cast<size_t>(c * n + i)] = (v - hp.mean[c]) / hp.std[c];
    }
  }
  return in;
}

}  // namespace engine
