// Interleaved weight layouts: groups of R rows stored block by block, made once at load. R is the
// dispatch table's `pack_rows`: 8 for the 256-bit tables (one row per 32-bit lane of a ymm
// register), 16 for AVX-512 (a zmm register). The layout below is described for R = 8.
//
// In the file, each row's blocks are contiguous, so a kernel computing 8 rows streams 8 rows
// and dots every block separately (unpack, multiply, convert, scale: per row and block). In a
// packed group the 8 rows' block b sit together:
//
//   d[8]      fp16 scales of rows 0..7                                   16 bytes
//   chunk c   4 quant bytes of row 0, of row 1, ..., of row 7            32 bytes each
//
// where chunk c holds bytes qs[4c .. 4c+3] of each row's block (Q4_0: 4 chunks, whose low nibbles
// are elements 4c..4c+3 and high nibbles 16+4c..16+4c+3; Q8_0: 8 chunks of elements 4c..4c+3).
// Q4_K super-blocks pack the same way, field by field: d[8], dmin[8], the 12 scale bytes as
// three 4-byte runs, then 32 runs of qs (run 8i + c: low nibbles are elements 64i + 4c..+3 of
// sub-block 2i, high nibbles 64i + 32 + 4c..+3 of sub-block 2i + 1).
// One 32-byte load then feeds all 8 rows, a broadcast of 4 activation bytes is the other operand,
// and the integer sums land one row per 32-bit lane: no horizontal reductions, one conversion
// and one fma per 8 blocks, and the scales of 8 rows come in with one vcvtph2ps. A group takes
// exactly the bytes of its R rows, so group g starts at byte g * R * row_bytes, as row R * g does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/dispatch.h"

namespace engine::kernels {

inline constexpr int kMaxPackRows = 16;  // the most rows per group any table uses

// W rows [0, R) (row i at w + i * w_stride, `cols` elements of `type`) -> one packed group of R
// rows (R = `rows`, 1..kMaxPackRows) at dst (R * row_bytes bytes). Returns false (writing nothing)
// when `type` has no packed layout.
bool pack_group(gguf::TensorType type, int rows, const uint8_t* w, size_t w_stride, int64_t cols, uint8_t* dst);

// True when pack_group() handles `type`.
bool packable(gguf::TensorType type);

// Packed group of R = `rows` rows -> its rows in file layout (the inverse of pack_group).
void unpack_group(gguf::TensorType type, int rows, const uint8_t* src, int64_t cols, uint8_t* w, size_t w_stride);

// Packed group of R = `rows` rows -> row `r` (0..R-1) of it in file layout at dst (row_bytes
// bytes): embedding lookups in a tied output matrix read the packed copy instead of faulting the
// file's pages back in.
void unpack_row(gguf::TensorType type, int rows, const uint8_t* src, int64_t cols, int r, uint8_t* dst);

}  // namespace engine::kernels
