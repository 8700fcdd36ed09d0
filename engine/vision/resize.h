// Resampling an RgbImage as llama.cpp's mtmd does (its img_tool), so that an image reaches the
// encoder with the same pixels: the filters, the letterbox around them, cropping, and the
// normalized planar input. Internal to engine/vision (image.cpp, image_parts.cpp).
#pragma once

#include <cstdint>

#include "engine/vision/image.h"

namespace engine {

enum class Resize {
  kBilinear,  // corners aligned: output x samples x (w - 1) / (tw - 1); truncated to 8 bits
  kBicubic,   // mtmd's (from ViT.cpp): output x samples x w / tw, a cubic through 4 x 4 neighbours
              // clamped at the edges, rounded and clamped to 8 bits
};

// dst (th, tw, 3) = src scaled by `filter`.
RgbImage resize(const RgbImage& src, int64_t tw, int64_t th, Resize filter);

// src scaled into W x H keeping its aspect (scale min(W / w, H / h) in f32, the scaled size rounded
// up and capped, as mtmd's PAD_CEIL) and centred on black; a src of that size is copied as is.
RgbImage letterbox(const RgbImage& src, int64_t W, int64_t H, Resize filter);

// The w x h pixels of src at (x, y) (inside it).
RgbImage crop(const RgbImage& src, int64_t x, int64_t y, int64_t w, int64_t h);

// x rounded to a multiple of a (down, to the nearest or up), in f32 as mtmd computes its sizes.
enum class Round { kDown, kNearest, kUp };
int64_t round_to_multiple(float x, int64_t a, Round how);

// The encoder's planar input (3, h, w): (v / 255 - mean[c]) / std[c].
EncoderInput to_input(const RgbImage& img, const VisionHParams& hp);

}  // namespace engine
