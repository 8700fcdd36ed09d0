// Interleaved weight layouts: groups of 8 rows stored block by block, made once at load.
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
// exactly the bytes of its 8 rows, so group g starts at byte g * 8 * row_bytes, as row 8g does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engine/kernels/dispatch.h"

namespace engine::kernels {

inline constexpr int kPackRows = 8;  // rows per packed group

// W rows [0, 8) (row i at w + i * w_stride, `cols` elements of `type`) -> one packed group at
// dst (8 * row_bytes bytes). Returns false (writing nothing) when `type` has no packed layout.
bool pack_group(gguf::TensorType type, const uint8_t* w, size_t w_stride, int64_t cols, uint8_t* dst);

// True when pack_group() handles `type`.
bool packable(gguf::TensorType type);

// Packed group -> its 8 rows in file layout (the inverse of pack_group).
void unpack_group(gguf::TensorType type, const uint8_t* src, int64_t cols, uint8_t* w, size_t w_stride);

// Packed group -> row `r` (0..7) of it in file layout at dst (row_bytes bytes): embedding lookups
// in a tied output matrix read the packed copy instead of faulting the file's pages back in.
void unpack_row(gguf::TensorType type, const uint8_t* src, int64_t cols, int r, uint8_t* dst);

}  // namespace engine::kernels
