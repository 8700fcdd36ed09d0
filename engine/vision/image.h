// Images as they arrive (PNG, JPEG, WebP, GIF bytes) decoded into RGB pixels, and fitted to a
// vision encoder's input.
#pragma once

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/vision/projector.h"

namespace engine {

// An 8-bit RGB image, rows top to bottom: rgb (height, width, 3).
struct RgbImage {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<uint8_t> rgb;
};

// What a decode may cost. The declared size is checked before any pixel is decoded, so an image
// that claims 100000 x 100000 pixels is refused without allocating them.
struct ImageLimits {
  int64_t max_bytes = 20 << 20;   // encoded size
  int64_t max_pixels = 1 << 25;   // width * height (33.5 megapixels)
};

// A bad image: the message says what is wrong (format, size, corruption) without a location;
// callers add which part of which request held it.
class ImageError : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// "png", "jpeg", "webp", "gif", or "" for anything else, from the first bytes.
const char* sniff_image(std::span<const uint8_t> bytes);

// Decodes PNG (any bit depth; alpha dropped), JPEG (baseline and progressive), WebP (lossy and
// lossless) and GIF (the first frame) into RGB. Throws ImageError for another format, bytes or
// declared pixels over `limits`, and truncated or corrupt data. Thread-safe.
RgbImage decode_image(std::span<const uint8_t> bytes, const ImageLimits& limits);

// An image fitted to a vision encoder: planar f32 pixels (3, height, width), each channel
// (pixel / 255 - mean) / std.
struct EncoderInput {
  int64_t width = 0;
  int64_t height = 0;
  std::vector<float> pixels;
};

// The size `img` is scaled to, as the projector's fit says (hp.accepts() holds for it). Throws
// ImageError for an aspect ratio the encoder's position tables cannot hold.
void fitted_size(const RgbImage& img, const VisionHParams& hp, int64_t& width, int64_t& height);

// The encoder's input for `img`, fitted as hp.fit says, as llama.cpp's mtmd does with its
// bilinear filter: gemma3 scaled into the square keeping its aspect, centred on black; gemma4v
// scaled to fitted_size() (the same letterbox, which pads at most a pixel or two).
EncoderInput fit_image(const RgbImage& img, const VisionHParams& hp);

// Text beside an image's part in a prompt: tokenized with control tokens parsed, or (`lookup`)
// the one token whose piece is exactly `text` (mtmd's lookup_token).
struct PartText {
  std::string text;
  bool lookup = false;
};

// One encoder input an image becomes, and the text mtmd puts before and after its tokens.
struct ImagePart {
  std::vector<PartText> before, after;
  EncoderInput input;
};

// An image as a prompt takes it, as mtmd lays it out: one part (fit_image's input between the
// projector's begin and end texts), or for kTiles (idefics3) the tiles row by row, each after
// "<fake_token_around_image><row_R_col_C>" and each row but the last ended by "\n", then the
// overview between "\n\n<fake_token_around_image><global-img>" and "<fake_token_around_image>".
// The tiles cut the image scaled (bicubic, letterboxed) so that its longer side is
// hp.longest_edge, each side rounded up to a multiple of image_size; the overview is the image
// stretched (bilinear) to image_size square. Throws ImageError as fit_image.
std::vector<ImagePart> image_parts(const RgbImage& img, const ProjectorTraits& traits, const VisionHParams& hp);
// The texts image_parts() marks `lookup` for this kind of projector: the model's vocabulary must
// have a token for each.
std::vector<std::string> looked_up_texts(const ProjectorTraits& traits);

}  // namespace engine
