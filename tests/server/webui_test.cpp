// The chat page's routes (server/handlers/webui.cpp over webui/'s embedded files): the page at /
// for browsers only, every file it names served with its type, gzip when asked, ETag revalidation,
// no API key needed for the page itself, and --no-webui.
#include <regex>
#include <set>

#include "tests/server/fixture.h"

namespace ggufd::test {
namespace {

const std::map<std::string, std::string> kBrowser = {{"accept", "text/html,application/xhtml+xml,*/*;q=0.8"}};

std::string header(const HttpReply& r, const std::string& name) {
  const auto it = r.headers.find(name);
  return it == r.headers.end() ? std::string() : it->second;
}

// Every `pattern` match's first group in `text`.
std::set<std::string> references(const std::string& text, const std::string& pattern) {
  std::set<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it) {
    out.insert((*it)[1]);
  }
  return out;
}

TEST_F(ServerTest, WebUiPageGoesToBrowsersAndTheLivenessTextToOtherClients) {
  const HttpReply page = http_request(port(), "GET", "/", "", kBrowser);
  ASSERT_EQ(page.status, 200);
  EXPECT_EQ(header(page, "content-type"), "text/html; charset=utf-8");
  EXPECT_NE(page.body.find("<script defer src=\"webui/app.js\"></script>"), std::string::npos) << page.body;
  const std::string policy = header(page, "content-security-policy");
  EXPECT_NE(policy.find("script-src 'self'"), std::string::npos) << policy;
  EXPECT_EQ(policy.find("unsafe-eval"), std::string::npos) << policy;
  EXPECT_EQ(http_request(port(), "GET", "/").body, "ggufd is running");  // curl, Ollama's clients
  EXPECT_EQ(http_request(port(), "GET", "/", "", {{"accept", "*/*"}}).body, "ggufd is running");
}

TEST_F(ServerTest, WebUiServesEveryFileThePageAndItsStylesName) {
  const std::string html = http_request(port(), "GET", "/", "", kBrowser).body;
  const std::set<std::string> files = references(html, R"((?:src|href)="(webui/[^"]+)\")");
  ASSERT_EQ(files.size(), 4u) << html;  // app.js, app.css, katex.css, favicon.svg
  const std::map<std::string, std::string> types = {{".js", "text/javascript; charset=utf-8"},
                                                    {".css", "text/css; charset=utf-8"},
                                                    {".svg", "image/svg+xml"}};
  for (const std::string& f : files) {
    const HttpReply r = http_request(port(), "GET", "/" + f);
    ASSERT_EQ(r.status, 200) << f;
    EXPECT_EQ(header(r, "content-type"), types.at(f.substr(f.rfind('.')))) << f;
    EXPECT_EQ(header(r, "x-content-type-options"), "nosniff") << f;
    EXPECT_GT(r.body.size(), 100u) << f;
  }
  // KaTeX's style sheet names its fonts relative to itself; the browser takes the woff2 ones.
  const std::string katex = http_request(port(), "GET", "/webui/katex.css").body;
  const std::set<std::string> fonts = references(katex, R"(url\((fonts/[^)]+\.woff2)\))");
  EXPECT_GE(fonts.size(), 15u);
  for (const std::string& f : fonts) {
    const HttpReply r = http_request(port(), "GET", "/webui/" + f, "", {{"accept-encoding", "gzip"}});
    ASSERT_EQ(r.status, 200) << f;
    EXPECT_EQ(header(r, "content-type"), "font/woff2") << f;
    EXPECT_EQ(header(r, "content-encoding"), "") << f << ": woff2 is compressed already";
    EXPECT_EQ(r.body.substr(0, 4), "wOF2") << f;
  }
}

TEST_F(ServerTest, WebUiSendsGzipToClientsThatTakeItAndRevalidatesWithTheETag) {
  const HttpReply plain = http_request(port(), "GET", "/webui/app.js");
  const HttpReply gz = http_request(port(), "GET", "/webui/app.js", "", {{"accept-encoding", "gzip, deflate, br"}});
  ASSERT_EQ(plain.status, 200);
  ASSERT_EQ(gz.status, 200);
  EXPECT_EQ(header(plain, "content-encoding"), "");
  EXPECT_EQ(header(gz, "content-encoding"), "gzip");
  EXPECT_EQ(gz.body.substr(0, 2), "\x1f\x8b");
  EXPECT_LT(gz.body.size() * 2, plain.body.size());
  EXPECT_EQ(header(gz, "vary"), "Accept-Encoding");
  const std::string etag = header(plain, "etag");
  ASSERT_EQ(etag.size(), 18u) << etag;
  EXPECT_EQ(header(gz, "etag"), etag) << "one ETag per file, whatever its encoding";
  EXPECT_EQ(header(plain, "cache-control"), "no-cache");
  const HttpReply again = http_request(port(), "GET", "/webui/app.js", "", {{"if-none-match", etag}});
  EXPECT_EQ(again.status, 304);
  EXPECT_EQ(again.body, "");
  EXPECT_EQ(http_request(port(), "GET", "/webui/app.js", "", {{"if-none-match", "\"0\""}}).status, 200);
}

TEST_F(ServerTest, WebUiAnswersUnknownFilesWith404) {
  for (const char* path : {"/webui/nope.js", "/webui/index.html", "/webui/../index.html", "/webui/fonts/x.woff2"}) {
    const HttpReply r = http_request(port(), "GET", path);
    EXPECT_EQ(r.status, 404) << path;
    EXPECT_EQ(r.json()["error"]["code"], "not_found") << path << ": " << r.body;
  }
}

TEST_F(ServerTest, HeadAnswersWithTheGetHeadAndNoBody) {
  for (const char* path : {"/webui/app.js", "/webui/favicon.svg", "/v1/models", "/health"}) {
    for (const std::map<std::string, std::string>& h : {std::map<std::string, std::string>{},
                                                         std::map<std::string, std::string>{{"accept-encoding", "gzip"}}}) {
      const HttpReply get = http_request(port(), "GET", path, "", h);
      const HttpReply head = http_request(port(), "HEAD", path, "", h);
      ASSERT_EQ(get.status, 200) << path;
      EXPECT_EQ(head.status, 200) << path;
      EXPECT_EQ(head.body, "") << path;
      EXPECT_EQ(header(head, "content-length"), std::to_string(get.body.size())) << path;
      EXPECT_EQ(header(head, "content-type"), header(get, "content-type")) << path;
      EXPECT_EQ(header(head, "content-encoding"), header(get, "content-encoding")) << path;
    }
  }
  EXPECT_EQ(http_request(port(), "HEAD", "/webui/nope.js").status, 404);
  EXPECT_EQ(http_request(port(), "HEAD", "/v1/chat/completions").status, 405);  // a POST route
}

TEST(WebUi, CorsKeepsTheFilesVaryOnAcceptEncoding) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.http.cors_origins = {"https://app.example"}; });
  ASSERT_TRUE(s->ready());
  const HttpReply r = http_request(s->port(), "GET", "/webui/app.js", "",
                                   {{"origin", "https://app.example"}, {"accept-encoding", "gzip"}});
  ASSERT_EQ(r.status, 200);
  EXPECT_EQ(header(r, "access-control-allow-origin"), "https://app.example");
  EXPECT_EQ(header(r, "vary"), "Accept-Encoding, Origin");
}

TEST(WebUi, PageNeedsNoApiKeyButItsRequestsDo) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.http.api_keys = {"sekrit"}; });
  ASSERT_TRUE(s->ready());
  EXPECT_EQ(http_request(s->port(), "GET", "/", "", kBrowser).status, 200);
  EXPECT_EQ(http_request(s->port(), "GET", "/webui/app.js").status, 200);
  EXPECT_EQ(http_request(s->port(), "GET", "/v1/models").status, 401);
}

TEST(WebUi, NoWebUiLeavesTheLivenessTextOnly) {
  GGUFD_REQUIRE_SHARED(kStories);
  auto s = start_service([](server::ServiceOptions& o) { o.webui = false; });
  ASSERT_TRUE(s->ready());
  const HttpReply root = http_request(s->port(), "GET", "/", "", kBrowser);
  EXPECT_EQ(root.status, 200);
  EXPECT_EQ(root.body, "ggufd is running");
  EXPECT_EQ(http_request(s->port(), "GET", "/webui/app.js").status, 404);
}

}  // namespace
}  // namespace ggufd::test
