// A resumable download into a partial file (see http.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "server/hub/curl_handle.h"
#include "server/hub/http.h"

namespace hub::detail {

namespace {

using Clock = std::chrono::steady_clock;

// One attempt's state, shared with libcurl's write callback.
struct Sink {
  CURL* curl = nullptr;
  int fd = -1;
  uint64_t offset = 0;    // bytes in the file before this attempt
  uint64_t written = 0;   // bytes appended by this attempt
  uint64_t expected = 0;  // 0 = unknown
  long status = 0;
  bool started = false;
  bool too_much = false;
  int write_errno = 0;
  std::string error_body;  // the start of a non-2xx answer
  const std::function<void(uint64_t, uint64_t)>* on_bytes = nullptr;
  Clock::time_point last_report{};
};

bool write_all(int fd, const char* data, size_t len, int& err) {
  while (len > 0) {
    const ssize_t n = ::write(fd, data, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      return false;
    }
    data += n;
    len -= size_t(n);
  }
  return true;
}

// The first bytes of an answer: a 200 to a Range request restarts the file from zero.
void start(Sink& s) {
  s.started = true;
  curl_easy_getinfo(s.curl, CURLINFO_RESPONSE_CODE, &s.status);
  if (s.status == 200 && s.offset > 0) {
    if (::ftruncate(s.fd, 0) != 0 || ::lseek(s.fd, 0, SEEK_SET) != 0) s.write_errno = errno;
    s.offset = 0;
  }
}

size_t on_data(char* data, size_t size, size_t n, void* user) {
  auto& s = *static_cast<Sink*>(user);
  const size_t len = size * n;
  if (!s.started) start(s);
  if (s.write_errno != 0) return 0;
  if (s.status != 200 && s.status != 206) {
    if (s.error_body.size() < 4096) s.error_body.append(data, std::min<size_t>(len, 4096 - s.error_body.size()));
    return len;
  }
  if (s.expected != 0 && s.offset + s.written + len > s.expected) {
    s.too_much = true;
    return 0;
  }
  if (!write_all(s.fd, data, len, s.write_errno)) return 0;
  s.written += len;
  const auto now = Clock::now();
  if (*s.on_bytes && now - s.last_report >= std::chrono::milliseconds(100)) {
    s.last_report = now;
    (*s.on_bytes)(s.offset + s.written, s.expected);
  }
  return len;
}

uint64_t file_size(int fd) {
  struct stat st {};
  return ::fstat(fd, &st) == 0 ? uint64_t(st.st_size) : 0;
}

std::string write_error(const std::string& path, int err) {
  std::string m = "cannot write " + path + ": " + std::strerror(err);
  if (err == ENOSPC || err == EFBIG || err == EDQUOT) m += " (disk full or file size limit)";
  return m;
}

// One GET from the file's current size. Returns true when the transfer completed.
bool attempt(const std::string& url, int fd, const std::string& part, uint64_t expected, const HttpOptions& o,
             const std::string& what, const std::function<void(uint64_t, uint64_t)>& on_bytes, std::string& why) {
  auto h = open_handle(url, o);
  Sink s;
  s.curl = h->curl.get();
  s.fd = fd;
  s.offset = file_size(fd);
  s.expected = expected;
  s.on_bytes = &on_bytes;
  if (expected != 0 && s.offset >= expected) return true;
  if (::lseek(fd, 0, SEEK_END) < 0) throw TransferError{write_error(part, errno), false};
  curl_easy_setopt(s.curl, CURLOPT_RESUME_FROM_LARGE, curl_off_t(s.offset));
  curl_easy_setopt(s.curl, CURLOPT_WRITEFUNCTION, on_data);
  curl_easy_setopt(s.curl, CURLOPT_WRITEDATA, &s);
  const CURLcode rc = curl_easy_perform(s.curl);
  if (s.write_errno != 0) throw TransferError{write_error(part, s.write_errno), false};
  if (s.too_much) {
    throw TransferError{url + " sent more than the " + std::to_string(expected) + " bytes the hub announced", false};
  }
  if (rc == CURLE_ABORTED_BY_CALLBACK) throw TransferError{"cancelled", true};
  if (rc == CURLE_OK && (s.status == 200 || s.status == 206)) return true;
  if (rc == CURLE_OK && s.status == 416) {  // our partial file is longer than the server's: restart
    if (::ftruncate(fd, 0) != 0) throw TransferError{write_error(part, errno), false};
    why = "HTTP 416";
    return false;
  }
  if (rc == CURLE_OK && s.status >= 500) {
    why = "HTTP " + std::to_string(s.status);
    return false;
  }
  if (rc == CURLE_OK) throw TransferError{status_message(s.status, url, what, s.error_body, !o.token.empty()), true};
  if (!transient(rc)) throw TransferError{curl_message(rc, *h, url), true};
  why = curl_message(rc, *h, url);
  return false;
}

void backoff(int attempt_no, const std::atomic<bool>* cancel) {
  const auto until = Clock::now() + std::chrono::milliseconds(std::min(2000, 100 << std::min(attempt_no, 5)));
  while (Clock::now() < until) {
    if (cancel != nullptr && cancel->load()) throw TransferError{"cancelled", true};
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

void download(const std::string& url, const std::string& part_path, uint64_t expected, const HttpOptions& options,
              int retries, const std::string& what, const std::function<void(uint64_t, uint64_t)>& on_bytes) {
  const int fd = ::open(part_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) throw TransferError{"cannot create " + part_path + ": " + std::strerror(errno), false};
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (expected != 0 && file_size(fd) > expected && ::ftruncate(fd, 0) != 0) {
    throw TransferError{write_error(part_path, errno), false};
  }
  std::string why;
  for (int i = 0; i <= retries; ++i) {
    if (i > 0) backoff(i, options.cancel);
    if (attempt(url, fd, part_path, expected, options, what, on_bytes, why)) {
      if (::fsync(fd) != 0) throw TransferError{write_error(part_path, errno), false};
      if (on_bytes) on_bytes(file_size(fd), expected);
      return;
    }
  }
  throw TransferError{"download of " + url + " failed after " + std::to_string(retries + 1) +
                          " attempts; last: " + why + " (run again to resume)",
                      true};
}

}  // namespace hub::detail
