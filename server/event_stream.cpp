#include "server/event_stream.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/api/api_error.h"
#include "server/api/request_json.h"
#include "server/generation.h"

namespace server {

using nlohmann::json;

namespace {

// Streams the channel as SSE events; see make_event_stream.
class EventStream : public ChunkSource {
 public:
  EventStream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt, bool include_usage,
              std::shared_ptr<const ResponseFormatter> format, App& app, RequestContext& ctx)
      : channel_(std::move(channel)), open_(n_choices), n_per_prompt_(n_per_prompt),
        include_usage_(include_usage), format_(std::move(format)), stats_(ctx.stats),
        timer_(app.metrics, *stats_), usage_(static_cast<size_t>(n_choices)),
        prompt_(static_cast<size_t>(n_choices)), started_(static_cast<size_t>(n_choices), false) {
    if (!format_->start_after_prompt()) {
      for (int i = 0; i < n_choices; ++i) start(i);
    }
  }

  net::awaitable<std::optional<std::string>> next() override {
    while (pending_.empty()) {
      if (open_ == 0) {
        if (done_) co_return std::nullopt;
        done_ = true;
        const json usage = usage_json(*stats_, usage_, n_per_prompt_);
        if (include_usage_ && !failed_) pending_ += event(format_->usage_chunk(usage));
        pending_ += "data: [DONE]\n\n";
        break;
      }
      ChannelItem item = co_await channel_->receive();
      if (item.token.prompt) {
        prompt_[static_cast<size_t>(item.index)].push_back(std::move(item.token));
        continue;
      }
      if (!started_[static_cast<size_t>(item.index)]) start(item.index);
      if (!item.finished) {
        if (item.token.token >= 0) timer_.on_token();
        if (!item.token.text.empty() || item.token.token >= 0) {
          add(format_->token_chunk(item.index, item.token));
        }
        continue;
      }
      --open_;
      usage_[static_cast<size_t>(item.index)] = item.usage;
      if (std::optional<ApiError> e = choice_error(item)) {
        if (!failed_) pending_ += event(error_json(*e));
        failed_ = true;
      } else {
        add(format_->finish_chunk(item.index, item.reason));
      }
    }
    std::string out = std::move(pending_);
    pending_.clear();
    co_return out;
  }

  void cancel() override { channel_->cancel(); }

 private:
  static std::string event(const json& j) { return "data: " + dump_json(j) + "\n\n"; }

  // A formatter's answer: nothing (null), one chunk, or an array of chunks.
  void add(const json& chunks) {
    if (chunks.is_null()) return;
    if (!chunks.is_array()) {
      pending_ += event(chunks);
      return;
    }
    for (const json& c : chunks) pending_ += event(c);
  }

  void start(int index) {
    const auto i = static_cast<size_t>(index);
    started_[i] = true;
    const json chunk = format_->start_chunk(index, prompt_[i]);
    if (!chunk.is_null()) pending_ += event(chunk);
    prompt_[i].clear();
  }

  std::shared_ptr<Channel> channel_;
  int open_;
  int n_per_prompt_;
  bool include_usage_;
  std::shared_ptr<const ResponseFormatter> format_;
  std::shared_ptr<RequestStats> stats_;
  TokenTimer timer_;
  std::vector<engine::Usage> usage_;
  std::vector<std::vector<engine::TokenEvent>> prompt_;  // scored prompt tokens not yet sent, per choice
  std::vector<bool> started_;                            // whether its start chunk is out, per choice
  std::string pending_;
  bool done_ = false;
  bool failed_ = false;
};

}  // namespace

std::shared_ptr<ChunkSource> make_event_stream(std::shared_ptr<Channel> channel, int n_choices, int n_per_prompt,
                                               bool include_usage, std::shared_ptr<const ResponseFormatter> format,
                                               App& app, RequestContext& ctx) {
  return std::make_shared<EventStream>(std::move(channel), n_choices, n_per_prompt, include_usage, std::move(format),
                                       app, ctx);
}

}  // namespace server
