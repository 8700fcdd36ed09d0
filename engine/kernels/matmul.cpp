// matmul / dequantize_row entry points: activation quantization, work split, kernel dispatch.
#include "engine/kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/kernels/dispatch.h"
#include "engine/kernels/packing.h"
#include "engine/kernels/thread_pool.h"
#include "engine/kernels/traits.h"

namespace engine {

namespace {

using kernels::ActFormat;

const kernels::KernelTraits& traits_or_throw(const Matrix& w) {
  const kernels::KernelTraits* t = kernels::kernel_traits(w.type);
  if (!t) {
    throw std::invalid_argument("matmul: unsupported tensor type " +
                                std::string(gguf::type_info(w.type).name));
  }
  if (w.cols % t->block_size() != 0) {
    throw std::invalid_argument("matmul: cols not a multiple of the block size");
  }
  return *t;
}

// X row (cols,) f32 -> activation row in `fmt`, with the dispatched quantizer.
void quantize_activations(const kernels::Dispatch& d, ActFormat fmt, const float* x, uint8_t* dst, int64_t cols) {
  if (fmt == ActFormat::kQ8A) {
    d.quantize_q8a(x, reinterpret_cast<kernels::ActQ8A*>(dst), cols);
  } else if (fmt == ActFormat::kQ8K) {
    d.quantize_q8k(x, reinterpret_cast<kernels::ActQ8K*>(dst), cols);
  } else {
    kernels::quantize_act_ref(fmt, x, dst, cols);  // f32 rounded to the weights' 16-bit format
  }
}

// Weight rows per work item: small enough for >= 4 items per thread (load balance), large
// enough that the item's weights (re-read once per activation tile) stay in L1/L2.
// A multiple of 8, so chunks of packed rows are whole groups.
int64_t chunk_rows(int64_t rows, int nth) {
  int64_t c = rows / (4 * static_cast<int64_t>(nth));
  c = std::clamp<int64_t>(c, 8, 64);
  return (c + 7) / 8 * 8;
}

}  // namespace

bool supports(gguf::TensorType type) { return kernels::kernel_traits(type) != nullptr; }

// Row r of W as f32: W[r, :] -> dst (cols,)
void dequantize_row(const Matrix& w, int64_t r, float* dst) {
  const kernels::KernelTraits& t = traits_or_throw(w);
  if (r < w.packed_rows) {  // from the packed copy: the file's pages may have been released
    thread_local std::vector<uint8_t> row;
    row.resize(w.row_bytes);
    const auto* group = static_cast<const uint8_t*>(w.packed) + static_cast<size_t>(r / kernels::kPackRows) * kernels::kPackRows * w.row_bytes;
    kernels::unpack_row(w.type, group, w.cols, static_cast<int>(r % kernels::kPackRows), row.data());
    t.dequant(row.data(), dst, w.cols);
    return;
  }
  t.dequant(static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes, dst, w.cols);
}

// out (n, rows) = X (n, cols) @ W^T
//
// 1. X is converted once to the type's activation format (Q8A / Q8K, or rounded f32; f32 weights use X as is)
//    into a buffer owned by the calling thread that only grows; with several rows the workers
//    quantize a share each, then meet at a barrier.
// 2. Weight rows are cut into chunks handed out by an atomic counter; each chunk is one tile
//    call over all n activation rows, so every weight row is read from memory once.
void matmul(const Matrix& w, const float* x, int64_t n, float* out, ThreadPool& pool) {
  const kernels::KernelTraits& t = traits_or_throw(w);
  if (n <= 0 || w.rows <= 0) return;
  const kernels::Dispatch& d = kernels::dispatch();
  const kernels::TileFn tile = d.tile_for(w.type);
  const kernels::TileFn packed_tile = w.packed ? d.packed_tile_for(w.type) : nullptr;
  const int64_t packed_rows = packed_tile ? w.packed_rows : 0;

  // Activations in the type's format: int8 blocks, or (as ggml does for F16 / BF16 weights, so
  // results agree with llama.cpp's) f32 rounded to the weights' precision; f32 weights use X.
  const bool converted = t.act != ActFormat::kF32;
  const int64_t xq_row = kernels::act_row_bytes(t.act, w.cols);
  thread_local std::vector<uint8_t> xq_buf;
  if (converted) xq_buf.resize(std::max(xq_buf.size(), static_cast<size_t>(xq_row * n)));
  const uint8_t* xq = converted ? xq_buf.data() : reinterpret_cast<const uint8_t*>(x);
  const bool parallel_quant = converted && n >= 2 && pool.size() > 1;
  if (converted && !parallel_quant) {
    for (int64_t j = 0; j < n; ++j) quantize_activations(d, t.act, x + j * w.cols, xq_buf.data() + j * xq_row, w.cols);
  }

  const int64_t chunk = chunk_rows(w.rows, pool.size());
  const int64_t n_chunks = (w.rows + chunk - 1) / chunk;
  std::atomic<int64_t> next{pool.size()};
  uint8_t* xq_mut = xq_buf.data();
  const auto* wdata = static_cast<const uint8_t*>(w.data);
  const auto* wpacked = static_cast<const uint8_t*>(w.packed);

  pool.run([&](int ith, int nth) {
    if (parallel_quant) {
      for (int64_t j = ith; j < n; j += nth) quantize_activations(d, t.act, x + j * w.cols, xq_mut + j * xq_row, w.cols);
      pool.barrier();
    }
    for (int64_t c = ith; c < n_chunks; c = next.fetch_add(1, std::memory_order_relaxed)) {
      int64_t r0 = c * chunk;
      const int64_t r1 = std::min(r0 + chunk, w.rows);
      if (r0 < packed_rows) {  // whole groups: r0 and packed_rows are multiples of 8
        const int64_t rows = std::min(r1, packed_rows) - r0;
        packed_tile({wpacked + static_cast<size_t>(r0) * w.row_bytes, kernels::kPackRows * w.row_bytes, rows,
                     w.cols, xq, static_cast<size_t>(xq_row), n, out + r0, w.rows, &t});
        r0 += rows;
      }
      if (r0 < r1) {
        tile({wdata + static_cast<size_t>(r0) * w.row_bytes, w.row_bytes, r1 - r0, w.cols, xq,
              static_cast<size_t>(xq_row), n, out + r0, w.rows, &t});
      }
    }
  });
}

}  // namespace engine
