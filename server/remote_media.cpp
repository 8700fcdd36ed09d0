// Remote images fetched off the IO threads and the work pool (see remote_media.h).
#include "server/remote_media.h"

#include <algorithm>
#include <span>

#include "engine/vision/image.h"
#include "server/api/api_error.h"
#include "server/api/request_json.h"
#include "server/hub/fetch.h"

namespace server {

namespace {

ApiError fetch_failed(const RemoteImage& image, const std::string& why) {
  return ApiError(400, image.where + ": cannot use the image at \"" + excerpt(image.url, 80) + "\": " + why,
                  "invalid_request_error", image.where, "image_fetch_failed");
}

}  // namespace

RemoteMedia::RemoteMedia(RemoteMediaOptions options)
    : options_(options), pool_(std::max(1, options.threads), std::max(1, options.max_pending)) {}

std::string RemoteMedia::fetch_now(const RemoteImage& image, const std::atomic<bool>* gone) const {
  hub::FetchOptions o;
  o.max_bytes = options_.max_bytes;
  o.timeout_seconds = options_.timeout_s;
  o.max_redirects = options_.max_redirects;
  o.public_only = options_.public_only;
  o.cancelled = [this, gone] { return stopping_.load() || (gone != nullptr && gone->load()); };
  hub::Fetched got;
  try {
    got = hub::fetch(image.url, o);
  } catch (const hub::FetchError& e) {
    using Kind = hub::FetchError::Kind;
    switch (e.kind()) {
      case Kind::kCancelled:
        throw ApiError(503, "the fetch of " + image.where + "'s image was cancelled: the server is stopping or the "
                            "client went away", "server_error", std::nullopt, "fetch_cancelled");
      case Kind::kTooLarge: throw fetch_failed(image, e.what() + std::string(" (--image-max-bytes)"));
      case Kind::kTimeout: throw fetch_failed(image, e.what() + std::string(" (--remote-media-timeout)"));
      case Kind::kNotPublic: throw fetch_failed(image, e.what() + std::string(" (--remote-media-private)"));
      default: throw fetch_failed(image, e.what());
    }
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(got.body.data());
  if (*engine::sniff_image(std::span(bytes, got.body.size())) == '\0') {
    throw fetch_failed(image, "it is not a PNG, JPEG, WebP or GIF image (Content-Type: " +
                                  (got.content_type.empty() ? std::string("none") : excerpt(got.content_type, 60)) + ")");
  }
  return std::move(got.body);
}

net::awaitable<std::string> RemoteMedia::fetch(const RemoteImage& image, const std::atomic<bool>* gone) {
  if (stopping_.load()) {
    ApiError e(503, "the server is stopping", "server_error", std::nullopt, "server_busy");
    e.retry_after = 1;
    throw e;
  }
  // The job holds pointers only: with GCC 12, moving this coroutine's parameters into the
  // lambda's captures destroyed them twice (valgrind: a double free).
  const RemoteImage* what = &image;
  co_return co_await pool_.run([this, what, gone] { return fetch_now(*what, gone); });
}

net::awaitable<void> fetch_remote_images(const App& app, RequestContext& ctx, std::vector<Message>& conversation) {
  size_t n_images = 0;
  for (const Message& m : conversation) n_images += m.images.size();
  check_image_count(app, n_images);
  const std::vector<RemoteImage> remote = remote_images(conversation);
  if (remote.empty()) co_return;
  if (app.media == nullptr) {
    throw ApiError(400, remote.front().where + ": this server does not fetch remote images (--allow-remote-media)",
                   "invalid_request_error", remote.front().where, "remote_image_not_allowed");
  }
  auto gone = std::make_shared<std::atomic<bool>>(false);
  ctx.disconnect->subscribe([gone] { gone->store(true); });
  for (const RemoteImage& image : remote) {
    const std::string bytes = co_await app.media->fetch(image, gone.get());
    set_remote_image(conversation, image.url, bytes);
  }
}

}  // namespace server
