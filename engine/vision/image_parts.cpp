#include <algorithm>
#include <cmath>
#include <string>

#include "engine/vision/image.h"
#include "engine/vision/resize.h"

namespace engine {

namespace {

// idefics3's texts (mtmd's MTMD_SLICE_TMPL_IDEFICS3, from transformers' processing_idefics3)
constexpr const char* kAround = "<fake_token_around_image>";

// The size the tiles are cut from: the longer side scaled to `longest`, each side then rounded up
// to a multiple of `tile` (f32, as mtmd's calc_size_preserved_ratio).
void refined_size(const RgbImage& img, int64_t tile, int64_t longest, int64_t& w, int64_t& h) {
  const float scale = std::min(static_cast<float>(longest) / static_cast<float>(img.width),
                               static_cast<float>(longest) / static_cast<float>(img.height));
  w = round_to_multiple(static_cast<float>(img.width) * scale, tile, Round::kUp);
  h = round_to_multiple(static_cast<float>(img.height) * scale, tile, Round::kUp);
}

}  // namespace

std::vector<std::string> looked_up_texts(const ProjectorTraits& traits) {
  if (traits.fit != ImageFit::kTiles) return {};
  return {"\n", "\n\n", kAround, "<global-img>"};
}

std::vector<ImagePart> image_parts(const RgbImage& img, const ProjectorTraits& traits, const VisionHParams& hp) {
  std::vector<ImagePart> parts;
  if (hp.fit != ImageFit::kTiles) {
    ImagePart p;
    if (*traits.image_begin != '\0') p.before.push_back({traits.image_begin, false});
    if (*traits.image_end != '\0') p.after.push_back({traits.image_end, false});
    p.input = fit_image(img, hp);
    parts.push_back(std::move(p));
    return parts;
  }
  const int64_t S = hp.image_size;
  if (hp.longest_edge > 0) {
    int64_t W = 0, H = 0;
    refined_size(img, S, hp.longest_edge, W, H);
    if (W <= 0 || H <= 0 || W > hp.longest_edge + S || H > hp.longest_edge + S) {
      throw ImageError("the image's aspect ratio (" + std::to_string(img.width) + " x " + std::to_string(img.height) +
                       ") is too extreme for the vision encoder");
    }
    // tiles (S x S) of the image letterboxed (bicubic) into W x H, row by row
    const RgbImage refined = letterbox(img, W, H, Resize::kBicubic);
    const int64_t cols = W / S, rows = H / S;
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        ImagePart p;
        p.before.push_back({std::string(kAround) + "<row_" + std::to_string(r + 1) + "_col_" + std::to_string(c + 1) + ">",
                            false});
        if (c + 1 == cols && r + 1 < rows) p.after.push_back({"\n", true});
        p.input = to_input(crop(refined, c * S, r * S, S, S), hp);
        parts.push_back(std::move(p));
      }
    }
  }
  // the overview: the whole image stretched (bilinear) to S x S
  ImagePart ov;
  ov.before = {{"\n\n", true}, {kAround, true}, {"<global-img>", true}};
  ov.after = {{kAround, true}};
  ov.input = to_input(img.width == S && img.height == S ? img : resize(img, S, S, Resize::kBilinear), hp);
  parts.push_back(std::move(ov));
  return parts;
}

}  // namespace engine
