// Matrix products over quantized weights: the only entry points the forward pass uses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "gguf/types.h"

namespace engine {

class ThreadPool;

// A weight matrix W (rows, cols), row-major, each row `row_bytes` bytes of `type` blocks.
// A view: `data` points into the mapped model file. Rows [0, packed_rows) may also exist in the
// dispatch table's packed layout (kernels/packing.h: groups of pack_rows rows) at `packed`, owned
// by the model; matmul then reads those instead. Group g starts at packed + g * pack_rows * row_bytes.
// A default-constructed Matrix is empty (data null): a weight the model does not have.
struct Matrix {
  gguf::TensorType type = gguf::TensorType::F32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  const void* data = nullptr;
  const void* packed = nullptr;
  int64_t packed_rows = 0;  // a multiple of pack_rows
  int pack_rows = 0;        // rows per packed group (the dispatch table's pack_rows)
};

// out (n, rows) = X (n, cols) @ W^T, X and out row-major f32.
// Each weight row is read once per call however large n is (prefill and batched decode).
void matmul(const Matrix& w, const float* x, int64_t n, float* out, ThreadPool& pool);

// One product of a group: out (n, w->rows) = x (n, w->cols) @ W^T. Views; the caller owns all.
struct MatmulJob {
  const Matrix* w;
  const float* x;
  int64_t n;
  float* out;
};

// Every job's matmul, as one job of the pool: each distinct activation block (same x, n, cols
// and activation format: an expert's gate and up) is converted once, then the weight-row chunks
// of all jobs are handed out from one counter. A MoE layer's chosen experts (many small
// matrices) then cost one barrier instead of one per matrix, and the threads stay balanced.
// Outputs must not overlap one another or any x.
void matmul_group(std::span<const MatmulJob> jobs, ThreadPool& pool);

// Row r of W as f32: W[r, :] -> dst (cols,). Used for embedding lookups.
void dequantize_row(const Matrix& w, int64_t r, float* dst);

// True when matmul/dequantize_row support `type`.
bool supports(gguf::TensorType type);

}  // namespace engine
