// The CPU work of requests (JSON parsing, chat-template rendering, tokenization, large responses)
// runs here, so the IO threads only move bytes: /health and /metrics answer at once however busy
// the server is, and one slow request never stalls the other connections.
#pragma once

#include <atomic>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>

#include <boost/asio/async_result.hpp>
#include <boost/asio/thread_pool.hpp>

#include "server/api/api_error.h"
#include "server/asio.h"

namespace server {

// A fixed set of threads with a bounded backlog.
// Ownership: owns its threads; stop() (or the destructor) joins them after the queued work ran.
// Thread-safety: run() may be awaited from any coroutine on any executor.
class WorkPool {
 public:
  WorkPool(int threads, int max_pending) : pool_(static_cast<size_t>(threads)), max_pending_(max_pending) {}
  ~WorkPool() { stop(); }
  WorkPool(const WorkPool&) = delete;
  WorkPool& operator=(const WorkPool&) = delete;

  void stop() { pool_.join(); }

  // Runs f() on a pool thread; the awaiting coroutine resumes on its own executor with the result,
  // or with f's exception rethrown. When max_pending jobs are already waiting or running, throws
  // ApiError 503 (server_busy, Retry-After 1) without running f.
  template <class F>
  net::awaitable<std::invoke_result_t<F&>> run(F f) {
    using R = std::invoke_result_t<F&>;
    if (pending_.fetch_add(1) >= max_pending_) {
      pending_.fetch_sub(1);
      ApiError e(503, "server is busy: too many requests are being prepared; retry later", "server_error",
                 std::nullopt, "server_busy");
      e.retry_after = 1;
      throw e;
    }
    auto initiate = [this, f = std::move(f)](auto handler) mutable {
      net::post(pool_, [this, f = std::move(f), handler = std::move(handler)]() mutable {
        std::exception_ptr error;
        std::optional<R> result;
        try {
          result.emplace(f());
        } catch (...) {
          error = std::current_exception();
        }
        pending_.fetch_sub(1);
        auto executor = net::get_associated_executor(handler);
        net::post(executor, [handler = std::move(handler), error, result = std::move(result)]() mutable {
          std::move(handler)(error, std::move(result));
        });
      });
    };
    std::optional<R> result =
        co_await net::async_initiate<decltype(net::use_awaitable), void(std::exception_ptr, std::optional<R>)>(
            std::move(initiate), net::use_awaitable);
    co_return std::move(*result);
  }

 private:
  net::thread_pool pool_;
  std::atomic<int> pending_{0};
  const int max_pending_;
};

}  // namespace server
