// matmul / dequantize_row entry points: activation quantization, work split, kernel dispatch.
#include "engine/kernels/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdint>
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
  } else if (fmt == ActFormat::kF16Rounded) {  // f32 rounded to the weights' 16-bit format
    d.round_f16(x, reinterpret_cast<float*>(dst), cols);
  } else if (fmt == ActFormat::kBF16Rounded) {
    d.round_bf16(x, reinterpret_cast<float*>(dst), cols);
  } else {
    kernels::quantize_act_ref(fmt, x, dst, cols);
  }
}

// Weight rows per work item of a job: small enough for >= 4 items per thread over the whole
// group (load balance); with several activation rows, also small enough that the item's weights
// (re-read once per activation tile) stay in L1/L2. One activation row reads each weight once, and
// larger items then mean fewer trips of the shared counter's cache line between cores (MoE decode:
// 16 experts x 768 rows; 64-row items spent 2 % of the time in that atomic). Equal items, each a
// multiple of `align` (the packed group's rows), so chunks of packed rows are whole groups.
int64_t chunk_rows(int64_t rows, int64_t group_rows, int64_t n, int nth, int64_t align) {
  const int64_t most = n == 1 ? 512 : 64;
  const int64_t target = std::clamp<int64_t>(group_rows / (4 * static_cast<int64_t>(nth)), align, std::max(most, align));
  const int64_t items = (rows + target - 1) / target;
  return ((rows + items - 1) / items + align - 1) / align * align;
}

}  // namespace

bool supports(gguf::TensorType type) { return kernels::kernel_traits(type) != nullptr; }

// Row r of W as f32: W[r, :] -> dst (cols,)
void dequantize_row(const Matrix& w, int64_t r, float* dst) {
  const kernels::KernelTraits& t = traits_or_throw(w);
  if (r < w.packed_rows) {  // from the packed copy: the file's pages may have been released
    thread_local std::vector<uint8_t> row;
    row.resize(w.row_bytes);
    const int R = w.pack_rows;
    const auto* group = static_cast<const uint8_t*>(w.packed) + static_cast<size_t>(r / R * R) * w.row_bytes;
    kernels::unpack_row(w.type, R, group, w.cols, static_cast<int>(r % R), row.data());
    t.dequant(row.data(), dst, w.cols);
    return;
  }
  t.dequant(static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r) * w.row_bytes, dst, w.cols);
}

namespace {

// One activation block to convert: rows [0, n) of x (n, cols) f32 -> `dst` in `fmt`.
struct ActBlock {
  const float* x;
  int64_t n;
  int64_t cols;
  ActFormat fmt;
  size_t offset;     // in the converted-activation buffer
  size_t row_bytes;
  uint8_t* dst;      // buffer + offset, once the buffer has its size
};

// A job with its kernels and converted activations, and the global index of its first chunk.
struct PreparedJob {
  const Matrix* w;
  const kernels::KernelTraits* t;
  kernels::TileFn tile;
  kernels::TileFn packed_tile;
  int64_t packed_rows;
  const uint8_t* xq;
  size_t xq_row;
  int64_t n;
  float* out;
  int64_t chunk;        // weight rows per chunk
  int64_t first_chunk;  // chunks of earlier jobs
};

// W rows [r0, r1) of one job against all its activation rows: one tile call (two where the
// range straddles the end of the packed rows), so each weight row is read once.
void run_chunk(const PreparedJob& j, int64_t r0, int64_t r1) {
  const Matrix& w = *j.w;
  if (r0 < j.packed_rows) {  // whole groups: r0 and packed_rows are multiples of pack_rows
    const int64_t rows = std::min(r1, j.packed_rows) - r0;
    j.packed_tile({static_cast<const uint8_t*>(w.packed) + static_cast<size_t>(r0) * w.row_bytes,
                   static_cast<size_t>(w.pack_rows) * w.row_bytes, rows, w.cols, j.xq, j.xq_row, j.n, j.out + r0, w.rows, j.t});
    r0 += rows;
  }
  if (r0 < r1) {
    j.tile({static_cast<const uint8_t*>(w.data) + static_cast<size_t>(r0) * w.row_bytes, w.row_bytes, r1 - r0,
            w.cols, j.xq, j.xq_row, j.n, j.out + r0, w.rows, j.t});
  }
}

// One matmul_group call, planned: the activation blocks to convert and where they go, and each
// job's kernels and chunks. Kept per calling thread (its buffers only grow); during the pool's
// job the workers read it (convert, run), the calling thread having written it before.
struct GroupPlan {
  std::vector<ActBlock> blocks;       // distinct activation blocks to convert
  std::vector<size_t> offsets;        // per job: its activations in xq, or SIZE_MAX (x itself)
  std::vector<uint8_t> xq;            // the converted activations
  std::vector<PreparedJob> prepared;  // the jobs with work, in order
  int64_t act_rows = 0;               // rows to convert, over all blocks
  int64_t n_chunks = 0;               // chunks over all jobs

  // Blocks and offsets: a job whose x, n, cols and activation format match an earlier job's
  // (an expert's gate and up) shares its converted rows.
  void plan_activations(std::span<const MatmulJob> jobs) {
    blocks.clear();
    offsets.clear();
    act_rows = 0;
    size_t bytes = 0;
    for (const MatmulJob& job : jobs) {
      const kernels::KernelTraits& t = traits_or_throw(*job.w);
      offsets.push_back(SIZE_MAX);
      if (job.n <= 0 || job.w->rows <= 0 || t.act == ActFormat::kF32) continue;
      const auto same = [&](const ActBlock& b) { return b.x == job.x && b.n == job.n && b.cols == job.w->cols && b.fmt == t.act; };
      if (const auto it = std::find_if(blocks.begin(), blocks.end(), same); it != blocks.end()) {
        offsets.back() = it->offset;
        continue;
      }
      const auto row_bytes = static_cast<size_t>(kernels::act_row_bytes(t.act, job.w->cols));
      blocks.push_back({job.x, job.n, job.w->cols, t.act, bytes, row_bytes, nullptr});
      offsets.back() = bytes;
      bytes += row_bytes * static_cast<size_t>(job.n);
      act_rows += job.n;
    }
    xq.resize(std::max(xq.size(), bytes));
    for (ActBlock& b : blocks) b.dst = xq.data() + b.offset;
  }

  // `prepared` and n_chunks, after plan_activations.
  void prepare(std::span<const MatmulJob> jobs, const kernels::Dispatch& d, int nth) {
    prepared.clear();
    n_chunks = 0;
    int64_t group_rows = 0;
    for (const MatmulJob& job : jobs) group_rows += job.n > 0 ? std::max<int64_t>(job.w->rows, 0) : 0;
    for (size_t i = 0; i < jobs.size(); ++i) {
      const MatmulJob& job = jobs[i];
      if (job.n <= 0 || job.w->rows <= 0) continue;
      const kernels::KernelTraits& t = *kernels::kernel_traits(job.w->type);
      const bool packed = job.w->packed != nullptr && job.w->pack_rows == d.pack_rows;
      const kernels::TileFn packed_tile = packed ? d.packed_tile_for(job.w->type) : nullptr;
      const int64_t chunk = chunk_rows(job.w->rows, group_rows, job.n, nth, packed_tile ? d.pack_rows : 8);
      prepared.push_back({job.w, &t, d.tile_for(job.w->type), packed_tile, packed_tile ? job.w->packed_rows : 0,
                          offsets[i] != SIZE_MAX ? xq.data() + offsets[i] : reinterpret_cast<const uint8_t*>(job.x),
                          static_cast<size_t>(kernels::act_row_bytes(t.act, job.w->cols)), job.n, job.out, chunk,
                          n_chunks});
      n_chunks += (job.w->rows + chunk - 1) / chunk;
    }
  }

  // Converts row g of all the blocks' rows (block by block).
  void convert(const kernels::Dispatch& d, int64_t g) const {
    for (const ActBlock& b : blocks) {
      if (g < b.n) return quantize_activations(d, b.fmt, b.x + g * b.cols, b.dst + static_cast<size_t>(g) * b.row_bytes, b.cols);
      g -= b.n;
    }
  }

  // Global chunk c: of the last job whose first chunk is <= c.
  void run(int64_t c) const {
    const auto it = std::upper_bound(prepared.begin(), prepared.end(), c,
                                     [](int64_t v, const PreparedJob& j) { return v < j.first_chunk; });
    const PreparedJob& j = *(it - 1);
    const int64_t r0 = (c - j.first_chunk) * j.chunk;
    run_chunk(j, r0, std::min(r0 + j.chunk, j.w->rows));
  }
};

}  // namespace

// out (n, rows) = X (n, cols) @ W^T, for each job
//
// 1. Each distinct X is converted once to its type's activation format (Q8A / Q8K, or, as ggml
//    does for F16 / BF16 weights, f32 rounded to their precision; f32 weights use X as is); with
//    several rows the workers convert a share each, then meet at a barrier.
// 2. The weight rows of every job are cut into chunks handed out by one atomic counter; each
//    chunk is one tile call over all the job's n activation rows, so every weight row is read
//    from memory once.
void matmul_group(std::span<const MatmulJob> jobs, ThreadPool& pool) {
  const kernels::Dispatch& d = kernels::dispatch();
  // The workers read the plan through this reference: a thread_local named inside the job would
  // be each worker's own, empty instance.
  thread_local GroupPlan plan_of_this_thread;
  GroupPlan& plan = plan_of_this_thread;
  plan.plan_activations(jobs);
  plan.prepare(jobs, d, pool.size());
  if (plan.n_chunks == 0) return;
  const bool parallel_convert = plan.act_rows >= 2 && pool.size() > 1;
  if (!parallel_convert) {
    for (int64_t g = 0; g < plan.act_rows; ++g) plan.convert(d, g);
  }
  std::atomic<int64_t> next{pool.size()};
  pool.run([&](int ith, int nth) {
    if (parallel_convert) {
      for (int64_t g = ith; g < plan.act_rows; g += nth) plan.convert(d, g);
      pool.barrier();
    }
    for (int64_t c = ith; c < plan.n_chunks; c = next.fetch_add(1, std::memory_order_relaxed)) plan.run(c);
  });
}

void matmul(const Matrix& w, const float* x, int64_t n, float* out, ThreadPool& pool) {
  const MatmulJob job{&w, x, n, out};
  matmul_group({&job, 1}, pool);
}

}  // namespace engine
