#include "server/channel.h"

#include <algorithm>

namespace server {

class Channel::Sink : public engine::TokenSink {
 public:
  Sink(std::shared_ptr<Channel> channel, int index) : channel_(std::move(channel)), index_(index) {}

  void on_token(engine::TokenEvent&& event) override {
    ChannelItem item;
    item.index = index_;
    item.token = std::move(event);
    channel_->push(std::move(item));
  }
  void on_embedding(std::vector<float>&& pooled) override {
    ChannelItem item;
    item.index = index_;
    item.embedding = std::move(pooled);
    channel_->push(std::move(item));
  }
  void on_finish(engine::FinishReason reason, const engine::Usage& usage,
                 const std::string& error) override {
    channel_->count(index_, usage);
    ChannelItem item;
    item.index = index_;
    item.finished = true;
    item.reason = reason;
    item.usage = usage;
    item.error = error;
    channel_->push(std::move(item));
  }
  bool cancelled() const override { return channel_->cancelled(); }

 private:
  std::shared_ptr<Channel> channel_;
  int index_;
};

Channel::Channel(net::any_io_executor strand, Metrics* metrics, int n_per_prompt)
    : strand_(strand), metrics_(metrics), n_per_prompt_(std::max(n_per_prompt, 1)), timer_(strand) {}

void Channel::count(int index, const engine::Usage& usage) {
  if (metrics_ == nullptr) return;
  metrics_->count_tokens(index % n_per_prompt_ == 0 ? usage.prompt_tokens : 0, usage.completion_tokens);
}

std::shared_ptr<engine::TokenSink> Channel::sink(int index) {
  return std::make_shared<Sink>(shared_from_this(), index);
}

void Channel::push(ChannelItem&& item) {
  {
    engine::MutexLock lock(mutex_);
    items_.push_back(std::move(item));
  }
  // Wake the session: the cancel runs on the strand, so it can't slip between the session's
  // "queue empty?" check and its wait.
  net::post(strand_, [self = shared_from_this()] { self->timer_.cancel(); });
}

std::optional<ChannelItem> Channel::pop() {
  engine::MutexLock lock(mutex_);
  if (items_.empty()) return std::nullopt;
  ChannelItem item = std::move(items_.front());
  items_.pop_front();
  return item;
}

net::awaitable<ChannelItem> Channel::receive() {
  for (;;) {
    if (std::optional<ChannelItem> item = pop()) co_return std::move(*item);
    timer_.expires_at(net::steady_timer::time_point::max());
    boost::system::error_code ec;
    co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

net::awaitable<std::optional<ChannelItem>> Channel::receive_for(std::chrono::milliseconds wait) {
  const auto deadline = net::steady_timer::clock_type::now() + wait;
  for (;;) {
    if (std::optional<ChannelItem> item = pop()) co_return item;
    if (net::steady_timer::clock_type::now() >= deadline) co_return std::nullopt;
    timer_.expires_at(deadline);
    boost::system::error_code ec;
    co_await timer_.async_wait(net::redirect_error(net::use_awaitable, ec));
  }
}

}  // namespace server
