// hub::pull when things go wrong: clear errors, nothing partial left in the cache.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/hub/spec.h"
#include "tests/hub/hub_fixture.h"

namespace ggufd::test {
namespace {

TEST_F(HubTest, ChecksumMismatchDeletesTheDownload) {
  start({{"lie_sha", {"org/m/m-Q4_K_M.gguf"}}});
  add("org/m", "m-Q4_K_M.gguf", 1);
  const std::string e = pull_error("org/m", options());
  EXPECT_TRUE(contains(e, "checksum mismatch")) << e;
  EXPECT_TRUE(contains(e, "the hub reports sha256")) << e;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
  EXPECT_TRUE(hub::Cache(cache_).list().empty());
}

TEST_F(HubTest, SizesThatLieAreRejected) {
  start({{"lie_size", {{"org/big/b-Q4_K_M.gguf", 9000}, {"org/small/s-Q4_K_M.gguf", 100}}}});
  add("org/big", "b-Q4_K_M.gguf", 1);    // 4 KiB + header, announced as 9000 bytes
  add("org/small", "s-Q4_K_M.gguf", 2);  // announced as 100 bytes
  std::string e = pull_error("org/big", options());
  EXPECT_TRUE(contains(e, "size mismatch")) << e;
  EXPECT_TRUE(contains(e, "announced 9000 bytes")) << e;
  e = pull_error("org/small", options());
  EXPECT_TRUE(contains(e, "sent more than the 100 bytes")) << e;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(HubTest, AbsurdSizeIsRefusedBeforeDownloading) {
  start({{"lie_size", {{"org/m/m-Q4_K_M.gguf", hub::detail::kMaxFileBytes}}}});
  add("org/m", "m-Q4_K_M.gguf", 1);
  const std::string e = pull_error("org/m", options());
  EXPECT_TRUE(contains(e, "not enough space")) << e;
  EXPECT_EQ(file_requests("m-Q4_K_M.gguf"), 0u);
}

TEST_F(HubTest, NetworkAndProtocolErrorsAreClear) {
  start({{"loop", {"org/loop"}}, {"malformed", {"org/bad"}}});
  add("org/loop", "l-Q4_K_M.gguf", 1);
  add("org/bad", "b-Q4_K_M.gguf", 2);
  std::string e = pull_error("org/loop", options());
  EXPECT_TRUE(contains(e, "too many redirects")) << e;
  e = pull_error("org/bad", options());
  EXPECT_TRUE(contains(e, "malformed JSON")) << e;
  e = pull_error("org/absent", options());
  EXPECT_TRUE(contains(e, "HTTP 404")) << e;
  EXPECT_TRUE(contains(e, "repo org/absent not found")) << e;
  e = pull_error("hf://org/bad/../x.gguf", options());
  EXPECT_TRUE(contains(e, "bad file path")) << e;
  hub::PullOptions untrusted = options();
  untrusted.ca_file.clear();  // the system's CAs do not know the test CA
  e = pull_error("org/loop", untrusted);
  EXPECT_TRUE(contains(e, "TLS certificate check failed")) << e;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

TEST_F(HubTest, GivesUpAfterTheRetriesAndKeepsThePartForResume) {
  start({{"cut_after", {{"org/m/m-Q4_K_M.gguf", 1000}}}});
  add("org/m", "m-Q4_K_M.gguf", 1);
  hub::PullOptions o = options();
  o.retries = 0;
  const std::string e = pull_error("org/m", o);
  EXPECT_TRUE(contains(e, "failed after 1 attempts")) << e;
  EXPECT_TRUE(contains(e, "run again to resume")) << e;
  ASSERT_EQ(leftovers().size(), 1u);
  EXPECT_EQ(std::filesystem::file_size(leftovers()[0]), 1000u);
  EXPECT_NO_THROW(hub::pull("org/m", o));
}

TEST_F(HubTest, UnwritableCacheIsAClearError) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1);
  std::filesystem::create_directories(dir_);
  std::ofstream(cache_) << "a file where the cache should be";  // root ignores chmod; a file it cannot pass
  const std::string e = pull_error("org/m", options());
  EXPECT_TRUE(contains(e, "cannot create cache directory " + cache_)) << e;
  EXPECT_TRUE(contains(e, "GGUFD_CACHE")) << e;
}

// A full disk: the download runs in a child whose file size limit (RLIMIT_FSIZE) is below the
// file's size, with SIGXFSZ ignored so write() fails with EFBIG as on a full disk.
TEST_F(HubTest, DiskFullIsAClearErrorAndLeavesNothing) {
  start();
  add("org/m", "m-Q4_K_M.gguf", 1, 4096);
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    ::signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{8192, 8192};
    ::setrlimit(RLIMIT_FSIZE, &limit);
    std::string message = "pull succeeded";
    try {
      hub::pull("org/m", options());
    } catch (const std::exception& e) {
      message = e.what();
    }
    (void)!::write(fds[1], message.data(), message.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string message;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) message.append(buf, size_t(n));
  ::close(fds[0]);
  ::waitpid(pid, nullptr, 0);
  EXPECT_TRUE(contains(message, "cannot write")) << message;
  EXPECT_TRUE(contains(message, "disk full")) << message;
  EXPECT_EQ(leftovers(), std::vector<std::string>{});
}

}  // namespace
}  // namespace ggufd::test
