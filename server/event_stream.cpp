#include "server/event_stream.h"

#include <string>
#include <vector>

#include "server/api/api_error.h"
#include "server/generation.h"

namespace server {

namespace {

// Streams the channel as SSE events; see make_event_stream.
class EventStream : public ChunkSource {
 public:
  EventStream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt,
              std::shared_ptr<const Formatter> format, App& app, RequestContext& ctx)
      : channel_(std::move(channel)), open_(n_choices), n_per_prompt_(n_per_prompt), format_(std::move(format)),
        stats_(ctx.stats), timer_(*app.metrics, *stats_), keep_alive_(app.settings.keep_alive_ms),
        usage_(static_cast<size_t>(n_choices)), prompt_(static_cast<size_t>(n_choices)),
        started_(static_cast<size_t>(n_choices), false) {
    pending_ = format_->stream_open();
    if (!format_->start_after_prompt()) {
      for (int i = 0; i < n_choices; ++i) start(i);
    }
  }

  net::awaitable<std::optional<std::string>> next() override {
    while (pending_.empty()) {
      if (open_ == 0) {
        if (done_) co_return std::nullopt;
        done_ = true;
        pending_ += format_->stream_close(usage_totals(*stats_, usage_, n_per_prompt_), failed_);
        if (pending_.empty()) co_return std::nullopt;
        break;
      }
      std::optional<ChannelItem> got = co_await receive();
      if (!got) {
        pending_ = format_->keep_alive();
        if (pending_.empty()) continue;
        break;
      }
      handle(std::move(*got));
    }
    std::string out = std::move(pending_);
    pending_.clear();
    co_return out;
  }

  void cancel() override { channel_->cancel(); }

 private:
  // The next event; nullopt when none came within the keep-alive interval.
  net::awaitable<std::optional<ChannelItem>> receive() {
    if (keep_alive_ <= 0) co_return co_await channel_->receive();
    co_return co_await channel_->receive_for(std::chrono::milliseconds(keep_alive_));
  }

  void handle(ChannelItem item) {
    const auto i = static_cast<size_t>(item.index);
    if (item.token.prompt) {
      prompt_[i].push_back(std::move(item.token));
      return;
    }
    if (!started_[i]) start(item.index);
    if (!item.finished) {
      if (item.token.token >= 0) timer_.on_token();
      if (!item.token.text.empty() || item.token.token >= 0) pending_ += format_->stream_token(item.index, item.token);
      return;
    }
    --open_;
    usage_[i] = item.usage;
    if (std::optional<ApiError> e = choice_error(item)) {
      if (!failed_) pending_ += format_->stream_fail(*e);
      failed_ = true;
    } else {
      pending_ += format_->stream_finish(item.index, item.reason, item.usage);
    }
  }

  void start(int index) {
    const auto i = static_cast<size_t>(index);
    started_[i] = true;
    pending_ += format_->stream_start(index, prompt_[i]);
    prompt_[i].clear();
  }

  std::shared_ptr<Channel> channel_;
  int open_;
  int n_per_prompt_;
  std::shared_ptr<const Formatter> format_;
  std::shared_ptr<RequestStats> stats_;
  TokenTimer timer_;
  int64_t keep_alive_;                                   // ms; 0: none
  std::vector<engine::Usage> usage_;
  std::vector<std::vector<engine::TokenEvent>> prompt_;  // scored prompt tokens not yet sent, per choice
  std::vector<bool> started_;                            // whether its start is out, per choice
  std::string pending_;
  bool done_ = false;
  bool failed_ = false;
};

class FixedStream : public ChunkSource {
 public:
  explicit FixedStream(std::string body) : body_(std::move(body)) {}
  net::awaitable<std::optional<std::string>> next() override {
    if (sent_) co_return std::nullopt;
    sent_ = true;
    co_return std::move(body_);
  }
  void cancel() override {}

 private:
  std::string body_;
  bool sent_ = false;
};

}  // namespace

std::shared_ptr<ChunkSource> make_fixed_stream(std::string body) { return std::make_shared<FixedStream>(std::move(body)); }

std::shared_ptr<ChunkSource> make_event_stream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt,
                                               std::shared_ptr<const Formatter> format, App& app,
                                               RequestContext& ctx) {
  return std::make_shared<EventStream>(std::move(channel), n_choices, n_per_prompt, std::move(format), app, ctx);
}

}  // namespace server
