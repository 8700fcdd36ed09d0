#include "server/api/prompt_images.h"

#include <memory>
#include <random>

#include "engine/runtime/image_prompt.h"
#include "engine/vision/projector.h"
#include "server/api/api_error.h"

namespace server {

namespace {

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+' || c == '-') return 62;
  if (c == '/' || c == '_') return 63;
  return -1;
}

// FNV-1a over the decoded pixels, their size and the projector file: the image's identity in the
// prefix cache (the same picture re-encoded as another format is the same image).
uint64_t image_hash(const engine::RgbImage& img, const std::string& projector) {
  uint64_t h = 1469598103934665603ull;
  const auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  mix(&img.width, sizeof img.width);
  mix(&img.height, sizeof img.height);
  mix(img.rgb.data(), img.rgb.size());
  mix(projector.data(), projector.size());
  return h;
}

}  // namespace

const std::string& image_placeholder() {
  static const std::string kPlaceholder = [] {
    std::random_device rd;
    std::mt19937_64 gen((static_cast<uint64_t>(rd()) << 32) ^ rd());
    const uint64_t nonce = gen();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(nonce));
    return "\xEF\xB7\x91image-" + std::string(hex) + "\xEF\xB7\x91";  // U+FDD1 ... U+FDD1
  }();
  return kPlaceholder;
}

std::string decode_base64(std::string_view b64, const std::string& where) {
  std::string out;
  out.reserve(b64.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t i = 0;
  for (; i < b64.size() && b64[i] != '='; ++i) {
    const char c = b64[i];
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    const int v = base64_value(c);
    if (v < 0) throw invalid_field(where, where + ": the base64 data holds '" + std::string(1, c) + "' at byte " + std::to_string(i));
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  for (; i < b64.size(); ++i) {
    if (b64[i] != '=' && b64[i] != '\n' && b64[i] != '\r') {
      throw invalid_field(where, where + ": the base64 data goes on after its padding, at byte " + std::to_string(i));
    }
  }
  return out;
}

std::string image_url_bytes(std::string_view url, const std::string& where) {
  if (url.rfind("data:", 0) != 0) {
    const std::string shown(url.substr(0, std::min<size_t>(url.size(), 40)));
    throw invalid_field(where, where + ": only data URIs (data:image/png;base64,...) are accepted; this server does not "
                                       "fetch remote images (found \"" + shown + (url.size() > 40 ? "...\")" : "\")"));
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos || url.substr(0, comma).find(";base64") == std::string_view::npos) {
    throw invalid_field(where, where + ": the data URI is not base64 (expected data:image/...;base64,...)");
  }
  return decode_base64(url.substr(comma + 1), where);
}

void check_image_count(const App& app, size_t n_images) {
  if (n_images == 0) return;
  if (!app.vision) {
    throw ApiError(400, "model '" + app.model_id + "' takes no images: it has no vision projector (start ggufd with "
                   "--mmproj FILE, the model's mmproj GGUF)", "invalid_request_error", std::nullopt, "image_input_not_supported");
  }
  if (n_images > static_cast<size_t>(app.settings.max_images)) {
    throw ApiError(400, "the request holds " + std::to_string(n_images) + " images, more than the " +
                   std::to_string(app.settings.max_images) + " this server takes (--image-max-count)",
                   "invalid_request_error", std::nullopt, "too_many_images");
  }
}

std::vector<int32_t> tokenize_with_images(const App& app, RenderedChat chat, const std::vector<ImageInput>& images,
                                          std::vector<engine::PromptImage>& out) {
  check_image_count(app, images.size());
  chat = without_leading_bos(app, std::move(chat));
  const std::string& ph = image_placeholder();
  std::vector<engine::TextPiece> pieces;
  size_t from = 0;
  for (size_t p = chat.text.find(ph);; p = chat.text.find(ph, p + ph.size())) {
    const size_t to = p == std::string::npos ? chat.text.size() : p;
    engine::TextPiece piece{chat.text.substr(from, to - from), {}};
    for (size_t g : chat.guarded) {
      if (g >= from && g <= to) piece.guarded.push_back(g - from);
    }
    pieces.push_back(std::move(piece));
    if (p == std::string::npos) break;
    from = p + ph.size();
  }
  if (pieces.size() != images.size() + 1) {
    throw ApiError(400, "the chat template placed " + std::to_string(pieces.size() - 1) + " of the request's " +
                   std::to_string(images.size()) + " images; put images in user messages",
                   "invalid_request_error", std::nullopt, "image_not_placed");
  }
  const engine::VisionModel& vision = *app.vision;
  std::vector<int32_t> ids;
  std::vector<int64_t> counts;
  for (const ImageInput& in : images) {
    engine::RgbImage img;
    try {
      img = engine::decode_image(std::span(reinterpret_cast<const uint8_t*>(in.bytes.data()), in.bytes.size()),
                                 app.settings.image_limits);
    } catch (const engine::ImageError& e) {
      throw invalid_field(in.where, in.where + ": " + e.what());
    }
    engine::PromptImage im;
    try {
      im.input = std::make_shared<const engine::EncoderInput>(engine::fit_image(img, vision.hparams()));
    } catch (const engine::ImageError& e) {
      throw invalid_field(in.where, in.where + ": " + e.what());
    }
    im.n_tokens = vision.hparams().n_tokens(im.input->width, im.input->height);
    counts.push_back(im.n_tokens);
    ids.push_back(engine::image_token_id(image_hash(img, vision.files().first().name()), app.n_vocab));
    out.push_back(std::move(im));
  }
  std::vector<int64_t> at;
  std::vector<int32_t> tokens =
      engine::tokenize_around_images(*app.tokenizer, vision.traits(), pieces, ids, counts, at);
  for (size_t k = 0; k < at.size(); ++k) out[out.size() - at.size() + k].at = at[k];
  return tokens;
}

}  // namespace server
