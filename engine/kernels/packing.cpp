#include "engine/kernels/packing.h"

#include <cstring>

namespace engine::kernels {

namespace {

// Packable types: a block is a 2-byte fp16 scale followed by this many bytes of quants.
int quant_bytes(gguf::TensorType type) {
  switch (type) {
    case gguf::TensorType::Q4_0:
    case gguf::TensorType::IQ4_NL: return 16;
    case gguf::TensorType::Q8_0: return 32;
    default: return 0;
  }
}

// The pieces of one packed block (see packing.h): f(row, offset in the row's block, offset in
// the packed block, bytes) for every scale and every 4-byte run of quants.
template <class F>
void for_each_piece(int qbytes, F&& f) {
  for (int r = 0; r < kPackRows; ++r) {
    f(r, 0, 2 * r, 2);
    for (int c = 0; c < qbytes / 4; ++c) f(r, 2 + 4 * c, 2 * kPackRows + 4 * (kPackRows * c + r), 4);
  }
}

}  // namespace

bool packable(gguf::TensorType type) { return quant_bytes(type) != 0; }

bool pack_group(gguf::TensorType type, const uint8_t* w, size_t w_stride, int64_t cols, uint8_t* dst) {
  const int qbytes = quant_bytes(type);
  if (qbytes == 0) return false;
  const size_t block_bytes = static_cast<size_t>(2 + qbytes);
  for (int64_t b = 0; b < cols / kQK; ++b) {
    const uint8_t* src = w + b * block_bytes;
    uint8_t* p = dst + b * kPackRows * block_bytes;
    for_each_piece(qbytes, [&](int r, int off, int poff, int n) { std::memcpy(p + poff, src + r * w_stride + off, n); });
  }
  return true;
}

void unpack_group(gguf::TensorType type, const uint8_t* src, int64_t cols, uint8_t* w, size_t w_stride) {
  const int qbytes = quant_bytes(type);
  const size_t block_bytes = static_cast<size_t>(2 + qbytes);
  for (int64_t b = 0; qbytes && b < cols / kQK; ++b) {
    const uint8_t* p = src + b * kPackRows * block_bytes;
    uint8_t* dst = w + b * block_bytes;
    for_each_piece(qbytes, [&](int r, int off, int poff, int n) { std::memcpy(dst + r * w_stride + off, p + poff, n); });
  }
}

void unpack_row(gguf::TensorType type, const uint8_t* src, int64_t cols, int r, uint8_t* dst) {
  const int qbytes = quant_bytes(type);
  const size_t block_bytes = static_cast<size_t>(2 + qbytes);
  for (int64_t b = 0; qbytes && b < cols / kQK; ++b) {
    const uint8_t* p = src + b * kPackRows * block_bytes;
    uint8_t* out = dst + b * block_bytes;
    for_each_piece(qbytes, [&](int row, int off, int poff, int n) {
      if (row == r) std::memcpy(out + off, p + poff, n);
    });
  }
}

}  // namespace engine::kernels
