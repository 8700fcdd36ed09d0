// Running the ggufd binary from tests.
#pragma once

#include <sys/wait.h>

#include <array>
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
  const std::string dir = testing::TempDir();
  const std::string in_path = dir + "/ggufd_in.txt";
  const std::string err_path = dir + "/ggufd_err.txt";
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
  return r;
}

}  // namespace ggufd::test
