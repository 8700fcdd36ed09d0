// Running the ggufd binary from tests.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <string>

namespace ggufd::test {

struct RunResult {
  int status = -1;      // exit status
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs `ggufd <args>` through the shell with `input` on stdin; args are passed verbatim.
inline RunResult run_ggufd(const std::string& args, const std::string& input = "") {
  // Names unique per process and call: ctest runs test processes in parallel in one TempDir.
  static std::atomic<int> calls{0};
  const std::string stem = testing::TempDir() + "/ggufd_" + std::to_string(::getpid()) + "_" + std::to_string(calls++);
  const std::string in_path = stem + "_in.txt";
  const std::string err_path = stem + "_err.txt";
  if (FILE* f = std::fopen(in_path.c_str(), "wb")) {
    std::fwrite(input.data(), 1, input.size(), f);
    std::fclose(f);
  }
  const std::string cmd = std::string(GGUFD_BINARY) + " " + args + " <" + in_path + " 2>" + err_path;
  RunResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = std::fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  if (FILE* f = std::fopen(err_path.c_str(), "rb")) {
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) r.err.append(buf.data(), n);
    std::fclose(f);
  }
  std::remove(in_path.c_str());
  std::remove(err_path.c_str());
  return r;
}

}  // namespace ggufd::test
