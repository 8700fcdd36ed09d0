#include "server/api/prompt_images.h"

#include <algorithm>
#include <cctype>
#include <memory>
#include <random>

#include "engine/runtime/image_prompt.h"
#include "engine/vision/projector.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"

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

std::string data_uri_bytes(std::string_view uri, const std::string& where) {
  const size_t comma = uri.find(',');
  if (uri.rfind("data:", 0) != 0 || comma == std::string_view::npos ||
      uri.substr(0, comma).find(";base64") == std::string_view::npos) {
    throw invalid_field(where, where + ": the data URI is not base64 (expected data:image/...;base64,...)");
  }
  return decode_base64(uri.substr(comma + 1), where);
}

ImageInput image_from_url(const App& app, std::string_view url, const std::string& where) {
  if (url.rfind("data:", 0) == 0) return {data_uri_bytes(url, where), where, ""};
  const auto scheme_is = [&](std::string_view scheme) {
    if (url.size() < scheme.size()) return false;
    for (size_t i = 0; i < scheme.size(); ++i) {
      if (std::tolower(static_cast<unsigned char>(url[i])) != scheme[i]) return false;
    }
    return true;
  };
  const std::string shown = "\"" + excerpt(url, 80) + "\"";
  if (!scheme_is("http://") && !scheme_is("https://")) {
    throw invalid_field(where, where + ": an image URL must be a data URI (data:image/png;base64,...)" +
                                   (app.settings.allow_remote_media ? " or an http or https URL" : "") + " (found " +
                                   shown + ")");
  }
  if (!app.settings.allow_remote_media) {
    throw ApiError(400, where + ": this server fetches remote images (http and https URLs) only when started with "
                   "--allow-remote-media; send the image inline as base64 instead (found " + shown + ")",
                   "invalid_request_error", where, "remote_image_not_allowed");
  }
  if (url.size() > kMaxImageUrl) {
    throw invalid_field(where, where + ": the image URL has " + std::to_string(url.size()) + " bytes, more than " +
                                   std::to_string(kMaxImageUrl));
  }
  for (size_t i = 0; i < url.size(); ++i) {
    const auto c = static_cast<unsigned char>(url[i]);
    if (c <= 0x20 || c == 0x7f) {
      throw invalid_field(where, where + ": the image URL holds a space or control character at byte " + std::to_string(i) +
                                     " (percent-encode it)");
    }
  }
  return {"", where, std::string(url)};
}

std::vector<RemoteImage> remote_images(const std::vector<Message>& conversation) {
  std::vector<RemoteImage> out;
  for (const Message& m : conversation) {
    for (const ImageInput& im : m.images) {
      if (im.url.empty() || !im.bytes.empty()) continue;
      const bool seen = std::any_of(out.begin(), out.end(), [&](const RemoteImage& r) { return r.url == im.url; });
      if (!seen) out.push_back({im.url, im.where});
    }
  }
  return out;
}

void set_remote_image(std::vector<Message>& conversation, const std::string& url, const std::string& bytes) {
  for (Message& m : conversation) {
    for (ImageInput& im : m.images) {
      if (im.url == url && im.bytes.empty()) im.bytes = bytes;
    }
  }
}

void copy_remote_images(const std::vector<Message>& from, std::vector<Message>& to) {
  for (const RemoteImage& r : remote_images(to)) {
    for (const Message& m : from) {
      const auto it = std::find_if(m.images.begin(), m.images.end(),
                                   [&](const ImageInput& im) { return im.url == r.url && !im.bytes.empty(); });
      if (it != m.images.end()) {
        set_remote_image(to, r.url, it->bytes);
        break;
      }
    }
  }
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
  std::vector<std::vector<engine::PromptPart>> parts;  // per image
  int64_t image_positions = 0;  // of the images so far: past the context, the rest is not decoded
  for (const ImageInput& in : images) {
    if (in.bytes.empty() && !in.url.empty()) {
      throw invalid_field(in.where, in.where + ": the remote image \"" + excerpt(in.url, 80) + "\" was not fetched "
                                               "(this endpoint takes inline images only)");
    }
    engine::RgbImage img;
    try {
      img = engine::decode_image(std::span(reinterpret_cast<const uint8_t*>(in.bytes.data()), in.bytes.size()),
                                 app.settings.image_limits);
    } catch (const engine::ImageError& e) {
      throw invalid_field(in.where, in.where + ": " + e.what());
    }
    std::vector<engine::ImagePart> image_parts;
    try {
      image_parts = engine::image_parts(img, vision.traits(), vision.hparams());
    } catch (const engine::ImageError& e) {
      throw invalid_field(in.where, in.where + ": " + e.what());
    }
    // each part's positions hold an id of the image's hash and the part's index (idefics3's tiles)
    const uint64_t hash = image_hash(img, vision.files().first().name());
    parts.emplace_back();
    for (size_t k = 0; k < image_parts.size(); ++k) {
      engine::PromptImage im;
      im.n_tokens = vision.hparams().n_tokens(image_parts[k].input.width, image_parts[k].input.height);
      const int32_t id = engine::image_token_id(hash + k * 0x9e3779b97f4a7c15ull, app.n_vocab);
      parts.back().push_back({std::move(image_parts[k].before), std::move(image_parts[k].after), id, im.n_tokens});
      im.input = std::make_shared<const engine::EncoderInput>(std::move(image_parts[k].input));
      out.push_back(std::move(im));
      image_positions += parts.back().back().n_tokens;
    }
    // (an image cut in tiles holds many parts: the context, not --image-max-count, bounds them)
    if (image_positions >= app.settings.n_ctx) {
      throw context_exceeded(app.settings.n_ctx,
                             "the images up to " + in.where + " take " + std::to_string(image_positions) + " of them",
                             "send fewer or smaller images");
    }
  }
  std::vector<int64_t> at;
  std::vector<int32_t> tokens = engine::tokenize_around_images(*app.tokenizer, app.layout_tokens, pieces, parts, at);
  for (size_t k = 0; k < at.size(); ++k) out[out.size() - at.size() + k].at = at[k];
  return tokens;
}

}  // namespace server
