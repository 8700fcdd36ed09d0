// hub::fetch, the bounded GET of a client's URL (the server's remote images), against a local
// plain-HTTP origin (tests/support/media_origin.h): the byte limit exactly, an announced size
// refused before the body, status, redirects and schemes, the time limit, cancellation; and the
// model downloads' https-only rule, which the shared libcurl handle keeps.
#include "server/hub/fetch.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server/hub/hub.h"
#include "server/hub/http.h"
#include "tests/support/media_origin.h"

namespace ggufd::test {
namespace {

using Kind = hub::FetchError::Kind;
using Clock = std::chrono::steady_clock;

class HubFetch : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("NO_PROXY", "*", 1);  // libcurl must reach 127.0.0.1 itself
    origin_.reply("/exact", 200, std::string(1000, 'x'), {{"Content-Type", "application/octet-stream"}});
    origin_.reply("/over", 200, std::string(1001, 'x'));
    origin_.route("/over-chunked", [](MediaOrigin::Connection& c) {
      c.send(MediaOrigin::head(200, {{"Transfer-Encoding", "chunked"}}, -1) + "3e9\r\n" + std::string(1001, 'x') +
             "\r\n0\r\n\r\n");
    });
    origin_.reply("/r1", 302, "", {{"Location", "/r2"}});
    origin_.reply("/r2", 302, "", {{"Location", "/r3"}});
    origin_.reply("/r3", 302, "", {{"Location", "/exact"}});
    origin_.reply("/to-ftp", 301, "", {{"Location", "ftp://127.0.0.1/x"}});
  }

  // The FetchError of fetching `url`, or a test failure when it succeeds.
  static hub::FetchError error_of(const std::string& url, const hub::FetchOptions& o) {
    try {
      hub::fetch(url, o);
    } catch (const hub::FetchError& e) {
      return e;
    }
    ADD_FAILURE() << url << " was fetched";
    return hub::FetchError(Kind::kNetwork, "");
  }
  static hub::FetchOptions limit(size_t max_bytes) {
    hub::FetchOptions o;
    o.max_bytes = max_bytes;
    o.timeout_seconds = 5;
    return o;
  }

  MediaOrigin origin_;
};

TEST_F(HubFetch, TakesABodyUpToTheLimitAndNotAByteMore) {
  const hub::Fetched got = hub::fetch(origin_.url("/exact"), limit(1000));
  EXPECT_EQ(got.body, std::string(1000, 'x'));
  EXPECT_EQ(got.content_type, "application/octet-stream");
  hub::FetchError e = error_of(origin_.url("/over"), limit(1000));
  EXPECT_EQ(e.kind(), Kind::kTooLarge);
  EXPECT_STREQ(e.what(), "the answer announces 1001 bytes (Content-Length), more than 1000");
  e = error_of(origin_.url("/over-chunked"), limit(1000));
  EXPECT_EQ(e.kind(), Kind::kTooLarge);
  EXPECT_STREQ(e.what(), "the answer goes on past 1000 bytes");
  EXPECT_EQ(hub::fetch(origin_.url("/over-chunked"), limit(1001)).body.size(), 1001u);
}

TEST_F(HubFetch, AnAnnouncedSizeOverTheLimitEndsTheTransferBeforeItsBody) {
  origin_.route("/huge", [](MediaOrigin::Connection& c) {
    if (!c.send(MediaOrigin::head(200, {}, int64_t{1} << 30))) return;
    const std::string chunk(64 << 10, 'x');
    while (c.sent < (size_t{1} << 30) && c.send(chunk)) {
    }
  });
  const auto start = Clock::now();
  EXPECT_EQ(error_of(origin_.url("/huge"), limit(1 << 20)).kind(), Kind::kTooLarge);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
  while (origin_.finished("/huge") == 0 && Clock::now() - start < std::chrono::seconds(5)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(origin_.finished("/huge"), 1) << "the origin noticed the client had gone";
  EXPECT_LT(origin_.sent("/huge"), size_t{64} << 20) << "only what the socket buffers took";
}

TEST_F(HubFetch, StatusRedirectsAndSchemes) {
  hub::FetchError e = error_of(origin_.url("/nothing-here"), limit(1000));
  EXPECT_EQ(e.kind(), Kind::kStatus);
  EXPECT_STREQ(e.what(), "HTTP 404");
  EXPECT_EQ(hub::fetch(origin_.url("/r1"), limit(1000)).body.size(), 1000u) << "three redirects";
  hub::FetchOptions two = limit(1000);
  two.max_redirects = 2;
  e = error_of(origin_.url("/r1"), two);
  EXPECT_EQ(e.kind(), Kind::kRedirects);
  EXPECT_STREQ(e.what(), "more than 2 redirects");
  EXPECT_EQ(error_of(origin_.url("/to-ftp"), limit(1000)).kind(), Kind::kScheme);
  EXPECT_EQ(origin_.requests("/to-ftp"), 1);
  EXPECT_EQ(error_of("file:///etc/hostname", limit(1000)).kind(), Kind::kScheme);
  EXPECT_EQ(error_of("ftp://127.0.0.1:" + std::to_string(origin_.port()) + "/exact", limit(1000)).kind(), Kind::kScheme);
}

TEST_F(HubFetch, TheTimeLimitAndCancellationEndATrickle) {
  origin_.route("/trickle", [](MediaOrigin::Connection& c) {
    if (!c.send(MediaOrigin::head(200, {}, 100))) return;
    for (int i = 0; i < 100 && c.pause(std::chrono::milliseconds(100)) && c.send("x"); ++i) {
    }
  });
  hub::FetchOptions o = limit(1000);
  o.timeout_seconds = 1;
  auto start = Clock::now();
  hub::FetchError e = error_of(origin_.url("/trickle"), o);
  EXPECT_EQ(e.kind(), Kind::kTimeout);
  EXPECT_STREQ(e.what(), "no complete answer within 1 s");
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2500));
  o.timeout_seconds = 30;
  start = Clock::now();
  o.cancelled = [start] { return Clock::now() - start > std::chrono::milliseconds(300); };
  e = error_of(origin_.url("/trickle"), o);
  EXPECT_EQ(e.kind(), Kind::kCancelled);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));
}

// The handle fetch.h shares with the downloads is https-only unless told: a model's http URL is
// refused before any request.
TEST_F(HubFetch, PublicOnlyRefusesLoopbackBeforeConnecting) {
  hub::FetchOptions o = limit(1000);
  o.public_only = true;
  const hub::FetchError e = error_of(origin_.url("/exact"), o);
  EXPECT_EQ(e.kind(), Kind::kNotPublic) << e.what();
  EXPECT_EQ(std::string(e.what()), "refused to connect to 127.0.0.1, a loopback address");
  EXPECT_EQ(origin_.requests("/exact"), 0);
  o.public_only = false;  // the same URL, allowed
  EXPECT_EQ(hub::fetch(origin_.url("/exact"), o).body.size(), 1000u);
}

TEST(HubAddresses, NonPublicKinds) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"127.0.0.1", "loopback"},        {"127.255.0.9", "loopback"},   {"10.1.2.3", "private"},
      {"172.16.0.1", "private"},        {"172.31.255.255", "private"}, {"172.32.0.1", ""},
      {"192.168.1.1", "private"},       {"169.254.169.254", "link-local"}, {"100.64.0.1", "shared (carrier-grade NAT)"},
      {"100.128.0.1", ""},              {"0.0.0.0", "unspecified"},    {"224.0.0.1", "multicast"},
      {"255.255.255.255", "reserved"},  {"192.0.2.1", "reserved"},     {"198.18.0.1", "reserved"},
      {"8.8.8.8", ""},                  {"1.1.1.1", ""},               {"::1", "loopback"},
      {"::", "unspecified"},            {"::ffff:127.0.0.1", "loopback"}, {"::ffff:8.8.8.8", ""},
      {"64:ff9b::a00:1", "private"},    {"fd00::1", "private"},        {"fe80::1", "link-local"},
      {"ff02::1", "multicast"},         {"2001:db8::1", "reserved"},   {"2606:4700::1111", ""},
      {"not an address", "unparsable"},
  };
  for (const auto& [ip, kind] : cases) EXPECT_EQ(hub::non_public_kind(ip), kind) << ip;
}

TEST_F(HubFetch, ModelDownloadsStayHttpsOnly) {
  try {
    hub::detail::http_get(origin_.url("/exact"), hub::detail::HttpOptions{}, 1 << 20);
    ADD_FAILURE() << "an http URL was fetched for the hub";
  } catch (const hub::HubError& e) {
    EXPECT_NE(std::string(e.what()).find("refused a URL or redirect that is not https"), std::string::npos) << e.what();
  }
  EXPECT_EQ(origin_.requests("/exact"), 0);
}

}  // namespace
}  // namespace ggufd::test
