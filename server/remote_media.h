// Remote images (--allow-remote-media): the http(s) image URLs of a request, fetched on threads of
// their own (hub/fetch.h's bounded GET), so a slow address holds up neither the IO threads nor the
// work pool: the request that named it waits, the others go on. And the two-step preparation of a
// request around them: translate on the work pool, fetch, prepare on the work pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "server/api/app.h"
#include "server/api/core/request.h"
#include "server/api/prompt_images.h"
#include "server/asio.h"
#include "server/http.h"
#include "server/work_pool.h"

namespace server {

struct RemoteMediaOptions {
  int threads = 4;               // transfers at once (the request's URLs go one after another)
  int max_pending = 64;          // transfers running or waiting at most; more: 503 server_busy
  size_t max_bytes = 20 << 20;   // --image-max-bytes
  long timeout_s = 10;           // --remote-media-timeout: per URL, the whole transfer
  long max_redirects = 5;
  bool public_only = true;       // not --remote-media-private: public addresses only (hub::FetchOptions)
};

// Ownership: owns its threads; stop() (or the destructor) ends the transfers under way and joins
// them. Thread-safety: fetch() may be awaited from any coroutine, cancel() called from any thread.
class RemoteMedia {
 public:
  explicit RemoteMedia(RemoteMediaOptions options);
  ~RemoteMedia() { stop(); }
  RemoteMedia(const RemoteMedia&) = delete;
  RemoteMedia& operator=(const RemoteMedia&) = delete;

  // Ends the transfers under way and every later one (a 503): the server is stopping.
  void cancel() { stopping_.store(true); }
  void stop() {
    cancel();
    pool_.stop();
  }

  // The bytes at image.url: a 2xx answer within the limits that is a PNG, JPEG, WebP or GIF
  // image. `gone` (may be null) ends the transfer once set (the client went away); it and `image`
  // must outlive the await. Throws ApiError 400 (code image_fetch_failed) naming image.where, the
  // URL and what went wrong (HTTP status, too large, timed out, a redirect to another scheme, not
  // an image, ...); 503 when max_pending transfers are under way or after cancel().
  net::awaitable<std::string> fetch(const RemoteImage& image, const std::atomic<bool>* gone);

 private:
  std::string fetch_now(const RemoteImage& image, const std::atomic<bool>* gone) const;

  const RemoteMediaOptions options_;
  std::atomic<bool> stopping_{false};
  WorkPool pool_;  // last: its threads stop before what they read
};

// Fetches the conversation's remote images (prompt_images.h remote_images) on app.media, one URL
// after another, and gives each image its bytes; a client that goes away ends the transfer. The
// image count and the projector are checked first (check_image_count), so nothing is fetched for
// a request that would be refused anyway. Throws what RemoteMedia::fetch throws, and a 400 when
// the app fetches nothing (app.media null).
net::awaitable<void> fetch_remote_images(const App& app, RequestContext& ctx, std::vector<Message>& conversation);

// A request made in two steps on the work pool: translate(out) gives the CoreRequest (and puts the
// dialect's own fields in `out`), finish(core, out) prepares it. When the conversation has remote
// images they are fetched in between and finish runs in a second job; otherwise both run in one.
// Throws what the steps and fetch_remote_images throw.
template <class Result, class Translate, class Finish>
net::awaitable<Result> prepare_in_steps(App& app, RequestContext& ctx, Translate translate, Finish finish) {
  Result out;
  CoreRequest core;
  const bool remote = co_await app.work->run([&] {
    core = translate(out);
    if (!remote_images(core.conversation).empty()) return true;
    finish(std::move(core), out);
    return false;
  });
  if (remote) {
    co_await fetch_remote_images(app, ctx, core.conversation);
    co_await app.work->run([&] {
      finish(std::move(core), out);
      return true;
    });
  }
  co_return std::move(out);
}

}  // namespace server
