// SHA-256 (FIPS 180-4) of bytes or a file, as lowercase hex: the tests check that reference models
// rebuilt by `ggufd synth` are the files the llama.cpp references were made from
// (tests/data/reference/README.md). Small, not fast; sha256.cpp is compiled at -O2 in every build.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ggufd::test {

// The SHA-256 of `bytes` as 64 lowercase hex digits.
std::string sha256_hex(const std::vector<uint8_t>& bytes);

// The SHA-256 of the file at `path`; throws std::runtime_error when it cannot be read.
std::string sha256_file(const std::string& path);

}  // namespace ggufd::test
